"""Serve a Starlette app with uvicorn on a port the OS picks, and say where."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

LOOPBACK_HOST = "127.0.0.1"


def bind(host: str, port: int = 0) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ValueError(f"--host {host}: cannot listen there ({exc.strerror}); fix: pass an "
                         "address of this machine, or leave --host out for 127.0.0.1") from None
    sock.listen(64)
    return sock


def url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


async def serve(app: Callable[..., Awaitable[None]], sock: socket.socket) -> None:
    """Until Ctrl+C (uvicorn's signal handling)."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])
