"""The model registry: one YAML file per model in ``local_models/``."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .backends.base import Sampling

DEFAULT_MODEL = "smollm2-135m"
HUMAN_PREFIX = "human:"
PLAYER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")


class ModelError(Exception):
    """An unknown, broken or uninstalled model entry, with the fix."""


class Weights(BaseModel):
    model_config = ConfigDict(extra="forbid")
    package: str | None = Field(None, description="Python package that ships the weights file.")
    file: str | None = Field(None, description="File name inside the package, or a path.")
    path: str | None = Field(None, description="A local HF folder or file.")
    served_name: str | None = Field(None, description="Model name on an OpenAI-compatible server.")
    hf_repo: str | None = Field(None, description="Hugging Face repository id the weights come from "
                                                  "(the entry's revision pins its commit).")
    install: str = ""


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    backend: Literal["local", "vllm", "openai", "transformers", "scripted", "human"]
    family: str
    vendor: str
    weights: Weights
    revision: str = ""
    context_length: int = 4096
    sampling: dict[str, dict[str, Any]] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict, description="Backend engine options.")
    scrub_patterns: list[str] = Field(default_factory=list, description=(
        "Regular expressions whose matches are replaced by [scrubbed] in everything recorded, "
        "stored or printed (as vcrpy's filter_headers)."))
    source_file: str = Field("", description="The entry's file, relative to the project "
                             "(never an absolute path of this machine).")

    @field_validator("scrub_patterns")
    @classmethod
    def _patterns_compile(cls, patterns: list[str]) -> list[str]:
        import re

        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"'{pattern}' is not a regular expression ({exc})") from None
        return patterns

    def recorded(self) -> dict[str, Any]:
        """The entry as a cassette header records it: secrets scrubbed, and ``weights.path``
        relative when it lies in the working directory or the project (a path elsewhere stays as
        written, since resuming a recording loads the weights from it)."""
        from .ids import project_root
        from .scrub import scrub_obj

        data = self.model_dump(mode="json")
        if data["weights"].get("path"):
            path = Path(data["weights"]["path"])
            for base in (Path.cwd(), project_root()):
                if path.is_absolute() and path.is_relative_to(base):
                    data["weights"]["path"] = path.relative_to(base).as_posix()
                    break
        return scrub_obj(data)

    def sampling_for(self, role: str, seed: int) -> Sampling:
        merged = {**self.sampling.get("default", {}), **self.sampling.get(role, {}), "seed": seed}
        return Sampling(**merged)

    def backend_options(self, schema: type[BaseModel]) -> Any:
        """``options`` validated against a backend's options model, errors naming the field."""
        try:
            return schema.model_validate(self.options)
        except ValidationError as exc:
            from .backends.base import BackendError

            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise BackendError(f"model '{self.name}' ({self.source_file}): options.{field}: "
                               f"{first['msg']}; fix: see {schema.__name__} in "
                               f"{schema.__module__}") from None

    def weights_path(self) -> Path:
        """The weights file on disk, or a clear error saying how to install it."""
        w = self.weights
        if w.package:
            spec = importlib.util.find_spec(w.package)
            if spec is None or not spec.submodule_search_locations:
                raise ModelError(f"model '{self.name}' ({self.source_file}): package '{w.package}' "
                                 f"is not installed; fix: {w.install or 'pip install ' + w.package}")
            path = Path(next(iter(spec.submodule_search_locations))) / (w.file or "")
        else:
            path = Path(os.path.expanduser(w.path or w.file or ""))
        if not path.exists():
            raise ModelError(f"model '{self.name}' ({self.source_file}): weights not found at "
                             f"{path}; fix: {w.install or 'check weights.path'}")
        return path


def models_root() -> Path:
    env = os.environ.get("VCRIME_MODELS")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "local_models"


def list_models(root: Path | None = None) -> list[ModelEntry]:
    root = root or models_root()
    return [load_model_file(p) for p in sorted(root.glob("*.yaml"))]


def load_model_file(path: Path) -> ModelEntry:
    from .ids import shown_path
    from .yamlio import describe, load_yaml

    try:
        data = load_yaml(path)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read model file ({exc.strerror}); fix: check the "
                         "path") from None
    except yaml.YAMLError as exc:
        raise ModelError(f"{path}: not a valid model file: {describe(exc)}") from None
    if not isinstance(data, dict):
        raise ModelError(f"{path}: not a valid model file: expected a mapping at the top, got "
                         f"{type(data).__name__}; fix: see local_models/smollm2-135m.yaml")
    try:
        entry = ModelEntry.model_validate({**data, "source_file": shown_path(path)})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ModelError(f"{path}: {field}: {first['msg']} ({len(exc.errors())} error(s))") from None
    from .scrub import register_entry

    register_entry(entry)
    return entry


def is_human(name: str) -> bool:
    return name.startswith(HUMAN_PREFIX)


def human_entry(name: str) -> ModelEntry:
    """The entry of a person who plays through ``vcrime-audit play`` (``human:<player>``)."""
    player = name[len(HUMAN_PREFIX):]
    if not PLAYER_NAME.fullmatch(player):
        raise ModelError(f"player name '{player}' in '{name}': use 1-32 letters, digits, '.', '_' or "
                         "'-', starting with a letter or digit")
    return ModelEntry(name=name, description=f"the person '{player}' playing through a web page",
                      backend="human", family="human", vendor="human", weights=Weights())


def get_model(name: str, root: Path | None = None) -> ModelEntry:
    if is_human(name):
        return human_entry(name)
    from .ids import IdError, check_id, inside

    root = root or models_root()
    try:
        path = inside(root, f"{check_id(name, 'model')}.yaml")
    except IdError as exc:
        raise ModelError(str(exc)) from None
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in root.glob("*.yaml"))) or "none"
        raise ModelError(f"unknown model '{name}' (no {path}); known models: {known}")
    return load_model_file(path)
