"""The README stays true: its command blocks run in a clean checkout and print what it shows.

Blocks marked ``<!-- live -->`` call a model and run in tests/test_readme_live.py; blocks marked
``<!-- gpu -->`` need GPUs and downloaded weights, so only their commands and options are checked.
Shown output may use `…` for text that changes between runs (timings, paths of a clone).
"""

from __future__ import annotations

import subprocess

import pytest
import typer.main

from tests.readme import (
    ROOT,
    blocks,
    fresh_checkout,
    has_git,
    missing_lines,
    module_table,
    package_parts,
    run_step,
    shell_env,
    words,
)
from vcrime_audit.cli import app


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    root = tmp_path_factory.mktemp("readme")
    clone = fresh_checkout(root / "clone")
    return clone, shell_env(clone, root / "bin")


def test_the_readme_has_run_live_and_gpu_blocks():
    found = blocks()
    assert found[0].mark == "live" and "vcrime-audit run" in found[0].steps[0].command
    assert {b.mark for b in found} == {"", "live", "gpu"}
    assert all(b.steps for b in found), [b.line for b in found if not b.steps]


def test_every_non_live_block_runs_and_prints_what_the_readme_shows(checkout):
    clone, env = checkout
    problems = []
    for block in (b for b in blocks() if b.mark == ""):
        for step in block.steps:
            done = run_step(step.command, clone, env)
            output = done.stdout + done.stderr
            if done.returncode != 0:
                problems.append(f"README.md:{block.line}: `{step.command}` exited {done.returncode}:\n"
                                f"{output[-2000:]}")
                continue
            missing = missing_lines(step.shown, output)
            if missing:
                problems.append(f"README.md:{block.line}: `{step.command}` did not print, in order:\n  "
                                + "\n  ".join(missing) + f"\nit printed:\n{output[-3000:]}")
    assert not problems, "\n\n".join(problems)
    if has_git():
        status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True,
                                text=True, check=True).stdout
        assert status == "", f"the README's commands changed tracked files:\n{status}"


def _command(path: list[str]) -> typer.main.click.Command:
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return command


def test_every_option_the_readme_names_exists():
    problems = []
    for block in blocks():
        for step in block.steps:
            for part in " ".join(words(step.command)).split("&&"):
                argv = part.split()
                tool = next((i for i, w in enumerate(argv) if w.endswith("vcrime-audit")), None)
                if tool is None:
                    continue
                args, path = argv[tool + 1:], []
                group = typer.main.get_command(app)
                while args and hasattr(group, "commands") and args[0] in group.commands:
                    path.append(args.pop(0))
                    group = group.commands[path[-1]]
                if not path and hasattr(group, "commands"):
                    problems.append(f"README.md:{block.line}: unknown command in `{part.strip()}`")
                    continue
                known = {o for p in _command(path).params for o in (*p.opts, *p.secondary_opts)}
                problems += [f"README.md:{block.line}: `vcrime-audit {' '.join(path)}` has no option {w}"
                             for w in (a.split("=")[0] for a in args if a.startswith("--"))
                             if w not in known]
    assert not problems, "\n".join(problems)


def test_the_module_table_names_every_part_of_the_package_and_nothing_else():
    listed = module_table()
    assert [p for p in listed if not (ROOT / p).exists()] == []
    assert [p for p in package_parts() if p not in listed] == []
