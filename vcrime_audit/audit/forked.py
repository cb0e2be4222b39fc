"""One function computed by a forked child while this process goes on with the rest of the audit."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def can_fork() -> bool:
    """A second CPU to run the child on, and an OS that forks (the child inherits the audit's
    data instead of being sent it)."""
    return (os.cpu_count() or 1) > 1 and "fork" in multiprocessing.get_all_start_methods()


def _run(send: Any, function: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> None:
    try:
        value = function(*args, **kwargs)
    except BaseException:  # noqa: BLE001 -- the parent computes it again, and the error surfaces there
        send.send((False, None))
    else:
        send.send((True, value))
    send.close()


class Forked(Generic[T]):
    """``function(*args, **kwargs)``, computed by a forked child where :func:`can_fork`, else here
    when :meth:`result` is first asked for. Same code on the same data: the same value either
    way. A child that fails is computed again here, so its error surfaces as usual."""

    def __init__(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> None:
        self._call = (function, args, kwargs)
        self._value: tuple[T] | None = None
        self._child: Any = None
        self._receive: Any = None
        if can_fork():
            context = multiprocessing.get_context("fork")
            self._receive, send = context.Pipe(duplex=False)
            self._child = context.Process(target=_run, args=(send, function, args, kwargs), daemon=True)
            self._child.start()
            send.close()

    def result(self) -> T:
        if self._value is None:
            self._value = (self._compute(),)
        return self._value[0]

    def _compute(self) -> T:
        child, receive, self._child = self._child, self._receive, None
        if child is not None:
            try:
                ok, value = receive.recv()  # before join: a big value fills the pipe until read
            except EOFError:  # the child died without answering
                ok, value = False, None
            receive.close()
            child.join()
            if ok and child.exitcode == 0:
                return value
        function, args, kwargs = self._call
        return function(*args, **kwargs)

    def cancel(self) -> None:
        """Stop the child: nothing it does happens after this returns."""
        child, self._child = self._child, None
        if child is not None:
            child.terminate()
            child.join()
            self._receive.close()
