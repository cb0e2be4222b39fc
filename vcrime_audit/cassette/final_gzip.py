"""The final cassette file, compressed as its lines come (and the lines a cassette keeps for it)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from .lines import Line, claimed_checksum, line_bytes, split_lines

GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
"""What ``gzip.GzipFile(filename="", mtime=0, compresslevel=9)`` writes first: deflate, no name,
no time, best compression (XFL 2), unknown system (255)."""


class FinalGzip:
    """The final cassette's bytes, compressed as the lines come: what ``gzip.GzipFile``
    (``filename=""``, ``mtime=0``, level 9) writes for all the lines at once, because deflate's
    output does not depend on how its input is cut (``tests/cassette/test_persist.py``). ~270 KB
    of deflate state while it is open."""

    def __init__(self, lines: Sequence[Line] = ()) -> None:
        self._deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS, zlib.DEF_MEM_LEVEL, 0)
        self._parts = [GZIP_HEADER]
        self._crc = 0
        self._size = 0
        self.add(lines)

    def add(self, lines: Sequence[Line]) -> None:
        if not lines:
            return
        data = lines_bytes(lines)
        self._crc = zlib.crc32(data, self._crc)
        self._size += len(data)
        self._parts.append(self._deflate.compress(data))

    def bytes(self, more: Sequence[Line] = ()) -> bytes:
        """The gzip file of the lines added so far and ``more`` (which are not added)."""
        deflate, data = self._deflate.copy(), lines_bytes(more)
        trailer = struct.pack("<II", zlib.crc32(data, self._crc), (self._size + len(data)) & 0xFFFFFFFF)
        return b"".join([*self._parts, deflate.compress(data), deflate.flush(), trailer])


def lines_bytes(lines: Sequence[Line]) -> bytes:
    """Lines as a cassette file holds them: each ended by a newline, UTF-8."""
    return b"".join(line_bytes(line) + b"\n" for line in lines)


class WrittenLines:
    """The record lines of a cassette, as little of them as it needs kept: each line's claimed
    checksum (the summary's chain is made of them), and the text only until the cassette
    records; from then on the lines are compressed into the final file as they come
    (:class:`FinalGzip`). A recording job so keeps ~1 KB a call, not its ~14 KB line, and its
    end compresses only the summary. A cassette that only replays keeps its text, as read."""

    def __init__(self) -> None:
        self.checksums: list[str] = []
        self._text: list[Line] = []
        self._final: FinalGzip | None = None

    def __len__(self) -> int:
        return len(self.checksums)

    def add(self, lines: Sequence[Line], compress: bool = True) -> None:
        self.checksums.extend(map(claimed_checksum, lines))
        self._text.extend(lines)
        if compress:
            self._compressed()

    def _compressed(self) -> FinalGzip:
        if self._final is None:
            self._final = FinalGzip()
        if self._text:
            self._final.add(self._text)
            self._text = []
        return self._final

    def lines(self) -> list[bytes]:
        """Every line's bytes (what is compressed, decompressed again)."""
        kept = list(map(line_bytes, self._text))
        if self._final is None:
            return kept
        return split_lines(zlib.decompress(self._final.bytes(), wbits=31))[:-1] + kept

    def final_bytes(self, more: Sequence[Line] = ()) -> bytes:
        """The final file: every line, then ``more`` (the summary), compressed."""
        return self._compressed().bytes(more)
