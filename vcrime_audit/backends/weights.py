"""Fingerprints of a model folder's weights. The two differ on purpose: each is part of the
backend fingerprint in the cassette key of every call recorded with its backend, so changing
either would make those cassettes miss on replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..canonical import content_hash, file_blake2b


def folder_digest(folder: Path) -> dict[str, Any]:
    """The vllm backend's: blake2b of every top-level file (config, weights, tokenizer, chat
    template; not dot-files or .md) by name and size; where the folder lies and what it is called
    do not count."""
    files = sorted(p for p in folder.iterdir()
                   if p.is_file() and not p.name.startswith(".") and p.suffix != ".md")
    listed = [[path.name, path.stat().st_size, file_blake2b(path)] for path in files]
    return {"files": len(listed), "bytes": sum(f[1] for f in listed),
            "blake2b": content_hash(listed, 16)}


def folder_file_hashes(folder: Path) -> dict[str, Any]:
    """The transformers backend's: the folder's name and the blake2b of every file below it (any
    depth, not under a dot-folder), by relative path."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not any(
        part.startswith(".") for part in p.relative_to(folder).parts))
    return {"folder": folder.name,
            "files": {p.relative_to(folder).as_posix(): file_blake2b(p) for p in files}}
