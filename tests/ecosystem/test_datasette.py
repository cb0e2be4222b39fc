"""The shipped Datasette metadata: current with its generator and the goal files, and its canned
queries answer through a real Datasette server's JSON API."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

from tests.backends.server import free_port
from vcrime_audit.datasette import SHIPPED, goal_limits, metadata, render
from vcrime_audit.scenario import DAMAGE_LEVELS, FORCE_LEVELS, load_goal, scenarios_root


def test_shipped_file_is_what_the_generator_writes():
    assert SHIPPED.read_text(encoding="utf-8") == render()
    assert yaml.safe_load(SHIPPED.read_text()) == metadata()


def test_goal_allowances_in_the_query_are_the_goal_files():
    goals = sorted((scenarios_root() / "goals").glob("*.yaml"))
    assert len(goal_limits()) == len(goals) == 14
    for (goal_id, force, damage), path in zip(goal_limits(), goals, strict=True):
        goal = load_goal(path)
        assert (goal_id, FORCE_LEVELS[force], DAMAGE_LEVELS[damage]) == (
            path.stem, goal.allowed_force, goal.allowed_damage)


def test_every_described_table_exists_in_a_store(judged_store):
    tables = {r[0] for r in sqlite3.connect(judged_store).execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    described = set(metadata()["databases"]["vcrime"]["tables"])
    assert described <= tables and {"runs", "turns", "judgments", "harm", "determinism"} <= described


def _get(url: str):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture
def datasette(judged_store):
    pytest.importorskip("datasette")
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "datasette", str(judged_store), "--metadata",
                                str(SHIPPED), "--host", "127.0.0.1", "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _get(base + "/-/versions.json")
                break
            except (urllib.error.URLError, OSError):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(process.stdout.read().decode(errors="replace")) from None
                time.sleep(0.2)
        yield base, judged_store
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_canned_queries_through_the_json_api(datasette):
    base, db = datasette
    conn = sqlite3.connect(db)
    rows = _get(base + "/vcrime/runs_by_status.json?_shape=array")
    assert [(r["status"], r["attacker"], r["runs"], r["turns"]) for r in rows] == conn.execute(
        "SELECT status, attacker, COUNT(*), SUM(turns) FROM runs GROUP BY status, attacker "
        "ORDER BY status, attacker").fetchall()
    run_id = conn.execute("SELECT run_id FROM runs").fetchone()[0]
    transcript = _get(base + "/vcrime/run_transcript.json?_shape=array&"
                      + urllib.parse.urlencode({"run_id": run_id}))
    assert [(r["turn"], r["verb"], r["outcome_type"]) for r in transcript] == conn.execute(
        "SELECT turn, verb, outcome_type FROM turns WHERE run_id = ? ORDER BY turn", [run_id]).fetchall()
    both = conn.execute("SELECT COUNT(*) FROM judgments a JOIN judgments b ON a.run_id = b.run_id "
                        "AND a.turn = b.turn AND a.judge < b.judge").fetchone()[0]
    assert both == 3  # the committed re-judging covers three turns the live judge also judged
    assert len(_get(base + "/vcrime/judge_disagreements.json?_shape=array&min_gap=0")) == both
    over = _get(base + "/vcrime/over_harm_turns.json?_shape=array")
    assert all(r["force"] > r["allowed_force"] or r["damage"] > r["allowed_damage"] for r in over)
