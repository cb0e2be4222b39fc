"""Several processes writing one store: one writer per job, no migration race, nothing destroyed."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from vcrime_audit.store import Store
from vcrime_audit.verify import Verifier

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "cassettes" / "robotics_company__data_theft-s0-e3005c10.jsonl.gz"

REPLAYER = """
import sys, time
sys.path.insert(0, {root!r})
start = {start!r}
from vcrime_audit.cli import app
while time.time() < start:
    time.sleep(0.001)
app(["replay", {cassette!r}, "--db", {db!r}])
"""


def test_ten_processes_replaying_one_run_into_one_store(tmp_path):
    db = tmp_path / "shared.sqlite"
    start = time.time() + 4.0
    code = REPLAYER.format(root=str(ROOT), start=start, cassette=str(DEMO), db=str(db))
    children = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(10)]
    results = [(c.wait(timeout=180), *c.communicate()) for c in children]
    for code_, _out, err in results:
        assert "Traceback" not in err, err
        assert code_ == 0 or (code_ == 2 and "is being written by process" in err
                              and err.count("\n") == 1), (code_, err)
    assert any(code_ == 0 for code_, _, _ in results)
    store = Store(db)
    [run] = store.runs()
    assert run["status"] == "max_turns" and run["turn_rows_hash"]
    verifier = Verifier([DEMO.parent])
    try:
        assert not verifier.store(db)
        assert [v.state for v in verifier.verdicts] == ["verified"], verifier.verdicts
    finally:
        verifier.close()


def test_ten_processes_opening_a_new_store_race_on_no_migration(tmp_path):
    db = tmp_path / "new.sqlite"
    start = time.time() + 3.0
    code = (f"import sys, time\nsys.path.insert(0, {str(ROOT)!r})\n"
            "from vcrime_audit.store import Store\n"
            f"while time.time() < {start!r}:\n    time.sleep(0.001)\n"
            f"Store({str(db)!r})\nprint('ok')\n")
    children = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(10)]
    results = [(c.wait(timeout=120), *c.communicate()) for c in children]
    assert all(code_ == 0 and out.strip() == "ok" for code_, out, _ in results), results
    names = [r["name"] for r in Store(db).db["_migrations"].rows]
    assert len(names) == len(set(names))
