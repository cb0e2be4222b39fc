"""Compile the modules of ``vcrime_audit.native.MODULES`` with Cython, next to their sources.

    python scripts/build_native.py [--jobs 2] [--strict] [--only MODULE ...] [--package DIR]

Each module is compiled from a snapshot of its source to ``<name>.<digest>.<suffix>`` beside it
(:mod:`vcrime_audit.native` loads it while the source keeps that digest). A copy already built
from the same source is kept; copies built from earlier sources are removed. Cython compiles
plain Python semantics (``annotation_typing`` off: an annotation is never a C type or a check).

Needs Cython and a C compiler (``pip install -e '.[native]'``, gcc). Without them, or where the
compiler fails, it says so in one line and the package runs as Python; it exits 0 then, or 1 with
``--strict`` (CI). ``--package DIR``: another copy of the
package (a test's). Compiling all ~31 modules takes ~1-2 min on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vcrime_audit import native  # noqa: E402

DIRECTIVES = {"language_level": 3, "annotation_typing": False, "binding": True}
CFLAGS = ["-O2", "-g0"]
"""-O2 without debug information: half the compile time of Python's default -O3 -g for the
same instruction count a replay (measured with ``benchmarks/bench_instructions.py``)."""

_COMPILE = """
import json
import sys
from Cython.Build import cythonize
from setuptools import Distribution
names, jobs = sys.argv[1].split(","), int(sys.argv[2])
directives, cflags = json.loads(sys.argv[3]), sys.argv[4:]
modules = cythonize([n.replace(".", "/") + ".py" for n in names], compiler_directives=directives,
                    quiet=True, nthreads=jobs)
for module in modules:
    module.extra_compile_args = cflags
dist = Distribution({"ext_modules": modules, "script_name": "build_native"})
command = dist.get_command_obj("build_ext")
command.build_lib, command.build_temp, command.parallel = "lib", "temp", jobs
dist.run_command("build_ext")
"""


def _stale(source: Path, keep: Path) -> list[Path]:
    pattern = re.compile(re.escape(source.stem) + r"\.[0-9a-f]{16}" + re.escape(native.SUFFIX))
    return [p for p in source.parent.iterdir() if pattern.fullmatch(p.name) and p != keep]


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if "error" in line.lower() and "warning" not in line.lower():
            return line.strip()[:300]
    lines = [line for line in log.splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else "no output"


def build(package: Path, modules: list[str], jobs: int) -> str | None:
    """Build the copies ``modules`` lack; None, or one line saying why they could not be built."""
    todo: list[tuple[str, Path, bytes, Path]] = []
    for module in modules:
        name = f"{native.PACKAGE}.{module}"
        source = native.source_path(name, package)
        code = source.read_bytes()
        target = native.built_path(source, code)
        for old in _stale(source, target):
            old.unlink()
        if not target.is_file():
            todo.append((name, source, code, target))
    if not todo:
        return None
    try:
        import Cython  # noqa: F401
    except ImportError:
        return "Cython is not installed; fix: pip install -e '.[native]'"
    with tempfile.TemporaryDirectory(prefix="vcrime-native-") as tmp:
        work = Path(tmp)
        for name, _, code, _ in todo:
            snapshot = work.joinpath(*name.split(".")).with_suffix(".py")
            snapshot.parent.mkdir(parents=True, exist_ok=True)
            snapshot.write_bytes(code)
            for folder in snapshot.relative_to(work).parents:
                if folder != Path("."):
                    (work / folder / "__init__.py").touch()
        done = subprocess.run(
            [sys.executable, "-c", _COMPILE, ",".join(name for name, *_ in todo), str(jobs),
             json.dumps(DIRECTIVES), *CFLAGS], cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            return f"the compiler failed: {_first_error(done.stdout + done.stderr)}"
        for name, _, _, target in todo:
            made = next((work / "lib").joinpath(*name.split(".")[:-1]).glob(
                name.rsplit(".", 1)[-1] + native.SUFFIX))
            part = target.with_name(target.name + ".part")
            shutil.copyfile(made, part)
            os.replace(part, target)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 where a module cannot be built (CI), not 0")
    parser.add_argument("--only", nargs="+", metavar="MODULE", choices=native.MODULES,
                        help="these modules of vcrime_audit.native.MODULES only")
    parser.add_argument("--package", type=Path, default=native.PACKAGE_DIR,
                        help="the package folder to build in (default: this checkout's)")
    args = parser.parse_args()
    modules = list(args.only or native.MODULES)
    started = time.perf_counter()
    try:
        failed = build(args.package.resolve(), modules, max(1, args.jobs))
    except OSError as exc:
        failed = (f"{exc.filename or args.package}: {exc.strerror or exc}; fix: pass --package the "
                  "vcrime_audit folder to build in")
    if failed:
        print(f"native build: {failed}; vcrime-audit runs as Python", file=sys.stderr)
        return 1 if args.strict else 0
    print(f"native build: {len(modules)} modules built from their current source "
          f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
