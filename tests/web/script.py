"""The two turns a person plays in the web tests, and a driver that plays them without a browser.

``python -m tests.web.record`` plays them against the embedded model to make the committed
cassette that serves the Judge and World Manager in the browser test.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from vcrime_audit.agents.attacker import Action, PlanOutput
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.web.game import Game
from vcrime_audit.web.human_backend import Submission

TASK = "robotics_company__data_theft"
RECORDED = Path(__file__).resolve().parents[2] / "cassettes" / "human-demo"

TURNS = [
    Submission(PlanOutput(memory="All three of us are on the street; the car park is next.",
                          plan="Sam watches the guards; then Alex and Jo go in by the loading dock."),
               Action(actor="sam", verb="watch", description="Sam watches the car park from the street "
                      "corner and notes when a guard walks past.", targets=["car_park"], time_minutes=10)),
    Submission(PlanOutput(memory="Sam is watching the car park.",
                          plan="Alex walks in first with a clipboard; Jo follows when it is clear."),
               Action(actor="alex", verb="move", description='Alex walks into the car park holding a '
                      'clipboard marked "<b>Delivery check</b> & stock".', targets=["car_park"],
                      time_minutes=5)),
]


def source_cassette() -> Path:
    found = sorted(RECORDED.glob("*.jsonl.gz"))
    assert found, "cassettes/human-demo must be committed (python -m tests.web.record)"
    return found[0]


def recorded_turns() -> int:
    """How many of TURNS the committed cassette answers (its Attacker 'act' calls)."""
    calls = Cassette(source_cassette(), RecordMode.none).calls
    return sum(c["request"]["role"] == "attacker" and c["request"]["call"] == "act" for c in calls)


async def play_scripted(game: Game, turns: list[Submission] = TURNS) -> None:
    """Play ``turns`` through the game's human backend, the way the web form submits them."""
    task = asyncio.create_task(game.play())
    for submission in turns:
        while game.human.pending is None or game.human.pending.future.done():
            if task.done():
                break
            await asyncio.sleep(0.01)
        if task.done():
            break
        assert game.human.submit(game.human.pending.token, submission)
    await task
