"""Compiled copies of the hot modules: loaded only where built from the source beside them, the
source run wherever a copy is stale, off or broken, and the same rows either way."""

from __future__ import annotations

import ast
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vcrime_audit import native

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "scripts" / "build_native.py"
CASSETTE = ROOT / "cassettes" / "robotics_company__data_theft-s0-e3005c10.jsonl.gz"
_PROBE = ("import json, vcrime_audit.memo as m, vcrime_audit.native as n; memo = m.IdentityMemo(2); "
          "key = object(); print(json.dumps([m.__file__, n.loaded(), memo.of(key, id) == id(key), "
          "type(m.IdentityMemo.of).__name__]))")


def _python(code: str, package_root: Path, native_on: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(package_root), native.SWITCH: "1" if native_on else "0"}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=package_root)


def _probe(package_root: Path, native_on: bool = True) -> tuple[list, str]:
    done = _python(_PROBE, package_root, native_on)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def _build(package: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BUILD), "--package", str(package), *args],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory) -> Path:
    """A copy of the package with ``memo`` compiled (one module: ~5 s of gcc)."""
    root = tmp_path_factory.mktemp("native")
    shutil.copytree(ROOT / "vcrime_audit", root / "vcrime_audit",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    done = _build(root / "vcrime_audit", "--only", "memo", "--strict")
    assert done.returncode == 0, done.stderr
    return root


def test_a_build_is_loaded_while_its_source_is_unchanged_and_only_then(package_copy):
    source = package_copy / "vcrime_audit" / "memo.py"
    built = native.built_path(source, source.read_bytes())
    assert built.is_file() and list(source.parent.glob("memo.*.so")) == [built]

    (file, loaded, works, kind), _ = _probe(package_copy)
    assert (file, loaded, works, kind) == (str(built), ["vcrime_audit.memo"], True,
                                           "cython_function_or_method")

    (file, loaded, works, kind), _ = _probe(package_copy, native_on=False)
    assert (file, loaded, works, kind) == (str(source), [], True, "function")

    original = source.read_bytes()
    try:
        source.write_bytes(original + b"\n# edited after the build\n")
        (file, loaded, works, _), _ = _probe(package_copy)
        assert (file, loaded, works) == (str(source), [], True)
    finally:
        source.write_bytes(original)
    assert _probe(package_copy)[0][1] == ["vcrime_audit.memo"]


def test_a_broken_build_is_named_in_one_line_and_the_source_runs(package_copy):
    source = package_copy / "vcrime_audit" / "memo.py"
    built = native.built_path(source, source.read_bytes())
    good = built.read_bytes()
    rng = random.Random(7)
    broken = [b"", b"\x7fELF" + bytes(60), bytes(rng.getrandbits(8) for _ in range(4096)),
              *(good[:rng.randrange(64, len(good))] for _ in range(6))]
    try:
        for data in broken:
            built.write_bytes(data)
            (file, loaded, works, _), err = _probe(package_copy)
            assert (file, loaded, works) == (str(source), [], True)
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"{built}: cannot be loaded (")
            assert "fix: python scripts/build_native.py" in lines[0]
    finally:
        built.write_bytes(good)


