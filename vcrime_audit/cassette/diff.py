"""On a replay miss: find the nearest recorded request and show how it differs."""

from __future__ import annotations

import difflib
import json
from typing import Any

import orjson


def request_lines(request: dict[str, Any]) -> list[str]:
    """A request as lines, message text split so a one-character change shows on one line."""
    shown = {k: v for k, v in request.items() if k != "messages"}
    lines = _indented(shown).splitlines()
    for i, message in enumerate(request.get("messages", [])):
        lines.append(f"--- messages[{i}] ({message.get('role')}) ---")
        lines.extend(message.get("content", "").splitlines())
    return lines


def _indented(value: Any) -> str:
    """JSON over indented lines, keys sorted. orjson's: the standard library's indenting encoder
    leaves a reference cycle per call (its nested functions), and a miss ranks every recorded
    request of its call, with the collector off in a study; the standard library's for what
    orjson refuses (an integer beyond 64 bits, a key that is not text)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return json.dumps(value, indent=2, sort_keys=True)


def nearest(request: dict[str, Any], candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The recorded request whose lines (:func:`request_lines`, what :func:`request_diff` shows)
    differ least from ``request``'s, among those of the same role and call if there are any; the
    first of equals. Lines are compared as wholes: compared character by character, the ~13 KB
    requests of a study's cassette took 24-156 s to rank for one miss (``benchmarks/bench_miss.py``),
    so that a replay or ``verify`` after a prompt change seemed to hang."""
    same_call = [c for c in candidates
                 if (c.get("role"), c.get("call")) == (request.get("role"), request.get("call"))]
    pool = same_call or candidates
    if not pool:
        return None
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(request_lines(request))  # indexed once, for every candidate

    def similarity(candidate: dict[str, Any]) -> float:
        matcher.set_seq1(request_lines(candidate))
        return matcher.quick_ratio() if len(pool) > 50 else matcher.ratio()

    return max(pool, key=similarity)


def request_diff(recorded: dict[str, Any], wanted: dict[str, Any], context: int = 2) -> str:
    return "\n".join(difflib.unified_diff(request_lines(recorded), request_lines(wanted),
                                          "recorded", "requested", n=context, lineterm=""))
