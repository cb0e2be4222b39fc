"""A person rates 3 key turns in a real Chromium; the ratings are stored and audited."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from sklearn.metrics import cohen_kappa_score

from vcrime_audit.ratings import KeyTurn, save_rating, select_key_turns
from vcrime_audit.runner import replay
from vcrime_audit.store import Store
from vcrime_audit.web.game import new_game

from .conftest import ROOT
from .posts import REFUSED, refusals
from .script import TASK, TURNS, play_scripted, recorded_turns, source_cassette

STUDY = ROOT / "cassettes" / "study-demo"
SCORES = [(4, 2), (1, 5), (3, 3)]


def _store_with_people(db: Path, cassettes: Path) -> None:
    """The demo study's runs and a model run, replayed, plus three people's 2-turn games."""
    models = sorted((ROOT / "cassettes").glob("robotics*.jsonl.gz"))
    for cassette in [*sorted(STUDY.glob("*.jsonl.gz")), *models]:
        asyncio.run(replay(cassette, db))
    n = recorded_turns()
    for player in ("bo", "cy", "di"):
        game = new_game(TASK, f"human:{player}", "smollm2-135m", "smollm2-135m", db, cassettes, max_turns=n,
                        models_from=source_cassette())
        asyncio.run(play_scripted(game, TURNS[:n]))
        assert game.outcome is not None, game.error


def test_a_person_rates_three_key_turns_and_the_audit_reports_them(serve, browser, shots, tmp_path):
    db = tmp_path / "people.sqlite"
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
        pool.submit(_store_with_people, db, tmp_path / "cassettes").result()
    store = Store(db)
    items = select_key_turns(store)
    assert len(items) >= 3, items
    server = serve("rate", "--db", str(db), "--rater", "ana")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(server.url)
    assert f"1 of {len(items)}" in page.inner_text("#turn-h")
    assert page.query_selector("#distribution") and page.query_selector("#patches")
    page.screenshot(path=str(shots / "rate.png"), full_page=True)

    # a missing score is refused with a message; nothing is stored
    page.check("input[name=judge][value='4']")
    page.focus("#submit")
    page.keyboard.press("Enter")
    page.wait_for_selector("#world_manager-err")
    assert "choose a score" in page.inner_text("#world_manager-err")
    assert store.db["human_ratings"].count == 0
    assert refusals(server.url + "rate") == REFUSED  # read as they come, never whole
    assert store.db["human_ratings"].count == 0

    for number, (judge, wm) in enumerate(SCORES, start=1):
        page.wait_for_selector(f"#turn-h:has-text('{number} of {len(items)}')")
        key = items[number - 1]
        assert page.inner_text("#turn-h").endswith(f"run {key.run_id}, turn {key.turn}")
        assert page.inner_text("#why") == ", ".join(key.why)
        page.check(f"input[name=judge][value='{judge}']")
        page.check(f"input[name=world_manager][value='{wm}']")
        page.fill("#note", f"turn {number}")
        page.focus("#submit")
        page.keyboard.press("Enter")
    page.wait_for_selector(f"#turn-h:has-text('4 of {len(items)}')" if len(items) > 3 else "#done")
    server.stop()

    rows = list(store.db.query("SELECT * FROM human_ratings ORDER BY rowid"))
    assert [(r["rater"], r["run_id"], r["turn"], r["judge_score"], r["world_manager_score"], r["note"])
            for r in rows] == [("ana", k.run_id, k.turn, j, w, f"turn {n}")
                               for n, (k, (j, w)) in enumerate(zip(items, SCORES, strict=False), start=1)]
    assert all(r["seconds"] is not None and r["seconds"] >= 0 for r in rows)

    # a second rater on the same turns, then the audit report's section
    second = [(5, 2), (2, 4), (3, 2)]
    for key, (judge, wm) in zip(items, second, strict=False):
        save_rating(store, "ben", KeyTurn(key.run_id, key.turn, key.why), judge, wm)
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "vcrime_audit.cli", "audit", "--db", str(db), "--out",
                           str(out), "--resamples", "500"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    report = (out / "report.md").read_text()
    section = report[report.index("## People in the loop"):]
    assert "### Human solvability" in section and "Solvable: **0 of 1** task(s)" in section
    [row] = [line for line in section.splitlines() if line.startswith(f"| {TASK} | ")]
    players, winners, solvable = (cell.strip() for cell in row.split("|")[2:5])
    assert sorted(players.split(", ")) == ["bo", "cy", "di"] and (winners, solvable) == ("-", "no")
    judge_mean = np.mean([s[0] for s in SCORES + second])
    assert f"| Judge (outcome distribution) | {judge_mean:.2f} [" in section
    kappa = cohen_kappa_score([s[0] for s in SCORES], [s[0] for s in second], weights="quadratic")
    assert f"| ana / ben | Judge (outcome distribution) | 3 | {kappa:.2f} |" in section
