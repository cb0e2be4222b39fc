"""The README as data: its command blocks, the lines it shows, its module table, and a clean
checkout to run them in (used by tests/test_readme.py and tests/test_readme_live.py)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"^<!--\s*(live|gpu)\b.*-->\s*$")
ELLIPSIS = "…"


@dataclass
class Step:
    """One command of a block and the output lines the README shows under it."""

    command: str
    shown: list[str] = field(default_factory=list)


@dataclass
class Block:
    kind: str  # bash | console
    mark: str  # "" (run by the README test) | live (run by the live test) | gpu (options checked)
    line: int  # 1-based line of the opening fence
    steps: list[Step]


def _steps(kind: str, body: list[str]) -> list[Step]:
    if kind == "bash":
        joined = "\n".join(body).replace("\\\n", " ")
        return [Step(c.strip()) for c in joined.splitlines() if c.strip() and not c.lstrip().startswith("#")]
    steps: list[Step] = []
    for text in body:
        if text.startswith("$ "):
            steps.append(Step(text[2:].strip()))
        elif steps:
            steps[-1].shown.append(text.rstrip())
    return steps


def blocks(text: str | None = None) -> list[Block]:
    """The README's ```bash and ```console blocks, each with the marker on the line before it."""
    lines = (text if text is not None else README.read_text(encoding="utf-8")).splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        kind = opening.group(1)
        if kind in ("bash", "console"):
            before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            mark = MARK.match(before)
            found.append(Block(kind, mark.group(1) if mark else "", i + 1, _steps(kind, lines[i + 1:end])))
        i = end + 1
    return found


def words(command: str) -> list[str]:
    """A command line as the shell splits it, comments dropped."""
    return shlex.split(command, comments=True)


def matches(shown: str, line: str) -> bool:
    """A shown line matches an output line exactly, `…` standing for any text."""
    pattern = ".*".join(re.escape(part) for part in shown.split(ELLIPSIS))
    return re.fullmatch(pattern, line.rstrip()) is not None


def missing_lines(shown: list[str], output: str) -> list[str]:
    """The shown lines not found, in order, among the output's lines (a lone `…` skips lines)."""
    out = output.splitlines()
    position, missing = 0, []
    for expected in shown:
        if expected.strip() == ELLIPSIS:
            continue
        for k in range(position, len(out)):
            if matches(expected, out[k]):
                position = k + 1
                break
        else:
            missing.append(expected)
    return missing


def module_table(text: str | None = None) -> list[str]:
    """The paths the README's module table names (first column), relative to the repository."""
    lines = (text if text is not None else README.read_text(encoding="utf-8")).splitlines()
    start = lines.index("| module | job |")
    named: list[str] = []
    for row in lines[start + 2:]:
        if not row.startswith("|"):
            break
        first = row.split("|")[1]
        ticks = re.findall(r"`([^`]+)`", first)
        base = "vcrime_audit/"
        for t in ticks:
            if t.startswith("vcrime_audit/"):
                base = t.rsplit("/", 1)[0] + "/" if not t.endswith("/") else "vcrime_audit/"
                named.append(t)
            else:
                named.append(base + t)
    return named


def package_parts() -> list[str]:
    """Every module and folder directly under vcrime_audit/, as the table should name them."""
    parts = []
    for p in sorted((ROOT / "vcrime_audit").iterdir()):
        if p.name.startswith(("_", ".")):
            continue
        if p.is_dir():
            parts.append(f"vcrime_audit/{p.name}/")
        elif p.suffix == ".py":
            parts.append(f"vcrime_audit/{p.name}")
    return parts


def has_git() -> bool:
    return shutil.which("git") is not None and subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--is-inside-work-tree"], capture_output=True).returncode == 0


GIT = ["git", "-c", "user.name=readme-test", "-c", "user.email=readme-test@localhost",
       "-c", "commit.gpgsign=false"]


def fresh_checkout(dest: Path) -> Path:
    """A clean checkout of this working tree at ``dest``: `git clone`, then the working tree's
    uncommitted changes committed on top, so `git status` starts empty. Without git: a copy of
    the tracked files."""
    if has_git():
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(dest)], check=True)
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, check=True).stdout
        wanted = {Path(p.decode()) for p in listed.split(b"\0") if p}
        for rel in wanted:
            source, target = ROOT / rel, dest / rel
            if source.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
            elif target.exists() and not source.exists():
                target.unlink()
        subprocess.run([*GIT, "-C", str(dest), "add", "-A"], check=True)
        subprocess.run([*GIT, "-C", str(dest), "commit", "-q", "--allow-empty", "-m", "working tree"],
                       check=True)
        return dest
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(".venv", "runs", "__pycache__", ".git",
                                                              ".pytest_cache", ".ruff_cache"))
    return dest


def shell_env(checkout: Path, bin_dir: Path) -> dict[str, str]:
    """An environment where `vcrime-audit` (and `.venv/bin/vcrime-audit` below ``checkout``) run
    the checkout's code with this Python."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "vcrime-audit"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m vcrime_audit.cli "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VCRIME_")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]),
               PYTHON=sys.executable, COLUMNS="80", TERM="dumb")
    return env


def run_step(command: str, checkout: Path, env: dict[str, str],
             timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=timeout)
