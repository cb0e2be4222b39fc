"""IdentityMemo: one value per live object, never another object's value."""

from __future__ import annotations

import pytest

from vcrime_audit.memo import RUNS_FLOOR, IdentityMemo, runs_in_flight


class Thing:
    def __init__(self, n: int) -> None:
        self.n = n


@pytest.mark.parametrize("way", ["get", "of"])
def test_a_value_is_made_once_per_object_and_never_served_to_another(way):
    memo: IdentityMemo[int] = IdentityMemo(limit=3)
    made = []

    def make(thing: Thing) -> int:
        made.append(thing.n)
        return thing.n * 10

    def value(thing: Thing) -> int:
        return memo.get(thing, lambda: make(thing)) if way == "get" else memo.of(thing, make)

    first, second = Thing(1), Thing(2)
    assert [value(first), value(first), value(second), value(first)] == [10, 10, 20, 10]
    assert made == [1, 2]
    for n in range(3, 200):  # objects made and dropped: their ids are reused, their values are not
        assert value(Thing(n)) == n * 10
    assert value(first) == 10 and value(second) == 20


def test_past_the_limit_the_oldest_entry_goes_one_at_a_time():
    memo: IdentityMemo[int] = IdentityMemo(limit=2)
    things = [Thing(n) for n in range(5)]
    made = []
    for thing in things:
        memo.get(thing, lambda t=thing: made.append(t.n) or t.n)
        assert len(memo) <= 2
    assert [memo.get(t, lambda t=t: made.append(t.n) or t.n) for t in things[3:]] == [3, 4]
    assert made == [0, 1, 2, 3, 4], "the two newest are kept"
    assert memo.get(things[0], lambda: made.append(0) or 0) == 0 and made[-1] == 0, "the oldest went"


def test_per_run_memos_are_sized_for_the_runs_in_flight_and_shrink_back_after():
    memo: IdentityMemo[int] = IdentityMemo(3, per_run=True)
    fixed: IdentityMemo[int] = IdentityMemo(5)
    assert memo.limit == 3 * RUNS_FLOOR, "one run at a time: the floor"
    things = [Thing(n) for n in range(200)]
    with runs_in_flight(50):
        assert memo.limit == 150 and fixed.limit == 5
        for thing in things[:150]:
            memo.get(thing, lambda t=thing: t.n)
        assert len(memo) == 150
        assert memo.limit == 150
    assert memo.limit == 3 * RUNS_FLOOR and len(memo) == 150, "nothing freed at once"
    for at, thing in enumerate(things[150:], start=1):  # each new entry: one less kept
        memo.get(thing, lambda t=thing: t.n)
        assert len(memo) == max(3 * RUNS_FLOOR, 150 - at)
    kept = things[200 - 3 * RUNS_FLOOR:]
    assert [memo.get(t, lambda: -1) for t in kept] == [t.n for t in kept], "the newest were kept"
    assert memo.get(things[0], lambda: -1) == -1, "the oldest went"


def test_made_once_keeps_its_value_on_the_instance_and_a_copy_makes_its_own():
    from pydantic import BaseModel, ConfigDict

    from vcrime_audit.backends.base import _MADE_ONCE, GenerateRequest, Message
    from vcrime_audit.canonical import content_hash
    from vcrime_audit.memo import made_once
    from vcrime_audit.models import Sampling

    made: list[int] = []

    class Frozen(BaseModel):
        model_config = ConfigDict(frozen=True, ignored_types=(made_once,))
        n: int

        @made_once
        def _double(self) -> int:
            """Twice n."""
            made.append(self.n)
            return 2 * self.n

    one = Frozen(n=3)
    assert [one._double, one._double] == [6, 6] and made == [3]
    assert one.__dict__["_double"] == 6 and Frozen._double.__doc__ == "Twice n."
    assert not Frozen.__private_attributes__, "pydantic took it for a private attribute"
    assert one == Frozen(n=3) and one.model_dump() == {"n": 3}
    # GenerateRequest drops what it made on a copy (model_copy), so a changed copy is hashed anew
    assert set(_MADE_ONCE) == {"_plain", "_canonical_form", "_canonical", "_canonical_bytes", "_keys",
                               "_digest"}
    request = GenerateRequest(role="judge", call="assess", model="m", sampling=Sampling(seed=1),
                              messages=[Message(role="user", content="a")])
    first = request.digest()
    retried = request.model_copy(update={"attempt": 1})
    assert retried.digest() != first and request.digest() == first
    for made in (request, retried):
        assert made.digest() == content_hash(made.model_dump(mode="json"))
        assert made.plain() == made.model_dump(mode="json")
