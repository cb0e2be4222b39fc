"""A person's game goes through the normal runner: recorded as a `human` participant, replayable."""

from __future__ import annotations

import asyncio
import json

import pytest

from vcrime_audit.backends.base import BackendError, GenerateRequest, Sampling
from vcrime_audit.models import ModelError, get_model
from vcrime_audit.runner import replay
from vcrime_audit.store import Store, turn_rows_hash
from vcrime_audit.web.game import new_game
from vcrime_audit.web.human_backend import HumanBackend

from .script import TASK, TURNS, play_scripted, recorded_turns, source_cassette


def test_human_names_need_no_registry_file():
    entry = get_model("human:ana")
    assert (entry.name, entry.backend, entry.family) == ("human:ana", "human", "human")
    with pytest.raises(ModelError, match="player name 'a b'"):
        get_model("human:a b")


def test_only_the_waiting_turn_can_be_answered():
    async def scenario():
        human = HumanBackend("ana")
        request = GenerateRequest(role="attacker", call="plan", model="human:ana", messages=[],
                                  sampling=Sampling())
        answer = asyncio.create_task(human.generate(request))
        await asyncio.sleep(0)
        token = human.pending.token
        assert not human.submit("stale", TURNS[0])
        assert human.submit(token, TURNS[0])
        assert not human.submit(token, TURNS[1])  # a second tab, same turn
        plan = await answer
        act = await human.generate(request.model_copy(update={"call": "act"}))
        with pytest.raises(BackendError, match="only the Attacker"):
            await human.generate(request.model_copy(update={"role": "judge", "call": "assess"}))
        return plan, act

    plan, act = asyncio.run(scenario())
    assert json.loads(plan.text) == TURNS[0].plan.model_dump() and plan.seconds == 0.0
    assert json.loads(act.text) == TURNS[0].action.model_dump() and act.seconds >= 0.0


def test_a_played_game_replays_to_the_same_rows(tmp_path):
    source, n = source_cassette(), recorded_turns()
    game = new_game(TASK, "human:cy", "smollm2-135m", "smollm2-135m", tmp_path / "a.sqlite",
                    tmp_path / "c", max_turns=n, models_from=source)
    asyncio.run(play_scripted(game, TURNS[:n]))
    outcome = game.outcome
    assert outcome is not None, game.error
    assert (outcome.status, outcome.turns) == ("max_turns", n)
    roles = [r["role"] for r in Store(tmp_path / "a.sqlite").rows("calls", outcome.run_id)]
    assert roles.count("attacker") == 2 * n and len(roles) == outcome.model_calls
    assert [h.action for h in game.history] == [t.action for t in TURNS[:n]]
    again = asyncio.run(replay(outcome.cassette, tmp_path / "b.sqlite"))
    assert again.identical and again.replayed_calls == outcome.model_calls
    assert turn_rows_hash(Store(tmp_path / "b.sqlite"), outcome.run_id) == outcome.turn_rows_hash
    # a second game of the same player on the same task takes the next seed: nothing is overwritten
    other = new_game(TASK, "human:cy", "smollm2-135m", "smollm2-135m", tmp_path / "a.sqlite",
                     tmp_path / "c", max_turns=n, models_from=source)
    assert other.config.seed == 1 and other.config.run_id() != outcome.run_id
