"""The rating page: one key turn at a time, the Judge's distribution and the World Manager's update
scored 1-5 by a person."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ..agents.render import full_view
from ..ratings import NOTE_LIMIT, SCORES, KeyTurn, rated, save_rating
from ..store import Store
from ..world import WorldState
from .security import (
    FORM_REFUSALS,
    HEADERS,
    Guard,
    allowed_hosts,
    read_form,
    store_failure_handlers,
    templates,
)

MAX_FORM_BYTES = 20_000
RUBRIC = {
    "judge": ("Judge's outcome distribution", {
        1: "implausible: outcomes or odds contradict the world or the action",
        2: "mostly implausible", 3: "mixed: some outcomes or odds are off",
        4: "plausible with small flaws", 5: "plausible outcomes with sensible odds"}),
    "world_manager": ("World Manager's update", {
        1: "wrong: the changes contradict the outcome or the world",
        2: "mostly wrong or missing", 3: "partly right: notable omissions or errors",
        4: "right with small flaws", 5: "the changes follow from the outcome, nothing missing"}),
}


@dataclass(frozen=True)
class TurnView:
    """What a rater sees of one key turn."""

    key: KeyTurn
    run: dict[str, Any]
    turn: dict[str, Any]
    world_before: str
    judgment: dict[str, Any] | None
    dimensions: dict[str, Any]
    outcomes: list[dict[str, Any]]
    distribution: list[dict[str, Any]]
    patches: list[dict[str, Any]]


def turn_view(store: Store, key: KeyTurn) -> TurnView:
    run = store.run(key.run_id) or {}
    turn = store.rows("turns", key.run_id, f"turn = {int(key.turn)}")[0]
    live = store.rows("judgments", key.run_id, f"turn = {int(key.turn)} AND source = 'live'")
    judgment = live[0] if live else None
    patches = [{**p, "op": json.loads(p["op"])}
               for p in store.rows("patches", key.run_id, f"turn = {int(key.turn)}")]
    return TurnView(
        key, run, {**turn, "targets": json.loads(turn["targets"] or "[]")},
        full_view(WorldState.model_validate_json(turn["world_before"])), judgment,
        json.loads(judgment["dimensions"]) if judgment else {},
        json.loads(judgment["raw_outcomes"]) if judgment else [],
        json.loads(judgment["distribution"]) if judgment else [], patches)


def check_rating(form: dict[str, str]) -> tuple[tuple[int, int, str] | None, dict[str, str]]:
    errors = {}
    scores = {}
    for name in RUBRIC:
        raw = form.get(name, "")
        if not raw.isdigit() or int(raw) not in SCORES:
            errors[name] = "choose a score from 1 to 5" + (f" (got '{raw}')" if raw else "")
        else:
            scores[name] = int(raw)
    note = form.get("note", "").strip()
    if len(note) > NOTE_LIMIT:
        errors["note"] = f"{len(note)} characters; at most {NOTE_LIMIT} allowed: shorten it"
    if errors:
        return None, errors
    return (scores["judge"], scores["world_manager"], note), {}


def rate_app(store: Store, items: list[KeyTurn], rater: str, host: str = "127.0.0.1") -> Starlette:
    env, guard = templates(), Guard()
    page = env.get_template("rate.html")

    def next_item() -> int | None:
        done = rated(store, rater)
        return next((i for i, k in enumerate(items) if (k.run_id, k.turn) not in done), None)

    def render(request: Request, index: int | None, *, form: dict[str, str] | None = None,
               errors: dict[str, str] | None = None, notice: str = "", status: int = 200) -> Response:
        started = time.perf_counter()
        sid, new = guard.session(request)
        view = turn_view(store, items[index]) if index is not None else None
        html = page.render(view=view, index=index, total=len(items), n_rated=len(rated(store, rater)),
                           rater=rater, csrf=guard.token(sid), rubric=RUBRIC, form=form or {},
                           errors=errors or {}, notice=notice, shown=f"{time.time():.3f}")
        return guard.respond(html, sid, new, status, started)

    def parse_index(raw: str) -> int | None:
        return int(raw) if raw.isdigit() and int(raw) < len(items) else None

    async def show(request: Request) -> Response:
        raw = request.query_params.get("item")
        if raw is None:
            return render(request, next_item())
        index = parse_index(raw)
        if index is None:
            return render(request, next_item(), notice=f"There is no item '{raw}'; items are 0 to "
                          f"{len(items) - 1}. Showing the next unrated one.", status=404)
        return render(request, index)

    async def submit(request: Request) -> Response:
        data, status = await read_form(request, MAX_FORM_BYTES)
        if data is None:
            return render(request, next_item(), notice=FORM_REFUSALS[status], status=status)
        form = {k: str(v) for k, v in data.items()}
        problem = guard.problem(request, form.get("csrf", ""))
        index = parse_index(form.get("item", ""))
        if problem:
            return render(request, index if index is not None else next_item(),
                          notice=f"Refused: {problem}. Reload the page and submit again.", status=403)
        if index is None:
            return render(request, next_item(), notice=f"Unknown item '{form.get('item', '')}'.", status=400)
        parsed, errors = check_rating(form)
        if parsed is None:
            return render(request, index, form=form, errors=errors,
                          notice="The rating was not saved: fix the fields marked below.", status=400)
        try:
            seconds = max(0.0, min(86_400.0, round(time.time() - float(form.get("shown", "")), 3)))
        except ValueError:
            seconds = None
        save_rating(store, rater, items[index], *parsed, seconds=seconds)
        return RedirectResponse("/", status_code=303, headers=HEADERS)

    return Starlette(routes=[Route("/", show, methods=["GET"]), Route("/rate", submit, methods=["POST"])],
                     exception_handlers=store_failure_handlers(store.path),
                     middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host))])