def test_a_rebuild_replaces_the_copy_of_an_earlier_source(tmp_path):
    package = tmp_path / "vcrime_audit"
    shutil.copytree(ROOT / "vcrime_audit", package, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    source = package / "clock.py"
    first = native.built_path(source, source.read_bytes())
    assert _build(package, "--only", "clock", "--strict").returncode == 0 and first.is_file()
    source.write_bytes(source.read_bytes() + b"\n# edited\n")
    second = native.built_path(source, source.read_bytes())
    done = _build(package, "--only", "clock", "--strict")
    assert done.returncode == 0, done.stderr
    assert list(package.glob("clock.*.so")) == [second] and first != second
    made = second.stat().st_mtime_ns
    rerun = _build(package, "--only", "clock", "--strict")
    assert rerun.returncode == 0 and second.stat().st_mtime_ns == made  # kept, not built again


def test_without_cython_or_a_package_the_build_says_so_in_one_line(tmp_path):
    blocker = tmp_path / "blocker" / "Cython"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('no Cython here')\n")
    package = tmp_path / "vcrime_audit"
    shutil.copytree(ROOT / "vcrime_audit", package, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(blocker.parent)}
    for strict, code in ((False, 0), (True, 1)):
        done = subprocess.run([sys.executable, str(BUILD), "--package", str(package), "--only", "seeds",
                               *(["--strict"] if strict else [])], env=env, capture_output=True, text=True)
        assert done.returncode == code
        assert done.stderr.splitlines() == ["native build: Cython is not installed; fix: pip install -e "
                                            "'.[native]'; vcrime-audit runs as Python"]
    assert not list(package.glob("seeds.*.so"))
    missing = _build(tmp_path / "no-such-package", "--only", "seeds", "--strict")
    assert missing.returncode == 1 and len(missing.stderr.splitlines()) == 1
    assert missing.stderr.startswith(f"native build: {tmp_path / 'no-such-package' / 'seeds.py'}: ")


def test_the_finder_leaves_other_names_and_missing_sources_to_python(tmp_path, monkeypatch):
    finder = native._Finder()
    assert finder.find_spec("vcrime_audit.verify") is None
    assert finder.find_spec("json") is None
    monkeypatch.setattr(native, "PACKAGE_DIR", tmp_path)
    assert finder.find_spec("vcrime_audit.memo") is None
    assert native.SWITCH == "VCRIME_AUDIT_NATIVE" and native.source_path("vcrime_audit.store.db") == \
        tmp_path / "store" / "db.py"


def _own_nodes(function: ast.AST):
    """The nodes of ``function``'s own body: nested functions and classes are yielded, not entered."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _inner_functions_kept_as_locals(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        own = list(_own_nodes(node))
        generator = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own)
        if isinstance(node, ast.FunctionDef) and not generator:
            continue
        for inner in own:
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) or (
                    isinstance(inner, (ast.Assign, ast.AnnAssign, ast.NamedExpr))
                    and isinstance(inner.value, ast.Lambda)):
                found.append(f"{node.name} (line {node.lineno}) keeps a function at line {inner.lineno}")
    return sorted(found)


def test_no_compiled_coroutine_or_generator_keeps_an_inner_function_among_its_locals():
    """Compiled, a coroutine or generator keeps all its locals in one object that each of its inner
    functions holds: an inner function kept in a local makes a reference cycle of everything the
    call held (of a whole run, in ``runner._episode``), which the cycle collector, off while runs
    play, never frees. ``tests/test_study.py`` finds such cycles by playing a study; this finds the
    pattern in every compiled module."""
    found = {module: _inner_functions_kept_as_locals(ast.parse(native.source_path(
        f"vcrime_audit.{module}").read_text(encoding="utf-8"))) for module in native.MODULES}
    assert {m: f for m, f in found.items() if f} == {}
    sample = ast.parse("async def run(x):\n    async def on_turn(r):\n        return x\n    "
                       "keep = lambda: x\n    await go(on_turn, lambda: x)\n"
                       "def plain(x):\n    def inner():\n        return x\n    return inner\n")
    assert _inner_functions_kept_as_locals(sample) == ["run (line 1) keeps a function at line 2",
                                                       "run (line 1) keeps a function at line 4"]


@pytest.mark.skipif(not native.built(), reason="no native build here: python scripts/build_native.py")
def test_compiled_and_source_modules_derive_the_same_rows(tmp_path):
    """A run replayed with the compiled modules verifies with the sources, and the other way round;
    every module of ``native.MODULES`` with a build loads compiled."""
    imports = "; ".join(f"import vcrime_audit.{m}" for m in native.MODULES)
    done = _python(f"{imports}; import vcrime_audit.native as n; print(n.loaded())", ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(native.built())
    for writer, checker in (("1", "0"), ("0", "1")):
        db = tmp_path / f"native-{writer}.sqlite"
        for command, switch in ((["replay", str(CASSETTE), "--db", str(db)], writer),
                                (["verify", "--db", str(db)], checker)):
            ran = subprocess.run([sys.executable, "-m", "vcrime_audit.cli", *command], cwd=ROOT,
                                 env={**os.environ, native.SWITCH: switch}, capture_output=True, text=True)
            assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "1 verified, 0 with problems" in ran.stdout
