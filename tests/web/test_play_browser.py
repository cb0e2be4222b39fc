"""A person plays a 2-turn game in a real Chromium; the run is stored, recorded and replays."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.store import Store, turn_rows_hash

from .conftest import ROOT
from .posts import FORM, REFUSED, post, refusals
from .script import TASK, TURNS, recorded_turns, source_cassette


def _fill(page, submission) -> None:
    a, p = submission.action, submission.plan
    page.fill("#memory", p.memory)
    page.fill("#plan", p.plan)
    page.select_option("#actor", a.actor)
    page.fill("#verb", a.verb)
    page.fill("#description", a.description)
    for box in page.query_selector_all("input[name=targets]"):
        box.set_checked(box.get_attribute("value") in a.targets)
    page.select_option("#time_minutes", str(a.time_minutes))


def test_a_person_plays_two_turns_and_the_run_replays(serve, browser, shots, tmp_path):
    played = TURNS[:recorded_turns()]
    db, cassettes = tmp_path / "people.sqlite", tmp_path / "cassettes"
    server = serve("play", "--task", TASK, "--player", "alice", "--max-turns", str(len(played)), "--db",
                   str(db), "--cassette-dir", str(cassettes), "--models-from", str(source_cassette()))
    assert server.url.startswith("http://127.0.0.1:")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(server.url)

    # what the page shows is the Attacker model's own observation, inside the request it is sent
    shown = page.inner_text("#observation")
    sent = page.eval_on_selector_all("details pre", "els => els.map(e => e.textContent)")
    assert "Your crew:" in shown and any(shown in s for s in sent)
    assert set(page.eval_on_selector_all("#map g", "els => els.map(e => e.dataset.location)")) == \
        {"street", "car_park"}

    # bad input: a clear message on the page, nothing sent
    page.fill("#verb", "walk over")
    page.fill("#description", "")
    page.focus("#submit")
    page.keyboard.press("Enter")
    page.wait_for_selector("#verb-err")
    assert "one word" in page.inner_text("#verb-err")
    assert "required" in page.inner_text("#description-err")
    assert "Your turn 1" in page.inner_text("#act-h")
    page.goto(server.url)  # a fresh form for the screenshot

    # forms from elsewhere are refused: no session cookie / token, or a foreign Host header
    token = page.get_attribute("input[name=turn_token]", "value")
    assert post(server.url + "turn", f"turn_token={token}&verb=x".encode(), FORM) == 403
    assert post(server.url + "turn", b"", {"Host": "attacker.example"}) == 400
    assert refusals(server.url + "turn") == REFUSED  # read as they come, never whole

    per_turn = []
    second_tab = None
    for number, submission in enumerate(played, start=1):
        page.wait_for_selector(f"text=Your turn {number}")
        _fill(page, submission)
        if number == len(played):
            second_tab = browser.new_page()
            second_tab.goto(server.url)
            _fill(second_tab, TURNS[0])
            page.screenshot(path=str(shots / "play.png"), full_page=True)
        started = time.perf_counter()
        page.focus("#submit")
        page.keyboard.press("Enter")
        page.wait_for_selector(f"text=Your turn {number + 1}" if number < len(played) else "#game-over")
        per_turn.append(time.perf_counter() - started)

    # the second tab's form was for the last turn, which the first tab has played: refused
    second_tab.focus("#submit")
    second_tab.keyboard.press("Enter")
    second_tab.wait_for_selector(".notice")
    assert "already been played" in second_tab.inner_text(".notice")
    assert page.inner_text("#status") == "max_turns"
    # player text is escaped, never markup
    history = page.inner_text("ol.history")
    assert all(t.action.description in history for t in played)
    assert page.query_selector("ol.history b") is None
    page.screenshot(path=str(shots / "play-over.png"), full_page=True)
    renders = []
    for _ in range(10):
        response = page.reload()
        renders.append(float(response.headers["server-timing"].split("dur=")[1]))
    out = server.stop()
    assert "finished" in out and f"max_turns after {len(played)} turn(s)" in out

    store = Store(db)
    (run,) = store.runs()
    assert (run["attacker"], run["status"], run["turns"]) == ("human:alice", "max_turns", len(played))
    rows = store.rows("turns", run["run_id"])
    assert [(r["actor"], r["verb"], r["description"], json.loads(r["targets"]), r["time_minutes"],
             r["memory"], r["plan"]) for r in rows] == [
        (t.action.actor, t.action.verb, t.action.description, t.action.targets, t.action.time_minutes,
         t.plan.memory, t.plan.plan) for t in played]

    # in the cassette, the person's answers are those of a `human` participant, with timing
    # the store keeps no absolute path of this machine: find the cassette by its name
    cassette = next(tmp_path.rglob(Path(run["cassette"]).name))
    calls = Cassette(cassette, RecordMode.none).calls
    human = [r for r in calls if r["request"]["role"] == "attacker"]
    assert [r["request"]["call"] for r in human] == ["plan", "act"] * len(played)
    assert all(r["fingerprint"] == {"engine": "human", "player": "alice"} for r in human)
    assert [json.loads(r["result"]["text"]) for r in human[1::2]] == [t.action.model_dump() for t in played]
    assert all(r["result"]["seconds"] > 0 for r in human[1::2])

    # and the run replays from its cassette alone, row for row
    replayed = tmp_path / "replayed.sqlite"
    done = subprocess.run([sys.executable, "-m", "vcrime_audit.cli", "replay", str(cassette), "--db",
                           str(replayed)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "identical turn rows" in done.stdout
    assert turn_rows_hash(Store(replayed), run["run_id"]) == run["turn_rows_hash"]
    model_seconds = sum(r["seconds"] for r in store.rows("calls", run["run_id"]) if r["role"] != "attacker")
    print(f"\npage time per turn (submit -> next form shown; Judge and WM replayed, {model_seconds:.1f} s "
          f"of recorded model time not spent): {', '.join(f'{s:.3f}' for s in per_turn)} s; "
          f"server render of the page: median {sorted(renders)[5]:.1f} ms over 10 loads")
