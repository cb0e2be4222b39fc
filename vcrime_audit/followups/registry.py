"""The follow-up workflows by kind (what a `followups` row's ``kind`` names)."""

from __future__ import annotations

from typing import Any

from .session import Workflow


def workflow_for(kind: str) -> Workflow[Any]:
    from .annotate import Annotate
    from .interrogate import Interrogate
    from .rejudge import Rejudge

    workflows: dict[str, type[Workflow[Any]]] = {w.kind: w for w in (Rejudge, Annotate, Interrogate)}
    if kind not in workflows:
        raise ValueError(f"unknown follow-up kind {kind!r}; known: {', '.join(sorted(workflows))}")
    return workflows[kind]()
