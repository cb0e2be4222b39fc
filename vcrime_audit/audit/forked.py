"""Functions computed by forked children while this process goes on with the rest of the audit.

:class:`Forked` forks once its input exists: the child inherits it. :class:`Prepared` forks at
once, so that the child's imports and compiling overlap this process's loading, and is sent its
input (pickled) later. Either way, a child that fails or cannot be started is replaced by computing
the same function here, so the value, or the error, is the one this process would have had.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def can_fork() -> bool:
    """A second CPU to run the child on, and an OS that forks (the child inherits the audit's
    data instead of being sent it)."""
    return (os.cpu_count() or 1) > 1 and "fork" in multiprocessing.get_all_start_methods()


def _answer(send: Any, function: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> None:
    try:
        value = function(*args, **kwargs)
    except BaseException:  # noqa: BLE001 -- the parent computes it again, and the error surfaces there
        send.send((False, None))
    else:
        send.send((True, value))
    send.close()


def _prepare_then_answer(prepare: Callable[[], Any] | None, arguments: Any, parents_end: Any, send: Any,
                         function: Callable[..., Any]) -> None:
    parents_end.close()  # else the arguments pipe never ends here: this child would hold it open
    try:
        if prepare is not None:
            _take_steps(prepare(), arguments)
    except Exception:  # noqa: BLE001, S110 -- only a head start: the function does it again if it must
        pass
    try:
        args, kwargs = arguments.recv()
    except EOFError:  # no input is coming (the parent could not send it, or gave up)
        return
    _answer(send, function, args, kwargs)


def _take_steps(steps: Any, arguments: Any) -> None:
    """A preparation that came back as an iterator is taken a step at a time, until its input
    has arrived: what is left then is done only as the function needs it."""
    if isinstance(steps, Iterator):
        for _ in steps:
            if arguments.poll():
                return


@contextmanager
def _frozen() -> Iterator[None]:
    """Fork inside this: the parent's objects are frozen meanwhile, so that the child's cycle
    collector never walks (and so copies) the pages it inherited (Python's gc.freeze docs)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _fork(target: Callable[..., None], *args: Any) -> Any:
    """A started child (:func:`_frozen`)."""
    child = multiprocessing.get_context("fork").Process(target=target, args=args, daemon=True)
    with _frozen():
        child.start()
    return child


class _Child(Generic[T]):
    def __init__(self) -> None:
        self._call: tuple[Callable[..., T], tuple, dict[str, Any]] | None = None
        self._value: tuple[T] | None = None
        self._child: Any = None
        self._receive: Any = None

    def result(self) -> T:
        if self._value is None:
            self._value = (self._compute(),)
        return self._value[0]

    def _compute(self) -> T:
        if self._call is None:
            raise RuntimeError("result() of a Prepared job that was never started")
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


class Forked(_Child[T]):
    """``function(*args, **kwargs)``, computed by a child forked now where :func:`can_fork`, else
    here when :meth:`result` is first asked for. Same code on the same data: the same value either
    way."""

    def __init__(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self._call = (function, args, kwargs)
        if can_fork():
            self._receive, send = multiprocessing.Pipe(duplex=False)
            self._child = _fork(_answer, send, function, args, kwargs)
            send.close()


class Prepared(_Child[T]):
    """A child forked now that runs ``prepare()`` (if given) at once (imports, compiling: work that
    needs no input), then computes ``function(*args, **kwargs)`` once :meth:`start` sends it the arguments.
    A ``prepare`` that returns an iterator (a generator) is taken a step at a time and left as
    soon as the arguments are there: work that only may be needed is done while the child waits,
    and never keeps the function waiting for more than one step.
    Without :func:`can_fork`, nothing is prepared and the function is computed here when
    :meth:`result` is first asked for. ``prepare`` must change nothing the function's value depends
    on: a failure there is ignored."""

    def __init__(self, prepare: Callable[[], Any] | None, function: Callable[..., T]) -> None:
        super().__init__()
        self._function = function
        self._send_arguments: Any = None
        self._sending: threading.Thread | None = None
        self._sent: list[bool] = []
        if can_fork():
            self._receive, send = multiprocessing.Pipe(duplex=False)
            arguments, self._send_arguments = multiprocessing.Pipe(duplex=False)
            self._child = _fork(_prepare_then_answer, prepare, arguments, self._send_arguments, send,
                                function)
            send.close()
            arguments.close()

    def start(self, *args: Any, **kwargs: Any) -> None:
        """Send the arguments (pickled, from a thread: the child reads them only once prepared)."""
        self._call = (self._function, args, kwargs)
        sender, self._send_arguments = self._send_arguments, None
        if sender is not None:
            self._sending = threading.Thread(target=_send, args=(sender, (args, kwargs), self._sent),
                                             daemon=True)
            self._sending.start()

    def _compute(self) -> T:
        if self._sending is not None:
            self._sending.join()
            if not self._sent:  # the child was sent nothing (and may wait for it): computed here
                self.cancel()
        return super()._compute()

    def cancel(self) -> None:
        super().cancel()
        if self._send_arguments is not None:
            self._send_arguments.close()
            self._send_arguments = None


def _send(connection: Any, message: Any, sent: list[bool]) -> None:
    """``sent`` gets True once the message is in the pipe."""
    try:
        connection.send(message)
    except Exception:  # noqa: BLE001, S110 -- unpicklable, or the child is gone: the parent computes
        pass           # the value itself
    else:
        sent.append(True)
    finally:
        connection.close()
