"""On a replay miss: find the nearest recorded request and show how it differs."""

from __future__ import annotations

import difflib
import json
from typing import Any


def request_lines(request: dict[str, Any]) -> list[str]:
    """A request as lines, message text split so a one-character change shows on one line."""
    shown = {k: v for k, v in request.items() if k != "messages"}
    lines = json.dumps(shown, indent=1, sort_keys=True).splitlines()
    for i, message in enumerate(request.get("messages", [])):
        lines.append(f"--- messages[{i}] ({message.get('role')}) ---")
        lines.extend(message.get("content", "").splitlines())
    return lines


def nearest(request: dict[str, Any], candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    same_call = [c for c in candidates
                 if (c.get("role"), c.get("call")) == (request.get("role"), request.get("call"))]
    pool = same_call or candidates
    if not pool:
        return None
    target = "\n".join(request_lines(request))

    def similarity(candidate: dict[str, Any]) -> float:
        matcher = difflib.SequenceMatcher(None, "\n".join(request_lines(candidate)), target,
                                          autojunk=False)
        return matcher.quick_ratio() if len(pool) > 50 else matcher.ratio()

    return max(pool, key=similarity)


def request_diff(recorded: dict[str, Any], wanted: dict[str, Any], context: int = 2) -> str:
    return "\n".join(difflib.unified_diff(request_lines(recorded), request_lines(wanted),
                                          "recorded", "requested", n=context, lineterm=""))
