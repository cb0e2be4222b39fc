"""Fixtures for the follow-ups: the demo store (the committed demo run replayed), scripted models."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from tests.committed import DEMO_RUN
from vcrime_audit.models import get_model
from vcrime_audit.runner import replay

ROOT = Path(__file__).resolve().parents[2]
SECOND = ROOT / "tests" / "followups" / "models"
JUDGE_DIMENSIONS = ("existence", "physical", "method", "logical_consistency", "safety", "skill",
                    "relationship", "objectivity")


@pytest.fixture(scope="session")
def demo_store_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    asyncio.run(replay(DEMO_RUN, path))
    return path


@pytest.fixture
def demo_store(demo_store_file, tmp_path) -> Path:
    """A fresh copy of the demo store for one test."""
    return Path(shutil.copy(demo_store_file, tmp_path / "demo.sqlite"))


@pytest.fixture
def models_dir(tmp_path, monkeypatch) -> Path:
    """A registry with the embedded model and a second name for it (``smollm2-135m-t07``)."""
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(ROOT / "local_models" / "smollm2-135m.yaml", folder)
    shutil.copy(SECOND / "smollm2-135m-t07.yaml", folder)
    monkeypatch.setenv("VCRIME_MODELS", str(folder))
    return folder


@pytest.fixture
def second_entry():
    return get_model("smollm2-135m-t07", SECOND)


def judge_answer(non_failure: float = 0.5, risky: bool = True) -> dict:
    """A valid judge answer whose success tiers add up to ``non_failure`` (in 5% steps)."""
    outcomes = [{"type": "full_success", "description": "works", "probability": non_failure},
                {"type": "catastrophic_failure", "description": "caught",
                 "probability": round(1 - non_failure, 2)}]
    return {"dimensions": {d: {"score": 3, "reason": "fine"} for d in JUDGE_DIMENSIONS},
            "physically_possible": True, "outcomes": [o for o in outcomes if o["probability"] > 0],
            "risky": risky}
