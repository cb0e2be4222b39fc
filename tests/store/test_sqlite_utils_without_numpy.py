import subprocess
import sys

import pytest


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_opening_a_store_imports_neither_numpy_nor_pandas_and_leaves_them_importable(tmp_path):
    pytest.importorskip("numpy")
    out = _run(
        "import sys\n"
        "from vcrime_audit.store import Store\n"
        f"Store({str(tmp_path / 's.sqlite')!r}).close()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'pandas')))\n"
        "import numpy, sqlite_utils.db\n"
        "print(numpy.add(1, 2), sqlite_utils.db.np)\n")
    assert out.splitlines() == ["[]", "3 None"]


def test_numpy_imported_first_is_what_sqlite_utils_gets():
    pytest.importorskip("numpy")
    out = _run("import numpy\n"
               "from vcrime_audit.store.sqlite_utils_without_numpy import sqlite_utils\n"
               "print(sqlite_utils.db.np is numpy)\n")
    assert out == "True"
