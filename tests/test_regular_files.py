"""Files a person names are read only when they are regular files: a FIFO or a device is refused
before anything is read from it, so no command waits on one or reads one without end."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vcrime_audit.regular_files import NotARegularFile, not_regular, read_regular


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_a_regular_file_is_read_up_to_one_byte_past_the_limit(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    assert read_regular(path, 100) == b"0123456789"
    assert read_regular(path, 4) == b"01234"
    link = tmp_path / "link"
    link.symlink_to(path)
    assert read_regular(link, 100) == b"0123456789" and not_regular(link) == ""


def test_a_fifo_with_no_writer_is_refused_at_once(fifo):
    with pytest.raises(NotARegularFile, match="a FIFO, not a regular file"):
        read_regular(fifo, 10)
    assert not_regular(fifo) == "a FIFO, not a regular file"


def test_a_device_that_never_ends_is_refused_unread():
    with pytest.raises(NotARegularFile, match="a character device, not a regular file"):
        read_regular(Path("/dev/zero"), 10)
    assert not_regular(Path("/dev/zero")) == "a character device, not a regular file"


def test_a_folder_and_a_missing_path(tmp_path):
    with pytest.raises(IsADirectoryError):
        read_regular(tmp_path, 10)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "absent", 10)
    assert not_regular(tmp_path) == "" and not_regular(tmp_path / "absent") == ""


def test_no_descriptor_is_left_open(tmp_path, fifo):
    before = len(os.listdir("/proc/self/fd"))
    for path in (fifo, Path("/dev/zero"), tmp_path):
        with pytest.raises(OSError):
            read_regular(path, 10)
    (tmp_path / "f").write_bytes(b"x")
    read_regular(tmp_path / "f", 10)
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_file_that_says_it_holds_nothing_is_read_to_its_end():
    """/proc's files report a size of 0; the size only says where the reading starts."""
    text = Path("/proc/self/status").read_bytes()
    assert os.stat("/proc/self/status").st_size == 0
    assert read_regular(Path("/proc/self/status"), 1 << 20)[:5] == text[:5] == b"Name:"
    assert len(read_regular(Path("/proc/self/status"), 1 << 20)) > 100

