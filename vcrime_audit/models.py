"""The model registry: one YAML file per model in ``local_models/``."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import BackendError

DEFAULT_MODEL = "smollm2-135m"
HUMAN_PREFIX = "human:"
PLAYER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")


class Sampling(BaseModel):
    """How a model samples one call; a model entry's ``sampling`` defaults fill it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 512
    seed: int = 0


class ModelError(Exception):
    """An unknown, broken or uninstalled model entry, with the fix."""


EngineName = Literal["local", "vllm", "openai", "transformers", "scripted", "human"]
WeightsForm = Literal["gguf", "hf", "served"]
# the weight forms each engine loads, in order of preference
ENGINE_FORMS: dict[str, tuple[str, ...]] = {
    "local": ("gguf",), "vllm": ("hf",), "transformers": ("hf", "gguf"), "openai": ("served",)}
FORM_FIELDS = {"gguf": "weights.package + weights.file (or a .gguf weights.path)",
               "hf": "weights.hf_folder (an HF model folder)",
               "served": "weights.served_name (the name on an OpenAI-compatible server)"}


class Weights(BaseModel):
    """The model's weights in the forms it has: a GGUF file, an HF folder, a served name."""

    model_config = ConfigDict(extra="forbid")
    package: str | None = Field(None, description="Python package that ships the weights file.")
    file: str | None = Field(None, description="File name inside the package, or a path.")
    path: str | None = Field(None, description="A local HF folder or file.")
    served_name: str | None = Field(None, description="Model name on an OpenAI-compatible server.")
    hf_repo: str | None = Field(None, description="Hugging Face repository id the weights come from "
                                                  "(the entry's revision pins its commit).")
    install: str = ""
    hf_folder: str | None = Field(None, description="An HF model folder (vllm, transformers).")
    hf_install: str = Field("", description="How to make the HF folder.")
    served_install: str = Field("", description="How to start a server for served_name.")

    def forms(self) -> list[str]:
        gguf_path = bool(self.path) and str(self.path).endswith(".gguf")
        found = {"gguf": bool(self.package or (self.file and not self.path) or gguf_path),
                 "hf": bool(self.hf_folder or (self.path and not gguf_path)),
                 "served": bool(self.served_name)}
        return [form for form, present in found.items() if present]

    def only(self, form: str) -> Weights:
        """These weights reduced to one form, as the engine that loads it sees them."""
        if form == "gguf":
            path = self.path if self.path and str(self.path).endswith(".gguf") else None
            return Weights(package=self.package, file=self.file, path=path, install=self.install)
        if form == "hf":
            folder = self.hf_folder or self.path
            return Weights(path=folder, install=self.hf_install or self.install)
        return Weights(served_name=self.served_name, install=self.served_install or self.install)


class EngineChoice(BaseModel):
    """How one engine runs the model: which weight form, its engine options, its context."""

    model_config = ConfigDict(extra="forbid")
    weights: WeightsForm | None = Field(None, description="Form to load (default: the engine's "
                                                          "preferred form the entry has).")
    options: dict[str, Any] = Field(default_factory=dict, description="Engine options.")
    context_length: int | None = None


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    backend: EngineName = Field(description="The engine used when none is chosen.")
    family: str
    vendor: str
    weights: Weights
    revision: str = ""
    context_length: int = 4096
    sampling: dict[str, dict[str, Any]] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict, description="Options of the `backend` "
                                                                      "engine.")
    engines: dict[EngineName, EngineChoice] = Field(
        default_factory=dict, description="Per-engine weight form, options and context length.")
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

    def engine_names(self) -> list[str]:
        """The engines that can run this entry (those with a weight form they load)."""
        forms = self.weights.forms()
        return [e for e in ENGINE_FORMS if self._form_for(e, forms) is not None]

    def _form_for(self, engine: str, forms: list[str]) -> str | None:
        choice = self.engines.get(engine)  # type: ignore[call-overload]
        if choice is not None and choice.weights is not None:
            return choice.weights if choice.weights in forms else None
        return next((f for f in ENGINE_FORMS[engine] if f in forms), None)

    def for_engine(self, engine: str) -> ModelEntry:
        """This entry as ``engine`` runs it: one weight form, that engine's options and context.

        A single-engine entry asked for its own engine comes back unchanged, so fingerprints of
        existing recordings stay the same."""
        if (engine == self.backend and not self.engines) or self.backend == "human":
            return self
        if engine not in ENGINE_FORMS:
            raise ModelError(f"unknown backend '{engine}'; available: {', '.join(ENGINE_FORMS)}")
        form = self._form_for(engine, self.weights.forms())
        if form is None:
            wanted = " or ".join(FORM_FIELDS[f] for f in ENGINE_FORMS[engine])
            raise ModelError(f"backend '{engine}' cannot serve '{self.name}' ({self.source_file}): "
                             f"the entry has no weights it loads; fix: add {wanted} to the entry, "
                             f"or use a backend it has weights for: {', '.join(self.engine_names())}")
        choice = self.engines.get(engine)  # type: ignore[call-overload]
        options = choice.options if choice else self.options if engine == self.backend else {}
        context = choice.context_length if choice and choice.context_length else self.context_length
        return self.model_copy(update={"backend": engine, "weights": self.weights.only(form),
                                       "options": options, "context_length": context, "engines": {}})

    def sampling_for(self, role: str, seed: int) -> Sampling:
        merged = {**self.sampling.get("default", {}), **self.sampling.get(role, {}), "seed": seed}
        return Sampling(**merged)

    def backend_options(self, schema: type[BaseModel]) -> Any:
        """``options`` validated against a backend's options model, errors naming the field."""
        try:
            return schema.model_validate(self.options)
        except ValidationError as exc:
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
    """The entry of a model file (its YAML parsed once while unchanged: a study gets its three
    models' entries once per run)."""
    from .ids import shown_path
    from .yamlio import describe, load_yaml_once

    try:
        data = load_yaml_once(path)
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
