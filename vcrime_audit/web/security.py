"""Safe defaults shared by the pages: a session cookie with a CSRF token, host and origin checks,
strict response headers, and an autoescaping template environment."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.datastructures import ImmutableMultiDict
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

COOKIE = "vcrime_session"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" would make forms send Origin: null
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def templates() -> Environment:
    """Every ``{{ value }}`` is HTML-escaped (model output and player input included)."""
    return Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"),
                       autoescape=select_autoescape(default=True, default_for_string=True),
                       trim_blocks=True, lstrip_blocks=True)


class Guard:
    """A per-session CSRF token: an HMAC of the session cookie under a per-server secret."""

    def __init__(self, secret: bytes | None = None) -> None:
        self.secret = secret or secrets.token_bytes(32)

    def session(self, request: Request) -> tuple[str, bool]:
        """The request's session id, and whether it is new (then the response must set it)."""
        sid = request.cookies.get(COOKIE, "")
        if len(sid) == 43 and sid.replace("-", "").replace("_", "").isalnum():
            return sid, False
        return secrets.token_urlsafe(32), True

    def token(self, sid: str) -> str:
        return hmac.new(self.secret, sid.encode(), hashlib.sha256).hexdigest()

    def problem(self, request: Request, form_token: str) -> str:
        """Why a POST must be refused, or '' when it comes from our own page in this session."""
        origin = request.headers.get("origin")
        host = request.headers.get("host", "")
        if origin is not None and origin not in (f"http://{host}", f"https://{host}"):
            return f"the form was sent from another site ({origin})"
        sid = request.cookies.get(COOKIE, "")
        if not sid or not hmac.compare_digest(self.token(sid), form_token or ""):
            return "the form's security token does not match this browser session"
        return ""

    def respond(self, html: str, sid: str, new: bool, status: int = 200,
                started: float | None = None) -> HTMLResponse:
        """The page with the safe headers; ``Server-Timing`` says how long it took to make."""
        headers = dict(HEADERS)
        if started is not None:
            headers["Server-Timing"] = f"page;dur={1000 * (time.perf_counter() - started):.2f}"
        response = HTMLResponse(html, status_code=status, headers=headers)
        if new:
            response.set_cookie(COOKIE, sid, httponly=True, samesite="strict", path="/")
        return response


FORM_TYPE = "application/x-www-form-urlencoded"
MAX_FORM_FIELDS = 64
FORM_REFUSALS = {400: "The form could not be read (not UTF-8, or too many fields).",
                 413: "The form is too large; shorten the texts.",
                 415: "Only this page's own form can be sent here."}


async def read_form(request: Request, limit: int) -> tuple[ImmutableMultiDict | None, int]:
    """The posted form and 200, or None and the status that refuses it (see
    :data:`FORM_REFUSALS`): read as it arrives and refused past ``limit`` bytes whatever
    Content-Length says (a chunked body has none), and only as our pages send it, URL-encoded
    (a multipart body may hold files)."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != FORM_TYPE:
        return None, 415
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None, 413
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except ValueError:  # UnicodeDecodeError is one
        return None, 400
    return ImmutableMultiDict(pairs), 200


def allowed_hosts(host: str) -> list[str]:
    return sorted({*LOOPBACK, host} | ({"*"} if host in ("0.0.0.0", "::") else set()))


def store_failure_handlers(path: Path) -> dict[Any, Callable[[Request, Exception], Response]]:
    """Starlette exception handlers for what SQLite raises on the page's store (a damaged page, a
    lock held too long): a 503 page with the one line that names the store and the fix, in place
    of a bare 500. Nothing the request was to save is saved (its transaction rolled back)."""
    from html import escape

    from ..store.errors import store_error

    def handler(request: Request, exc: Exception) -> Response:
        line = str(store_error(path, exc))
        print(f"error     {line}", flush=True)
        what = "Nothing was saved. " if request.method == "POST" else ""
        return HTMLResponse(f"<!doctype html><title>Store unavailable</title><p id=store-error>{what}"
                            f"{escape(line)}</p>", status_code=503, headers=HEADERS)

    return {sqlite3.DatabaseError: handler}
