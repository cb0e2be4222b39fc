"""A scripted registry and a small scripted study, for the study tests (no model, real stores)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vcrime_audit.study import StudyConfig

TASKS = ["robotics_company__data_theft", "robotics_company__theft", "private_club__theft"]


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """Scripted registry entries; spawned workers inherit VCRIME_MODELS from the environment."""
    models = tmp_path / "local_models"
    models.mkdir()
    for name in ("scripted-attacker", "scripted-judge", "scripted-wm"):
        entry = {"name": name, "description": "Scripted answers (no model); tests only.",
                 "backend": "scripted", "family": name, "vendor": "scripted",
                 "weights": {"install": "nothing to install"}}
        (models / f"{name}.yaml").write_text(yaml.safe_dump(entry), encoding="utf-8")
    monkeypatch.setenv("VCRIME_MODELS", str(models))
    return models


def scripted_spec(folder: Path, concurrency: int = 4, **changes) -> StudyConfig:
    folder.mkdir(parents=True, exist_ok=True)
    fields = {"name": "scripted-test", "attackers": ["scripted-attacker"], "judge": "scripted-judge",
              "world_manager": "scripted-wm", "backend": "scripted", "tasks": TASKS, "seeds": [0, 1],
              "max_turns": 3, "stall_turns": 30, "concurrency": concurrency,
              "db": folder / "study.sqlite", "cassette_dir": folder / "cassettes", **changes}
    return StudyConfig(**fields)
