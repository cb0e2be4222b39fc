"""The play page: the person sees the Attacker's observation and submits one action per turn."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ..agents.render import observation
from .forms import Choices, check_turn
from .game import Game, wait_for_change
from .security import FORM_REFUSALS, HEADERS, Guard, allowed_hosts, read_form, templates
from .view import visible_map

SUBMIT_WAIT_S = 5.0  # a POST waits this long for the models before showing the waiting page
MAX_FORM_BYTES = 20_000


def _pending(game: Game) -> Any:
    prompt = game.human.pending
    return prompt if prompt is not None and not prompt.future.done() else None


def play_app(game: Game, host: str = "127.0.0.1") -> Starlette:
    env, guard = templates(), Guard()
    page = env.get_template("play.html")

    def render(request: Request, *, form: dict[str, Any] | None = None, targets: list[str] | None = None,
               errors: dict[str, str] | None = None, notice: str = "", status: int = 200) -> Response:
        started = time.perf_counter()
        sid, new = guard.session(request)
        prompt = _pending(game)
        world = game.world
        html = page.render(
            game=game, config=game.config, prompt=prompt, csrf=guard.token(sid),
            observation=observation(world), briefing=world.briefing, memory=world.attacker.memory,
            plan=world.attacker.plan, turn=world.turn + 1, choices=Choices.of(world),
            members=world.members, locations=world.locations, map=visible_map(world),
            form=form or {"memory": world.attacker.memory, "plan": world.attacker.plan},
            chosen_targets=targets or [], errors=errors or {}, notice=notice,
            history=list(reversed(game.history)))
        return guard.respond(html, sid, new, status, started)

    async def show(request: Request) -> Response:
        await wait_for_change(game, SUBMIT_WAIT_S)  # a game just started: until the person is asked
        return render(request)

    async def submit(request: Request) -> Response:
        data, status = await read_form(request, MAX_FORM_BYTES)
        if data is None:
            return render(request, notice=FORM_REFUSALS[status], status=status)
        problem = guard.problem(request, str(data.get("csrf", "")))
        if problem:
            return render(request, notice=f"Refused: {problem}. Reload the page and submit again.",
                          status=403)
        form = {k: str(v) for k, v in data.items() if k != "targets"}
        targets = [str(t) for t in data.getlist("targets")]
        prompt = _pending(game)
        if prompt is None or prompt.token != form.get("turn_token"):
            return render(request, notice="That form was for a turn that has already been played "
                          "(submitted from another tab or window). This page shows the game as it "
                          "is now.", status=409)
        submission, errors = check_turn(form, targets, Choices.of(game.world))
        if submission is None:
            return render(request, form=form, targets=targets, errors=errors,
                          notice="The action was not sent: fix the fields marked below.", status=400)
        if not game.human.submit(prompt.token, submission):
            return render(request, notice="That turn was just submitted from another tab or window.",
                          status=409)
        await wait_for_change(game, SUBMIT_WAIT_S)
        return RedirectResponse("/", status_code=303, headers=HEADERS)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        from ..harm import default_lexicon

        # the store classifies each action with the over-harm lexicon; load it (seconds) while the
        # person reads turn 1 rather than after their first submission
        warm = asyncio.create_task(asyncio.to_thread(default_lexicon))
        task = asyncio.create_task(game.play())
        try:
            yield
        finally:
            await warm
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    return Starlette(routes=[Route("/", show, methods=["GET"]), Route("/turn", submit, methods=["POST"])],
                     middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host))],
                     lifespan=lifespan)
