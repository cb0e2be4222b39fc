"""A re-judging plan (YAML): several re-judges scoring the same sample of recorded turns.

The sample is drawn per attacker by hash rank with the plan's seed (see :mod:`.sampling`), so
every judge of the plan scores the same turns; each judge's run is an ordinary ``rejudge``.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..defaults import DEFAULT_CASSETTES, DEFAULT_PER_ATTACKER
from ..scenario import ScenarioError
from .rejudge import RejudgeConfig


class RejudgePlan(BaseModel):
    """A re-judging plan file. Judges name models in local_models/."""

    model_config = ConfigDict(extra="forbid")
    name: str
    db: Path
    judges: list[str] = Field(min_length=1)
    per_attacker: int = Field(DEFAULT_PER_ATTACKER, ge=1)
    seed: int = 0
    max_tokens: int | None = Field(None, ge=1)
    backend: str = "local"
    concurrency: int = Field(1, ge=1)
    cassette_dir: Path = DEFAULT_CASSETTES

    @field_validator("judges")
    @classmethod
    def _distinct(cls, judges: list[str]) -> list[str]:
        repeated = sorted({j for j in judges if judges.count(j) > 1})
        if repeated:
            raise ValueError(f"judge listed twice: {', '.join(repeated)}")
        return judges

    def configs(self) -> list[RejudgeConfig]:
        """One ``rejudge`` per judge, all with the plan's sample size and seed."""
        return [RejudgeConfig(judge=j, per_attacker=self.per_attacker, seed=self.seed,
                              max_tokens=self.max_tokens) for j in self.judges]


def load_rejudge_plan(path: Path) -> RejudgePlan:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        return RejudgePlan.model_validate(data)
    except OSError as exc:
        raise ScenarioError(path, "", f"cannot read plan file: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(path, "", f"invalid YAML: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        field_path = ".".join(str(p) for p in first["loc"])
        raise ScenarioError(path, field_path, first["msg"],
                            "see RejudgePlan in vcrime_audit/followups/plan.py") from None
