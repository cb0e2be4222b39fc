"""Record a study-sized corpus with the SCRIPTED backend (no model) into a temporary folder.

Default grid: 8 scripted attackers x 40 tasks x 3 seeds = 960 runs, 60-turn cap, 30-turn stall
limit (studies/paper.yaml's limits). Registry entries for the scripted models are written into
``<out>/local_models`` and used through ``VCRIME_MODELS``; nothing lands in the repository.

    python benchmarks/make_study.py [--out DIR] [--attackers 8] [--tasks 40] [--seeds 3]
                                    [--concurrency 16] [--latency-ms 0]

Prints: runs, attacker turns (mean per run, by status), model calls, cassette bytes per call,
and the wall time of generation, with the load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from vcrime_audit.cassette import Cassette
    from vcrime_audit.study import StudyConfig

SCRIPTED_MODELS = "local_models"
STUDY_FILE = "study.yaml"


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs (shared machine)"


def bad_input(problem: object) -> SystemExit:
    """The one line that ends a benchmark given bad input, as the commands print theirs."""
    return SystemExit(f"error: {problem}")


def main_with_input_errors(main: Callable[[], None]) -> None:
    """Run a benchmark's ``main``: an operating-system error about a path (a name too long for
    the file system, a folder that may not be read) ends it in one line that names the path, as
    the commands end (``commands.common.PathErrorsInOneLine``). Errors that name no path raise."""
    from vcrime_audit.commands.common import path_error

    try:
        main()
    except OSError as exc:
        if exc.filename is None:
            raise
        raise bad_input(path_error(exc)) from None


def corpus_study(corpus: Path) -> StudyConfig:
    """The grid that make_study.py wrote to ``CORPUS/study.yaml``, with its cassettes there. A
    folder it did not write, a broken study file or a cassette folder with no cassettes ends the
    benchmark in one line that names the file and the fix."""
    from vcrime_audit.scenario import ScenarioError
    from vcrime_audit.study import load_study

    study_file = corpus / STUDY_FILE
    make = f"record a corpus with `python benchmarks/make_study.py --out {corpus}`"
    try:
        if not study_file.is_file():
            raise bad_input(f"{study_file}: no study file (is {corpus} a corpus?); fix: {make}")
        spec = load_study(study_file)
        if next(spec.cassette_dir.glob("*.jsonl.gz"), None) is None:
            raise bad_input(f"{study_file}: cassette_dir {spec.cassette_dir} holds no cassettes "
                            f"(*.jsonl.gz); fix: {make}")
    except ScenarioError as exc:
        raise bad_input(exc) from None
    return spec


def read_cassette(path: Path) -> Cassette:
    """The cassette at ``path``, read and checked; one that cannot be read (missing, a folder,
    corrupt) ends the benchmark in one line that names it and the fix."""
    from vcrime_audit.cassette import Cassette, RecordMode
    from vcrime_audit.commands.common import user_errors

    try:
        return Cassette(path, RecordMode.none)
    except user_errors() as exc:
        raise bad_input(exc) from None


def code_state(package: Path = Path(__file__).resolve().parent.parent / "vcrime_audit") -> str:
    """Whether the checkout's modules have bytecode as fresh as their source, and how many run
    compiled (:mod:`vcrime_audit.native`). Without bytecode each new process compiles them (~60
    ms, a sixth of an audit's start): where PYTHONDONTWRITEBYTECODE is set an editable install
    never writes it, and ``scripts/install.sh`` writes it once."""
    import importlib.util

    from vcrime_audit import native

    sources = list(package.rglob("*.py"))
    stale = [p for p in sources if not (cached := Path(importlib.util.cache_from_source(str(p)))).exists()
             or cached.stat().st_mtime < p.stat().st_mtime]
    if not stale:
        return f"bytecode of {len(sources)} modules cached; {native.summary()}"
    return (f"{len(stale)} of {len(sources)} modules without fresh bytecode: each process compiles "
            f"them (python -m compileall {package.name} writes it); {native.summary()}")


def write_registry(root: Path, attackers: int, latency_ms: float = 0.0) -> dict[str, Any]:
    """Scripted registry entries in ``root/local_models``; returns the study's role names."""
    models = root / SCRIPTED_MODELS
    models.mkdir(parents=True, exist_ok=True)
    names = [f"scripted-attacker-{i + 1}" for i in range(attackers)]
    for name in [*names, "scripted-judge", "scripted-wm"]:
        entry = {"name": name, "description": "Scripted answers (no model); benchmarks only.",
                 "backend": "scripted", "family": name, "vendor": "scripted",
                 "weights": {"install": "nothing to install"},
                 "sampling": {"default": {"temperature": 0.0, "max_tokens": 384},
                              "attacker": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 640},
                              "judge": {"max_tokens": 512}},
                 "options": {"latency_ms": latency_ms}}
        (models / f"{name}.yaml").write_text(yaml.safe_dump(entry), encoding="utf-8")
    os.environ["VCRIME_MODELS"] = str(models)
    return {"attackers": names, "judge": "scripted-judge", "world_manager": "scripted-wm"}


