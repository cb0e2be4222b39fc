"""A person as a model backend: the Attacker's calls wait for an answer submitted on a web page.

The answer is the JSON the Attacker model would produce, so the runner records it in the run's
cassette like any model answer (fingerprint ``{"engine": "human", "player": NAME}``) and the run
replays byte for byte without the person.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..agents.attacker import Action, PlanOutput
from ..backends.base import BackendError, GenerateRequest, GenerateResult, ModelBackend
from ..models import HUMAN_PREFIX, is_human


@dataclass(frozen=True)
class Submission:
    """One turn of the person: what the plan call and the act call answer."""

    plan: PlanOutput
    action: Action


@dataclass
class Prompt:
    """A request waiting for the person; ``token`` names it so a stale form cannot answer it."""

    request: GenerateRequest
    token: str
    shown_at: float
    future: asyncio.Future[Submission] = field(repr=False)

    @property
    def retry_note(self) -> str:
        """The engine's note when it asks again after an unusable answer (attempt > 0)."""
        return self.request.messages[-1].content if self.request.attempt else ""


class HumanBackend:
    """Answers the Attacker's ``plan`` and ``act`` calls from one web-form submission per turn.

    The plan call waits for the submission and answers the memory and plan; the act call of the
    same turn answers the action at once. The act answer carries the person's deliberation time
    (from the form being offered to its submission) in ``seconds``; the plan answer carries 0.
    """

    name = "human"

    def __init__(self, player: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.player, self.clock = player, clock
        self.pending: Prompt | None = None
        self.changed = asyncio.Event()
        self._stash: tuple[Submission, float] | None = None

    def fingerprint(self, model: str) -> dict[str, Any]:
        return {"engine": "human", "player": self.player}

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        if request.role != "attacker" or request.call not in ("plan", "act"):
            raise BackendError(f"a person plays only the Attacker; got a {request.role} "
                               f"'{request.call}' call for {request.model}")
        if request.call == "act" and request.attempt == 0 and self._stash is not None:
            submission, seconds = self._stash
            self._stash = None
            return _answer(submission.action, seconds)
        prompt = Prompt(request, secrets.token_urlsafe(16), self.clock(),
                        asyncio.get_running_loop().create_future())
        self.pending = prompt
        self.notify()
        try:
            submission = await prompt.future
        finally:
            self.pending = None
        seconds = round(self.clock() - prompt.shown_at, 3)
        if request.call == "plan":
            self._stash = (submission, seconds)
            return _answer(submission.plan, 0.0)
        return _answer(submission.action, seconds)

    def submit(self, token: str, submission: Submission) -> bool:
        """Answer the waiting request named by ``token``; False when it is not the one waiting
        (already answered from another tab, or the game has moved on)."""
        prompt = self.pending
        if prompt is None or prompt.token != token or prompt.future.done():
            return False
        prompt.future.set_result(submission)
        self.notify()
        return True

    def notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    async def aclose(self) -> None:
        prompt = self.pending
        if prompt is not None and not prompt.future.done():
            prompt.future.cancel()


def _answer(output: PlanOutput | Action, seconds: float) -> GenerateResult:
    return GenerateResult(text=json.dumps(output.model_dump(), ensure_ascii=False), seconds=seconds)


class HumanAndModels:
    """Routes ``human:*`` models to the person and every other model to ``models``."""

    name = "human+models"

    def __init__(self, human: HumanBackend, models: ModelBackend) -> None:
        self.human, self.models = human, models

    def _for(self, model: str) -> Any:
        return self.human if is_human(model) else self.models

    def fingerprint(self, model: str) -> dict[str, Any]:
        return self._for(model).fingerprint(model)

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        return await self._for(request.model).generate(request)

    async def aclose(self) -> None:
        await self.human.aclose()
        await self.models.aclose()


def player_model(player: str) -> str:
    return f"{HUMAN_PREFIX}{player}"
