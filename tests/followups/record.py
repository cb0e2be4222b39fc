"""Record the committed follow-up cassettes with the embedded model on the demo store.

    python -m tests.followups.record [rejudge annotate interrogate]

The demo store is the committed demo run replayed. The second judge/annotator is
``smollm2-135m-t07`` (tests/followups/models/): the embedded weights sampled at temperature 0.7,
because the CPU demo has one model. Takes minutes on a shared 2-core machine.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CASSETTES = ROOT / "cassettes"
SECOND_MODEL = "smollm2-135m-t07"
OPTIONS = {
    "rejudge": ["--judge", SECOND_MODEL, "--per-attacker", "3", "--seed", "0"],
    "annotate": ["--annotators", f"smollm2-135m,{SECOND_MODEL}"],
    "interrogate": ["--min-turns", "3"],
}


def demo_run_cassette() -> Path:
    from tests.committed import DEMO_RUN

    if not DEMO_RUN.is_file():
        raise SystemExit(f"no demo run cassette {DEMO_RUN}")
    return DEMO_RUN


def demo_store(path: Path) -> Path:
    from vcrime_audit.runner import replay

    asyncio.run(replay(demo_run_cassette(), path))
    return path


def models_dir(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "local_models" / "smollm2-135m.yaml", folder)
    shutil.copy(HERE / "models" / f"{SECOND_MODEL}.yaml", folder)
    return folder


def app():
    import typer

    from vcrime_audit.commands.followups import annotate, interrogate, rejudge

    cli = typer.Typer()
    for command in (rejudge, annotate, interrogate):
        cli.command()(command)
    return cli


def main(kinds: list[str]) -> None:
    from typer.testing import CliRunner

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["VCRIME_MODELS"] = str(models_dir(Path(tmp) / "models"))
        store = demo_store(Path(tmp) / "demo.sqlite")
        for kind in kinds:
            for old in CASSETTES.glob(f"{kind}-*.jsonl.gz"):
                old.unlink()
            started = time.perf_counter()
            done = CliRunner().invoke(app(), [kind, "--db", str(store), "--cassette-dir",
                                              str(CASSETTES), "--record-mode", "all", *OPTIONS[kind]])
            print(done.output, f"[{kind}: exit {done.exit_code}, {time.perf_counter() - started:.0f} s]",
                  flush=True)
            if done.exit_code != 0:
                raise SystemExit(done.exit_code)


if __name__ == "__main__":
    main(sys.argv[1:] or list(OPTIONS))