def study_spec(root: Path, attackers: int = 8, tasks: int = 40, seeds: int = 3, concurrency: int = 16,
               latency_ms: float = 0.0, max_turns: int = 60, stall_turns: int = 30):
    """A StudyConfig over the first ``tasks`` tasks, storing into ``root``."""
    from vcrime_audit.scenario import list_task_ids
    from vcrime_audit.study import StudyConfig

    roles = write_registry(root, attackers, latency_ms)
    return StudyConfig(name="scripted", backend="scripted", tasks=list_task_ids()[:tasks],
                       seeds=list(range(seeds)), max_turns=max_turns, stall_turns=stall_turns,
                       concurrency=concurrency, db=root / "study.sqlite",
                       cassette_dir=root / "cassettes", **roles)


def describe(spec, seconds: float) -> None:
    import sqlite3

    with sqlite3.connect(spec.db) as conn:
        runs = conn.execute("SELECT status, turns FROM runs").fetchall()
        calls = conn.execute("SELECT count(*) FROM calls").fetchone()[0]
    turns = [t for _, t in runs]
    by_status = Counter(s for s, _ in runs)
    size = sum(p.stat().st_size for p in Path(spec.cassette_dir).glob("*.jsonl.gz"))
    print(f"{len(runs)} runs, {sum(turns)} attacker turns (mean {statistics.mean(turns):.1f}, median "
          f"{statistics.median(turns):.0f} per run), {calls} model calls ({calls / sum(turns):.2f} per "
          f"turn), cassettes {size / 1e6:.1f} MB = {size / calls:.0f} bytes/call")
    print("status: " + ", ".join(f"{s} {n} (mean {statistics.mean(t for st, t in runs if st == s):.1f} "
                                 f"turns)" for s, n in sorted(by_status.items())))
    print(f"generation wall time {seconds:.1f} s = {sum(turns) / seconds:.1f} turns/s; {load_average()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="Folder to record into (default: a new temporary one).")
    parser.add_argument("--attackers", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="vcrime-study-"))
    from vcrime_audit.study import run_study

    spec = study_spec(root, args.attackers, args.tasks, args.seeds, args.concurrency, args.latency_ms)
    (root / STUDY_FILE).write_text(yaml.safe_dump(spec.model_dump(mode="json")), encoding="utf-8")
    print(f"recording {args.attackers} x {args.tasks} x {args.seeds} runs (SCRIPTED backend, no model) "
          f"into {root}; {load_average()}")
    started = time.perf_counter()
    asyncio.run(run_study(spec))
    describe(spec, time.perf_counter() - started)
    print(f"store {spec.db}, cassettes {spec.cassette_dir}, registry {root / SCRIPTED_MODELS}, "
          f"study file {root / STUDY_FILE}")


if __name__ == "__main__":
    main_with_input_errors(main)
