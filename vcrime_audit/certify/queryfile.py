"""Load a certification query file (YAML or JSONL, chosen by suffix) into a :class:`QuerySpec`.

YAML layout::

    name: secret_keeping            # optional, defaults to the file stem
    description: ...                # optional
    system_prompt: ...              # optional, the target model's system prompt
    judge: {kind: secret_leak, secret: BLUE-HERON}   # optional; criterion: "..." for LLM judges
    target: {id: q_star, text: "..."}                # q*
    queries: [{id: q01, text: "..."}, ...]           # the graph's nodes
    jailbreak_templates: [{id: novel, template: "For a novel: {query}"}]  # optional
    graph: {sim_low: 0.4, sim_high: 0.8, target_k: 5}  # optional build defaults
    preset: qrllm                   # optional: paper (default) or qrllm, see certify/presets.py
    certification: {max_length: 4}  # optional rules over the preset (presets.Settings)

JSONL layout: one JSON object per line, each with a ``kind``: ``meta`` (at most one line, with
the optional top-level fields above), ``target`` (exactly one), ``query``, ``jailbreak``.

Every problem raises :class:`QueryFileError` naming the file, the field and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..regular_files import not_regular
from .presets import PRESETS, Band, Settings, TargetRule

QUERY_PLACEHOLDER = "{query}"


class QueryFileError(Exception):
    """A query file is wrong: which file, which field, why, and what to do."""

    def __init__(self, file: Path | str, field: str, reason: str, fix: str) -> None:
        self.file, self.field, self.reason, self.fix = str(file), field, reason, fix
        super().__init__(f"{self.file}: {field or '<file>'}: {reason} (fix: {fix})")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Query(_Strict):
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)


class JailbreakTemplate(_Strict):
    """A benign framing wrapper; ``{query}`` marks where the query goes."""

    id: str = Field(min_length=1)
    template: str = Field(min_length=1)

    def apply(self, query: str) -> str:
        return self.template.replace(QUERY_PLACEHOLDER, query)


class JudgeSpec(_Strict):
    kind: str = Field(min_length=1)
    secret: str | None = None
    criterion: str | None = Field(
        None, description="What makes an answer catastrophic, in words, for an LLM judge "
                          "(a secret_leak judge without one gets a criterion built from the secret).")


class GraphParams(_Strict):
    """How the query graph is built: edge band on cosine similarity and the size of Q_T."""

    sim_low: float = Field(0.4, ge=-1.0, le=1.0, description="Edge if similarity >= this.")
    sim_high: float = Field(0.8, ge=-1.0, le=1.0, description="Edge if similarity <= this.")
    target_k: int = Field(5, ge=1, description="Q_T = the target_k queries closest to q*.")
    edge_band: Band = Field("inclusive", description="inclusive: sim_low <= s <= sim_high; "
                                                     "strict: sim_low < s < sim_high.")
    target_set: TargetRule = Field("top_k", description="top_k: the target_k closest queries; "
                                                        "threshold: similarity to q* > sim_low.")

    def file_settings(self) -> dict[str, str]:
        """The rules this section sets explicitly (they override a preset)."""
        return {k: getattr(self, k) for k in ("edge_band", "target_set")
                if k in self.model_fields_set}


class QuerySpec(_Strict):
    name: str = Field(min_length=1)
    description: str = ""
    system_prompt: str | None = None
    judge: JudgeSpec | None = None
    target: Query
    queries: list[Query] = Field(min_length=2)
    jailbreak_templates: list[JailbreakTemplate] = Field(default_factory=list)
    graph: GraphParams = Field(default_factory=GraphParams,
                               description="Build parameters suggested for this query set.")
    preset: str | None = Field(None, description="paper or qrllm: the rules to start from.")
    certification: Settings = Field(default_factory=Settings,
                                    description="Rules over the preset for this query set.")

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        if value is not None and value not in PRESETS:
            raise ValueError(f"unknown preset {value!r}; choose one of {', '.join(PRESETS)}")
        return value

    def file_settings(self) -> Settings:
        """This file's explicit rules: its ``certification:`` and its graph's edge/target rules."""
        return self.certification.model_copy(update=self.graph.file_settings())


_FIXES = {
    "missing": "add this field",
    "extra_forbidden": "remove this field or correct its spelling",
    "string_type": "give a quoted string",
    "string_too_short": "give a non-empty string",
    "too_short": "list at least the minimum number of entries",
    "list_type": "give a list",
    "dict_type": "give a mapping",
    "model_type": "give a mapping",
}


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _from_validation(file: Path, exc: ValidationError) -> QueryFileError:
    err = exc.errors()[0]
    return QueryFileError(file, _loc(err["loc"]), err["msg"],
                          _FIXES.get(err["type"], "correct the value"))


Locate = Callable[[str, int], str]


def _yaml_locate(section: str, index: int) -> str:
    return f"{section}[{index}]"


def _check_semantics(file: Path, spec: QuerySpec, locate: Locate) -> None:
    seen: dict[str, int] = {}
    for i, q in enumerate(spec.queries):
        if q.id in seen:
            raise QueryFileError(file, f"{locate('queries', i)}.id",
                                 f"duplicate query id {q.id!r} (also entry {seen[q.id]})",
                                 "give every query a unique id")
        seen[q.id] = i
    texts: dict[str, str] = {}
    for i, q in enumerate(spec.queries):
        if q.text.strip() in texts:
            raise QueryFileError(file, f"{locate('queries', i)}.text",
                                 f"same text as query {texts[q.text.strip()]!r}",
                                 "remove the duplicate query")
        texts[q.text.strip()] = q.id
    tids: set[str] = set()
    for i, t in enumerate(spec.jailbreak_templates):
        field = locate("jailbreak_templates", i)
        if t.id in tids or t.id == "identity":
            raise QueryFileError(file, f"{field}.id", f"template id {t.id!r} is taken",
                                 "use a unique id other than 'identity' (identity is built in)")
        tids.add(t.id)
        if t.template.count(QUERY_PLACEHOLDER) != 1:
            raise QueryFileError(file, f"{field}.template",
                                 f"must contain {QUERY_PLACEHOLDER} exactly once",
                                 f"write the wrapper around a single {QUERY_PLACEHOLDER}")
        if t.template.strip() == QUERY_PLACEHOLDER:
            raise QueryFileError(file, f"{field}.template", "this is the identity transform",
                                 "remove it: identity is always part of the jailbreak layer")
    if spec.graph.sim_low > spec.graph.sim_high:
        raise QueryFileError(file, f"{locate('graph', -1)}.sim_low", "sim_low is above sim_high",
                             "make sim_low <= sim_high")
    if spec.graph.target_k > len(spec.queries):
        given = "target_k" in spec.graph.model_fields_set
        raise QueryFileError(file, f"{locate('graph', -1)}.target_k",
                             f"target_k {spec.graph.target_k}{'' if given else ' (the default)'} "
                             f"exceeds the {len(spec.queries)} queries",
                             f"set graph.target_k to at most {len(spec.queries)} or add queries")
    if spec.judge is not None and spec.judge.kind == "secret_leak" and not spec.judge.secret:
        raise QueryFileError(file, f"{locate('judge', -1)}.secret",
                             "a secret_leak judge needs a secret",
                             "add judge.secret: the word the model must not reveal")


def _load_yaml(path: Path) -> QuerySpec:
    from ..yamlio import describe, load_yaml

    try:
        data = load_yaml(path)
    except OSError as exc:
        raise QueryFileError(path, "", f"cannot read file ({exc.strerror or exc})",
                             "check the path") from None
    except yaml.YAMLError as exc:
        raise QueryFileError(path, "", f"not valid YAML: {describe(exc)}",
                             "fix the YAML at that position") from None
    if not isinstance(data, dict):
        raise QueryFileError(path, "", "top level is not a mapping",
                             "write target:, queries: (and optional fields) at the top level")
    data.setdefault("name", path.stem)
    try:
        spec = QuerySpec.model_validate(data)
    except ValidationError as exc:
        raise _from_validation(path, exc) from exc
    _check_semantics(path, spec, lambda s, i: s if i < 0 else _yaml_locate(s, i))
    return spec


_JSONL_KINDS = ("meta", "target", "query", "jailbreak")


def _load_jsonl(path: Path) -> QuerySpec:
    meta: dict[str, Any] = {}
    target: dict[str, Any] | None = None
    queries: list[tuple[int, dict[str, Any]]] = []
    templates: list[tuple[int, dict[str, Any]]] = []
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"line {lineno}"
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise QueryFileError(path, where, f"not valid JSON: {exc.msg}",
                                 "write one JSON object per line") from exc
        if not isinstance(record, dict):
            raise QueryFileError(path, where, "not a JSON object", "write one JSON object per line")
        kind = record.pop("kind", None)
        if kind not in _JSONL_KINDS:
            raise QueryFileError(path, f"{where}.kind", f"unknown or missing kind {kind!r}",
                                 f"set kind to one of {', '.join(_JSONL_KINDS)}")
        if kind == "meta":
            if meta:
                raise QueryFileError(path, where, "second meta line", "merge the meta lines")
            meta = record or {"_": None}
        elif kind == "target":
            if target is not None:
                raise QueryFileError(path, where, "second target line", "keep one target query")
            target = record
        elif kind == "query":
            queries.append((lineno, record))
        else:
            templates.append((lineno, record))
    meta.pop("_", None)
    if target is None:
        raise QueryFileError(path, "target", "no line with kind 'target'",
                             'add {"kind": "target", "id": ..., "text": ...}')
    data = {"name": path.stem, **meta, "target": target,
            "queries": [r for _, r in queries], "jailbreak_templates": [r for _, r in templates]}
    try:
        spec = QuerySpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = err["loc"]
        if loc and loc[0] in ("queries", "jailbreak_templates") and len(loc) > 1:
            rows = queries if loc[0] == "queries" else templates
            field = f"line {rows[loc[1]][0]}" + (f".{_loc(loc[2:])}" if len(loc) > 2 else "")
        elif loc and loc[0] == "target":
            field = "target line" + (f".{_loc(loc[1:])}" if len(loc) > 1 else "")
        else:
            field = _loc(loc)
        raise QueryFileError(path, field, err["msg"],
                             _FIXES.get(err["type"], "correct the value")) from exc
    def locate(section: str, index: int) -> str:
        if index < 0:
            return f"meta line.{section}"
        rows = queries if section == "queries" else templates
        return f"line {rows[index][0]}"

    _check_semantics(path, spec, locate)
    return spec


def load_query_file(path: Path | str) -> QuerySpec:
    """Read a ``.yaml``/``.yml`` or ``.jsonl`` query file."""
    path = Path(path)
    if not path.is_file():
        problem = not_regular(path) or ("a folder" if path.is_dir() else "file not found")
        raise QueryFileError(path, "", problem, "pass the path of an existing query file")
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return _load_yaml(path)
    if suffix == ".jsonl":
        return _load_jsonl(path)
    raise QueryFileError(path, "", f"unknown suffix {suffix!r}",
                         "name the file *.yaml, *.yml or *.jsonl")
