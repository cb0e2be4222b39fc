"""Mutate scenario files, stores and cassettes and run every command that reads them (and, on
its own copy of each mutated store, the commands that write one: replay, verify --repair).

    python benchmarks/fuzz_inputs.py            # >= 300 scenarios, >= 100 stores, >= 500 cassettes
    python benchmarks/fuzz_inputs.py --quick    # a few of each (the test runs this)

Each command runs in its own process, two at a time: by default a child forked from a parent
that imported the CLI once (benchmarks/fuzz_worker.py; starting Python and the CLI anew costs
more than most commands), capped at 60 s of CPU time, or 600 s of wall-clock time for a wait that
uses no CPU (so a shared, overloaded machine does not turn slow commands into "hangs"); with
``--spawn`` as ``python -m vcrime_audit.cli ...`` capped at 60 s of wall-clock time.
Printed per part (options, scenarios, stores, cassettes):

- runs: command invocations made;
- tracebacks: invocations whose output holds "Traceback (most recent call last)";
- hangs: invocations stopped at a cap;
- exit codes: how many invocations ended with each code;
- created: read commands (runs, show, scenarios show/validate) after which the folder of their
  input held a file that was not there before;
- for cassettes whose content was edited (a changed value, swapped/duplicated/dropped lines, a
  removed summary), and for another run's cassette at a run's place (``run`` of that run, a field
  of the recorded config changed): how many were reported as different, unverified or not this
  run's (exit != 0 with a message) vs silently "identical" (exit 0), per edited field.

The mutations are drawn from a seeded generator (``--seed``), so a run is repeatable.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CAP_S = 60
RUN_CASSETTE = ROOT / "cassettes" / "robotics_company__data_theft-s0-e3005c10.jsonl.gz"
STUDY_CASSETTES = sorted((ROOT / "cassettes" / "study-demo").glob("*.jsonl.gz"))
READ_COMMANDS = ("runs", "show", "scenarios-show", "scenarios-validate")


@dataclass
class Case:
    part: str
    kind: str
    command: list[str]
    watch: Path | None = None  # folder that a read command must leave unchanged
    content_edit: bool = False
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Result:
    case: Case
    rc: int | None
    traceback: bool
    created: bool
    stdout: str
    stderr: str


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "vcrime_audit.cli", *args]


def listing(folder: Path | None) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder else set()


ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


class Forker:
    """One fuzz_worker.py parent per thread; each command is a child it forks."""

    def __init__(self) -> None:
        import threading

        self.local = threading.local()

    def __call__(self, case: Case) -> tuple[int | None, str, str]:
        worker = getattr(self.local, "worker", None)
        if worker is None:
            worker = self.local.worker = subprocess.Popen(
                [sys.executable, str(ROOT / "benchmarks" / "fuzz_worker.py")], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
        request = {"args": case.command[3:], "cwd": str(case.watch or ROOT), "cap": CAP_S}
        worker.stdin.write(json.dumps(request) + "\n")
        worker.stdin.flush()
        answer = json.loads(worker.stdout.readline())
        return answer["rc"], answer["out"], answer["err"]


def spawn(case: Case) -> tuple[int | None, str, str]:
    try:
        done = subprocess.run(case.command, capture_output=True, text=True, timeout=CAP_S, env=ENV,
                              cwd=case.watch or ROOT, errors="replace")
        return done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired:
        return None, "", ""


def run_case(case: Case, runner: Callable[[Case], tuple[int | None, str, str]] = spawn) -> Result:
    before = listing(case.watch)
    rc, out, err = runner(case)
    created = case.watch is not None and case.kind.split(":")[0] in READ_COMMANDS and \
        bool(listing(case.watch) - before)
    return Result(case, rc, "Traceback (most recent call last)" in out + err, created, out, err)


# --- scenarios -------------------------------------------------------------------------------

def _yaml_mutations(text: str, rng: random.Random) -> list[tuple[str, bytes]]:
    lines = text.splitlines(keepends=True)
    data = text.encode()
    keyed = [i for i, ln in enumerate(lines) if ":" in ln and not ln.lstrip().startswith("#")]
    i = rng.choice(keyed) if keyed else 0
    j = rng.randrange(len(data)) if data else 0
    out = [
        ("byte_flip", data[:j] + bytes([data[j] ^ (1 << rng.randrange(8))]) + data[j + 1:]
         if data else b"\xff"),
        ("truncate", data[:rng.randrange(len(data) + 1)]),
        ("non_utf8", data[:j] + b"\xff\xfe\xc3(" + data[j:]),
        ("delete_key", "".join(lines[:i] + lines[i + 1:]).encode()),
        ("duplicate_key", "".join(lines[:i + 1] + [lines[i]] + lines[i + 1:]).encode()),
        ("type_change", "".join(lines[:i] + [lines[i].split(":")[0] + ": [1, {a: 2}]\n"]
                                + lines[i + 1:]).encode()),
        ("number_for_text", "".join(lines[:i] + [lines[i].split(":")[0] + ": 1" + "0" * 30 + "\n"]
                                    + lines[i + 1:]).encode()),
        ("deep_nesting", (text + "\nextra: " + "[" * 3000 + "]" * 3000 + "\n").encode()),
        ("deep_block", (text + "\nextra:\n" + "".join("  " * d + f"k{d}:\n" for d in range(400))
                        + "  " * 400 + "v\n").encode()),
        ("set_tag", (text + "\nextra: !!set {a, b}\n").encode()),
        ("python_tag", (text + "\nextra: !!python/object/apply:os.system ['true']\n").encode()),
        ("timestamp", "".join(lines[:i] + [lines[i].split(":")[0] + ": 2024-01-01\n"]
                              + lines[i + 1:]).encode()),
        ("alias_bomb", (text + "\na: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n").encode()),
        ("empty", b""),
        ("garbage", bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))),
        ("top_level_list", b"- 1\n- 2\n"),
        ("tab_indent", text.replace("  ", "\t", 3).encode()),
    ]
    return out


def scenario_cases(work: Path, n: int, rng: random.Random) -> list[Case]:
    source = ROOT / "scenarios"
    files = sorted(source.glob("*/*.yaml"))
    cases: list[Case] = []
    k = 0
    while k < n:
        path = rng.choice(files)
        for kind, content in _yaml_mutations(path.read_text(encoding="utf-8"), rng):
            if k >= n:
                break
            root = work / "scenarios" / f"s{k}"
            k += 1
            for folder in ("maps", "goals", "tasks"):
                (root / folder).mkdir(parents=True)
                for f in (source / folder).glob("*.yaml"):
                    if f != path:
                        (root / folder / f.name).symlink_to(f)
            target = root / path.parent.name / path.name
            target.write_bytes(content)
            task = _task_for(path, source)
            cases.append(Case("scenarios", f"scenarios-show:{kind}",
                              cli("scenarios", "show", task, "--root", str(root)), watch=root))
            if k % 10 == 1:  # validate reads the whole tree (slow); show reads what `run` reads
                cases.append(Case("scenarios", f"scenarios-validate:{kind}",
                                  cli("scenarios", "validate", "--root", str(root)), watch=root))
    root = work / "scenarios" / "loop"
    for folder in ("maps", "goals", "tasks"):
        shutil.copytree(source / folder, root / folder)
    (root / "tasks" / "loop_a.yaml").symlink_to(root / "tasks" / "loop_b.yaml")
    (root / "tasks" / "loop_b.yaml").symlink_to(root / "tasks" / "loop_a.yaml")
    cases.append(Case("scenarios", "scenarios-validate:symlink_loop",
                      cli("scenarios", "validate", "--root", str(root)), watch=root))
    cases.append(Case("scenarios", "scenarios-show:symlink_loop",
                      cli("scenarios", "show", "loop_a", "--root", str(root)), watch=root))
    return cases


def _task_for(path: Path, source: Path) -> str:
    if path.parent.name == "tasks":
        return path.stem
    key = f"map: {path.stem}" if path.parent.name == "maps" else f"goal: {path.stem}"
    for task in sorted((source / "tasks").glob("*.yaml")):
        if key in task.read_text(encoding="utf-8"):
            return task.stem
    return "robotics_company__data_theft"


def option_cases(work: Path) -> list[Case]:
    """Bad command-line options: each must end in one line and exit 2, calling no model."""
    db = str(work / "opts" / "s.sqlite")
    study = work / "opts" / "study.yaml"
    study.parent.mkdir(parents=True, exist_ok=True)
    study.write_text((ROOT / "studies" / "demo.yaml").read_text(encoding="utf-8"))
    bad = {
        "seed_65_bits": ["run", "--seed", str(2**64), "--db", db],
        "seed_negative": ["run", "--seed", "-1", "--db", db],
        "max_turns_0": ["run", "--max-turns", "0", "--db", db],
        "max_turns_negative": ["run", "--max-turns", "-5", "--db", db],
        "task_escape": ["run", "--task", "../../scenarios/tasks/robotics_company__theft", "--db", db],
        "task_300_chars": ["run", "--task", "t" * 300, "--db", db],
        "record_mode": ["run", "--record-mode", "sometimes", "--db", db],
        "study_missing": ["study", str(work / "opts" / "absent.yaml")],
        "shard_5_of_4": ["study", str(study), "--shard", "5/4", "--db", db],
        "shard_x": ["study", str(study), "--shard", "x", "--db", db],
        "concurrency_0": ["study", str(study), "--concurrency", "0", "--db", db],
        "merge_missing": ["merge", str(work / "opts" / "out.sqlite"), str(work / "opts" / "none.sqlite")],
        "runs_missing": ["runs", "--db", str(work / "opts" / "no" / "such.sqlite")],
        "show_missing": ["show", "x", "--db", str(work / "opts" / "no" / "such.sqlite")],
    }
    return [Case("options", f"option:{k}", cli(*v)) for k, v in bad.items()]


# --- stores ----------------------------------------------------------------------------------

def base_store(work: Path) -> tuple[Path, str]:
    path = work / "base.sqlite"
    done = subprocess.run(cli("replay", str(RUN_CASSETTE), "--db", str(path)), capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"could not make the base store: {done.stderr}")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode=DELETE")
    run_id = conn.execute("SELECT run_id FROM runs").fetchone()[0]
    conn.close()
    return path, run_id


def _sql_mutations(conn: sqlite3.Connection, rng: random.Random) -> list[tuple[str, Callable[[], Any]]]:
    tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    out: list[tuple[str, Callable[[], Any]]] = []
    for t in tables:
        out.append((f"drop_table_{t}", lambda t=t: conn.execute(f"DROP TABLE [{t}]")))
    for t in ("runs", "turns", "calls", "judgments", "patches", "harm", "models", "meta"):
        for (_, col, *_rest) in conn.execute(f"PRAGMA table_info([{t}])").fetchall():
            out.append((f"drop_column_{t}.{col}",
                        lambda t=t, c=col: conn.execute(f"ALTER TABLE [{t}] DROP COLUMN [{c}]")))
    edits = {
        "turns_targets_not_json": "UPDATE turns SET targets = 'not json'",
        "judgments_distribution_garbage": "UPDATE judgments SET distribution = '{{{'",
        "runs_turns_text": "UPDATE runs SET turns = 'many'",
        "runs_status_null": "UPDATE runs SET status = NULL",
        "turns_draw_text": "UPDATE turns SET draw = 'x'",
        "newer_migration": "INSERT INTO _migrations (name) VALUES ('m999_from_the_future')",
        "escape_sequences": "UPDATE turns SET description = char(27) || '[2J' || char(27) || "
                            "']0;pwned' || char(7) || description",
        "runs_reason_escape": "UPDATE runs SET reason = char(27) || '[31mred' || char(13) || 'x'",
        "runs_empty": "DELETE FROM runs",
        "migrations_empty": "DELETE FROM _migrations",
    }
    out += [(k, lambda v=v: conn.execute(v)) for k, v in edits.items()]
    rng.shuffle(out)
    return out


def store_cases(work: Path, n: int, rng: random.Random, quick: bool = False) -> list[Case]:
    base, run_id = base_store(work)
    data = base.read_bytes()
    cases: list[Case] = []
    k = 0

    def add(kind: str, make: Callable[[Path], None]) -> None:
        nonlocal k
        folder = work / "stores" / f"d{k}"
        k += 1
        folder.mkdir(parents=True)
        path = folder / "s.sqlite"
        make(path)
        commands = (("runs", ["runs", "--db", str(path)]),
                    ("show", ["show", run_id, "--db", str(path)]),
                    ("audit", ["audit", "--db", str(path), "--out", str(work / "reports" / f"r{k}"),
                               "--resamples", "20"]),
                    ("merge", ["merge", str(work / "merged" / f"m{k}.sqlite"), str(path)]))
        for command, args in commands[:2] if quick else commands:
            cases.append(Case("stores", f"{command}:{kind}", cli(*args), watch=folder))
        written = folder.with_name(f"{folder.name}-written")  # its own copy: reads above run beside it
        shutil.copytree(folder, written)
        into = written / "s.sqlite"
        writers = (("replay", ["replay", str(RUN_CASSETTE), "--db", str(into)]),
                   ("verify", ["verify", "--db", str(into), "--repair", str(RUN_CASSETTE.parent)]))
        for command, args in writers[:1] if quick else writers:
            cases.append(Case("stores", f"{command}:{kind}", cli(*args)))

    shutil.copy(base, work / "probe.sqlite")
    probe = sqlite3.connect(work / "probe.sqlite")
    named = [name for name, _ in _sql_mutations(probe, rng)]
    probe.close()
    must = ["drop_table_turns", "drop_column_runs.status", "newer_migration", "escape_sequences"]
    named = must + [m for m in named if m not in must][:max(0, int(n * 0.6) - len(must))]
    named = named[:2] if quick else named
    for name in named:
        def make(path: Path, name: str = name) -> None:
            shutil.copy(base, path)
            conn = sqlite3.connect(path)
            try:
                dict(_sql_mutations(conn, random.Random(0)))[name]()
                conn.commit()
            except sqlite3.DatabaseError:
                pass
            conn.close()
        add(f"sql:{name.split('.')[0] if name.startswith('drop_column') else name}", make)
    raw = {
        "empty_file": lambda p: p.write_bytes(b""),
        "text_file": lambda p: p.write_text("not a store\n"),
        "folder": lambda p: p.mkdir(),
        "missing": lambda p: None,
    }
    for kind, make in list(raw.items())[::2 if quick else 1]:
        add(kind, make)
    for extra in range(2 if quick else max(3, n - k)):
        choice = extra % 3
        if choice == 0:
            offsets = [rng.randrange(len(data)) for _ in range(rng.randint(1, 8))]
            mutated = bytearray(data)
            for o in offsets:
                mutated[o] ^= 1 << rng.randrange(8)
            add("byte_flip", lambda p, m=bytes(mutated): p.write_bytes(m))
        elif choice == 1:
            add("truncate", lambda p, m=data[:rng.randrange(len(data))]: p.write_bytes(m))
        else:
            add("garbage", lambda p, m=bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9000))):
                p.write_bytes(m))
    return cases


# --- cassettes -------------------------------------------------------------------------------

def _lines(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for r in records:
            handle.write(json.dumps(r, separators=(",", ":")) + "\n")


def _edit_value(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice((1, -1, 7))
    if isinstance(value, float):
        return value + 0.25
    if isinstance(value, str):
        return value[:-1] if len(value) > 1 and rng.random() < 0.5 else value + " x"
    if isinstance(value, list):
        return value[:-1] if value else [1]
    if isinstance(value, dict):
        return {**value, "edited": True}
    return "edited"


CALL_FIELDS = (("result", "text"), ("result", "finish_reason"), ("result", "usage", "prompt_tokens"),
               ("result", "usage", "completion_tokens"), ("result", "seconds"), ("parsed",),
               ("request", "messages"), ("request", "sampling", "seed"), ("fingerprint",), ("key",))


def _set_path(record: dict[str, Any], path: tuple[str, ...], rng: random.Random) -> bool:
    node = record
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            return False
        node = node[part]
    if path[-1] not in node:
        return False
    if path[-1] == "finish_reason":
        node[path[-1]] = "length" if node[path[-1]] != "length" else "stop"
    else:
        node[path[-1]] = _edit_value(node[path[-1]], rng)
    return True


def cassette_cases(work: Path, n: int, rng: random.Random) -> list[Case]:
    sources = [RUN_CASSETTE, *STUDY_CASSETTES]
    cases: list[Case] = []
    k = 0

    def add(kind: str, source: Path, write: Callable[[Path], None], content_edit: bool) -> None:
        nonlocal k
        folder = work / "cassettes" / f"c{k}"
        k += 1
        folder.mkdir(parents=True)
        path = folder / source.name
        write(path)
        cases.append(Case("cassettes", f"replay:{kind}", cli("replay", str(path), "--db",
                                                             str(folder / "replayed.sqlite")),
                          content_edit=content_edit))

    while len(cases) < n:
        source = rng.choice(sources)
        records = _lines(source)
        raw = source.read_bytes()
        calls = [i for i, r in enumerate(records) if r.get("type") == "call"]
        for fields in CALL_FIELDS:
            recs = json.loads(json.dumps(records))
            if _set_path(recs[rng.choice(calls)], fields, rng):
                add("edit:" + ".".join(fields), source, lambda p, r=recs: _write(p, r), True)
        summary = [i for i, r in enumerate(records) if r.get("type") == "summary"]
        if summary:
            recs = [r for i, r in enumerate(records) if i not in summary]
            add("summary_removed", source, lambda p, r=recs: _write(p, r), True)
            recs = json.loads(json.dumps(records))
            recs[summary[0]]["turn_rows_hash"] = "0" * 32
            add("edit:summary.turn_rows_hash", source, lambda p, r=recs: _write(p, r), True)
        for kind in ("swap", "duplicate", "drop"):
            recs = list(records)
            i = rng.choice(calls)
            if kind == "swap":
                j = rng.choice(calls)
                recs[i], recs[j] = recs[j], recs[i]
                if i == j:
                    continue
            elif kind == "duplicate":
                recs.insert(i, recs[i])
            else:
                del recs[i]
            add(f"lines:{kind}", source, lambda p, r=recs: _write(p, r), True)
        header = json.loads(json.dumps(records))
        header_edits = {
            "header.meta_list": lambda h: h[0].__setitem__("meta", []),
            "header.config_seed_big": lambda h: h[0]["meta"]["config"].__setitem__("seed", 2**70),
            "header.config_task_escape": lambda h: h[0]["meta"]["config"].__setitem__("task", "../../x"),
            "header.config_task_long": lambda h: h[0]["meta"]["config"].__setitem__("task", "t" * 300),
            "header.attacker_unknown": lambda h: h[0]["meta"]["config"].__setitem__("attacker", "nobody"),
        }
        for kind, edit in header_edits.items():
            recs = json.loads(json.dumps(header))
            edit(recs)
            add(kind, source, lambda p, r=recs: _write(p, r), False)
        for _ in range(3):
            j = rng.randrange(len(raw))
            flipped = raw[:j] + bytes([raw[j] ^ (1 << rng.randrange(8))]) + raw[j + 1:]
            add("gz_byte_flip", source, lambda p, m=flipped: p.write_bytes(m), False)
            add("gz_truncate", source, lambda p, m=raw[:rng.randrange(len(raw))]: p.write_bytes(m),
                False)
            text = gzip.decompress(raw)
            cut = text[:rng.randrange(len(text))]
            add("text_truncate", source, lambda p, m=cut: p.write_bytes(gzip.compress(m)), True)
        cases.append(foreign_cassette_case(work / "cassettes" / f"c{k}", source, records[0], rng))
        k += 1
    return cases


def foreign_cassette_case(folder: Path, source: Path, header: dict[str, Any], rng: random.Random) -> Case:
    """``run`` of a run whose place holds another run's cassette (``source``, copied there): one
    field of its recorded config changed. Counted with the content edits: exit 0 would mean the
    other run was played as this one."""
    from vcrime_audit.runner import RunConfig, cassette_path

    recorded = header["meta"]["config"]
    name = rng.choice(["task", "seed", "max_turns", "stall_turns"])
    other = {"task": rng.choice([t for t in ("robotics_company__data_theft", "robotics_company__theft",
                                             "private_club__theft") if t != recorded["task"]]),
             "seed": recorded["seed"] + rng.randrange(1, 1000),
             "max_turns": recorded["max_turns"] + rng.randrange(1, 60),
             "stall_turns": recorded["stall_turns"] + rng.randrange(1, 30)}[name]
    config = RunConfig(**{**recorded, name: other})
    folder.mkdir(parents=True)
    shutil.copyfile(source, cassette_path(config, folder))
    options = [f"--{field.replace('_', '-')}={getattr(config, field)}"
               for field in RunConfig.__dataclass_fields__]
    mode = rng.choice(["none", "once", "new"])
    return Case("cassettes", f"run:foreign_{name}", cli("run", *options, "--db", str(folder / "run.sqlite"),
                                                        "--cassette-dir", str(folder), "--record-mode", mode),
                content_edit=True)


# --- running and counting --------------------------------------------------------------------

def summarise(results: list[Result]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in ("options", "scenarios", "stores", "cassettes"):
        rs = [r for r in results if r.case.part == part]
        if not rs:
            continue
        summary = {
            "runs": len(rs),
            "tracebacks": sum(r.traceback for r in rs),
            "hangs": sum(r.rc is None for r in rs),
            "exit_codes": dict(sorted(Counter(str(r.rc) for r in rs).items())),
            "created": sum(r.created for r in rs),
            "traceback_kinds": sorted({r.case.kind for r in rs if r.traceback}),
            "hang_kinds": sorted({r.case.kind for r in rs if r.rc is None}),
        }
        if part == "options":
            summary["not_exit_2"] = sorted(r.case.kind for r in rs if r.rc != 2)
        edits = [r for r in rs if r.case.content_edit]
        if edits:
            per_kind: dict[str, Counter] = defaultdict(Counter)
            for r in edits:
                silent = r.rc == 0
                per_kind[r.case.kind.split(":", 1)[1]]["silent" if silent else "reported"] += 1
            summary["content_edits"] = {
                "total": len(edits),
                "reported_different_or_unverified": sum(r.rc not in (0, None) for r in edits),
                "silently_identical": sum(r.rc == 0 for r in edits),
                "per_kind": {k: dict(v) for k, v in sorted(per_kind.items())},
            }
        out[part] = summary
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few inputs of each kind")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parts", default="options,scenarios,stores,cassettes")
    parser.add_argument("--json", type=Path, help="also write the counts here")
    parser.add_argument("--log", type=Path, help="append one JSON line per command here as it ends")
    parser.add_argument("--keep", type=Path, help="keep the mutated inputs in this folder")
    parser.add_argument("--count", action="append", default=[], metavar="PART=N",
                        help="override a count, e.g. --count cassettes=150")
    parser.add_argument("--spawn", action="store_true",
                        help="start `python -m vcrime_audit.cli` for each command (slower)")
    args = parser.parse_args(argv)
    counts = {"scenarios": 4, "stores": 4, "cassettes": 10} if args.quick else \
        {"scenarios": 300, "stores": 100, "cassettes": 500}
    counts.update({k: int(v) for k, v in (c.split("=") for c in args.count)})
    parts = args.parts.split(",")
    rng = random.Random(args.seed)
    work = args.keep or Path(tempfile.mkdtemp(prefix="fuzz-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        cases: list[Case] = []
        if "options" in parts:
            cases += option_cases(work)
        if "stores" in parts:
            cases += store_cases(work, counts["stores"], rng, args.quick)
        if "scenarios" in parts:
            cases += scenario_cases(work, counts["scenarios"], rng)
        if "cassettes" in parts:
            cases += cassette_cases(work, counts["cassettes"], rng)
        runner = spawn if args.spawn or not hasattr(os, "fork") else Forker()
        done = 0

        def one(case: Case) -> Result:
            nonlocal done
            result = run_case(case, runner)
            done += 1
            if args.log:
                with args.log.open("a", encoding="utf-8") as log:
                    log.write(json.dumps({"part": case.part, "kind": case.kind, "rc": result.rc,
                                          "traceback": result.traceback, "created": result.created,
                                          "content_edit": case.content_edit}) + "\n")
            if done % 50 == 0:
                print(f"{done}/{len(cases)} commands, {time.perf_counter() - started:.0f} s",
                      file=sys.stderr, flush=True)
            return result

        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            results = list(pool.map(one, cases))
        summary = summarise(results)
        summary["inputs"] = {
            "scenario_files": len({c.command[-1] for c in cases if c.part == "scenarios"}),
            "stores": len({c.watch for c in cases if c.part == "stores"}),
            "cassettes": sum(c.part == "cassettes" for c in cases),
        }
        summary["seconds"] = round(time.perf_counter() - started, 1)
        print(json.dumps(summary, indent=1))
        worst = [r for r in results if r.traceback or r.rc is None][:5]
        for r in worst:
            print(f"\n--- {r.case.kind}: {' '.join(r.case.command[3:])}\n{(r.stdout + r.stderr)[-1500:]}",
                  file=sys.stderr)
        if args.json:
            args.json.write_text(json.dumps(summary, indent=1))
        return summary
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
