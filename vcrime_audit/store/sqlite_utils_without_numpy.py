"""sqlite-utils, imported without making it import numpy and pandas.

Where they are installed, sqlite-utils imports numpy and pandas when it is imported, only to map
their scalar types to column types for tables made from rows that hold them. The store makes its
tables from Python types (:mod:`.migrations`) and inserts its rows itself, so it needs neither; yet
numpy's import cost every process that opened a store ~80 ms, and started OpenBLAS's thread pool,
whose threads spin on the other core for a while (``perf stat``: ``import numpy`` took 144 ms of
CPU, 80 with ``OPENBLAS_NUM_THREADS=1``). A replay or verify worker never uses numpy. Where numpy
or pandas is imported already (the audit imports numpy), sqlite-utils gets it as usual.

Only while sqlite-utils is first imported are the two names marked missing (``sys.modules``
entries of None, which make ``import`` raise ImportError), and only where neither is imported
yet; the marks are taken away at once.
"""

from __future__ import annotations

import sys
from types import ModuleType

_SKIPPED = ("numpy", "pandas")


def _import() -> ModuleType:
    hidden = [name for name in _SKIPPED if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import sqlite_utils
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
    return sqlite_utils


sqlite_utils = _import()
