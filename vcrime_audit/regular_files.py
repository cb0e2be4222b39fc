"""Reading a file a person named, refusing what is not a regular file before reading from it: a
FIFO blocks the command until something writes into it, and a device such as /dev/zero never
ends (read whole, it takes all memory); and telling why a file could not be written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class NotARegularFile(OSError):
    """A path that names a FIFO, a device or a socket; ``strerror`` says which."""


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def not_regular(path: Path) -> str:
    """What ``path`` is where it exists and is neither a regular file nor a folder (e.g. "a
    FIFO, not a regular file"), else ``""``. Follows symbolic links."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return ""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return ""
    return f"{_kind(mode)}, not a regular file"


def not_writable(path: Path) -> str:
    """Why SQLite could not write ``path`` (and the -wal and -shm files beside it); '' if it can."""
    try:
        places = (path.parent, path) if path.exists() else (path.parent,)
    except OSError:  # a name too long, say: opening it names the problem
        return ""
    for place in places:
        if not os.access(place, os.W_OK):
            try:
                read_only = bool(os.statvfs(place).f_flag & os.ST_RDONLY)
            except OSError:
                read_only = False
            return "a read-only file system" if read_only else f"no permission to write {place}"
    return ""


def read_regular(path: Path, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the regular file ``path`` (one more than a caller takes, so
    it can tell a file over its limit). Raises IsADirectoryError for a folder, and
    :class:`NotARegularFile` for anything else that is not a regular file, without waiting on
    it (opened non-blocking, checked on the open descriptor)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(status.st_mode):
            raise NotARegularFile(22, f"{_kind(status.st_mode)}, not a regular file", str(path))
        # its size is only where to start: a file may grow, and /proc's files say they hold none
        parts = [os.read(fd, min(status.st_size, limit) + 1)]
        got = len(parts[0])
        while got <= limit:
            more = os.read(fd, min(limit + 1 - got, 1 << 24))
            if not more:
                break
            parts.append(more)
            got += len(more)
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)
