"""cassette.diff: the recorded request a miss is shown against."""

from __future__ import annotations

from vcrime_audit.cassette.diff import nearest, request_diff


def request(lines: list[str], call: str = "assess") -> dict:
    return {"role": "judge", "call": call, "model": "m",
            "messages": [{"role": "user", "content": "\n".join(lines)}]}


TARGET = ["guard at the front door", "camera in the hall", "alarm on the vault", "dog in the yard"]


def test_the_nearest_request_has_the_fewest_lines_changed():
    """Every line one character off is further than one line changed: the diff shown is by
    lines (what request_diff prints), and so is the ranking."""
    every_line = request([line + "s" for line in TARGET])
    one_line = request([*TARGET[:3], "a long new line about a van parked in the lane behind the yard"])
    found = nearest(request(TARGET), [every_line, one_line])
    assert found is one_line
    changed = [line for line in request_diff(found, request(TARGET)).splitlines()
               if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    assert len(changed) == 2


def test_requests_of_the_same_call_come_first_and_the_first_of_equals_wins():
    same, other_call = request(TARGET[:2]), request(TARGET, call="plan")
    assert nearest(request(TARGET), [other_call, same]) is same
    first, second = request(TARGET[:1]), request(TARGET[:1])
    assert nearest(request(TARGET), [first, second]) is first
    assert nearest(request(TARGET), [other_call]) is other_call
    assert nearest(request(TARGET), []) is None


def test_request_lines_leave_no_cycles_and_show_what_orjson_refuses():
    """A miss ranks every recorded request of its call, with the collector off in a study: the
    lines make no reference cycle. An integer beyond 64 bits (a hostile cassette's) still shows."""
    import gc

    from vcrime_audit.cassette.diff import request_lines

    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        lines = request_lines({**request(TARGET), "sampling": {"temperature": 0.0, "seed": 7}})
        gc.collect()
        assert gc.garbage == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert '    "seed": 7,' in lines and TARGET[0] in lines
    assert any(str(2**70) in line for line in request_lines({**request(TARGET), "seed": 2**70}))
