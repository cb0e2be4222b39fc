"""The import-linter contract (.importlinter) holds, and it catches what it is there to catch."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(folder: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(folder)}
    return subprocess.run([str(LINT), "--no-cache", "--no-logo", str(ROOT / ".importlinter")],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_the_package_keeps_every_contract():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_an_upward_import_and_a_heavy_import_outside_its_backend_break_the_contract(tmp_path):
    shutil.copytree(ROOT / "vcrime_audit", tmp_path / "vcrime_audit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    engine = tmp_path / "vcrime_audit" / "engine.py"
    engine.write_text(engine.read_text() + "\n\ndef _planted():\n    from .store import Store\n")
    stats = tmp_path / "vcrime_audit" / "audit" / "stats.py"
    stats.write_text(stats.read_text() + "\n\ndef _planted():\n    import torch\n")
    result = lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "vcrime_audit.engine is not allowed to import vcrime_audit.store" in result.stdout
    assert "vcrime_audit.audit.stats -> torch" in result.stdout
