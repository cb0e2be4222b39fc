"""Run, record and replay a certification: query file → graph → n conversations → certificate.

Every model call goes through a cassette (``certify-<certification id>.jsonl.gz``). The cassette
header carries the config, the query spec, the built graph and the model entries, so a replay
needs no query file, no embedder, no registry and no model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .. import __version__
from ..backends.base import ModelBackend
from ..backends.registry import make_backend
from ..canonical import canonical_json, content_hash
from ..cassette import Cassette, CassetteError, RecordMode
from ..cassette.errors import check_recorded_job
from ..defaults import DEFAULT_CASSETTES, DEFAULT_DB
from ..defaults import DEMO_QUERIES as DEMO
from ..identity import CheckedOutcome, ReplayCheck
from ..ids import shown_path
from ..models import DEFAULT_MODEL, ModelEntry, get_model
from ..recorder import CERTIFICATION, Recorder, now
from ..rowdigest import row_digest
from ..statuses import DONE
from ..store import Store
from . import DEMO_QUERY_FILE
from . import store as cstore
from .bounds import Certificate, certify
from .distributions import DISTRIBUTIONS, ConversationDistribution
from .embedders import Embedder
from .graph import QueryGraph
from .jailbreak import JailbreakLayer
from .judges import rule_judge_from_spec
from .llm_judge import ROLE as JUDGE_ROLE
from .llm_judge import LLMJudge, criterion_from_spec
from .play import LLM, RULE, TARGET_ROLE, PlayedConversation, Players, play_conversation
from .presets import SETTING_NAMES, Definition, resolve, settings_from
from .queryfile import QuerySpec, load_query_file
from .refusal import refusal_detector
from .rules import distribution_for, graph_for, layer_for

SHORT = {"random_node": "rn", "graph_path": "gp", "adaptive_rejection": "ar"}
ALIASES = {short: kind for kind, short in SHORT.items()}
META_KIND = "certification"


def distribution_kind(name: str) -> str:
    kind = ALIASES.get(name, name)
    if kind not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution {name!r}; choose rn, gp or ar "
                         f"(or {', '.join(sorted(DISTRIBUTIONS))})")
    return kind


@dataclass(frozen=True)
class CertifyConfig:
    """Everything that decides a certification's conversations and certificate."""

    queries: str = DEMO
    """Query file path, or ``demo`` for the shipped secret-keeping graph."""
    model: str = DEFAULT_MODEL
    judge: str = RULE
    """``rule`` (the query file's rule judge) or a model name (the LLM judge)."""
    distribution: str = "adaptive_rejection"
    n: int = 50
    confidence: float = 0.95
    jailbreak_p: float | None = None
    """``None``: from the query file, else the preset (see :mod:`.presets`); so every rule below."""
    seed: int = 0
    max_length: int | None = None
    max_tokens: int = 96
    temperature: float | None = None
    """Target temperature; ``None`` keeps the model entry's."""
    judge_max_tokens: int = 160
    lambda_h: float = 2.5
    lambda_l: float = 1.0
    backend: str = "local"
    preset: str | None = None
    jailbreak_ar: bool | None = None
    ar_dead_end: str | None = None
    gp_full_length_only: bool | None = None
    gp_tries: int | None = None
    final_turn: bool | None = None
    stop_at_catastrophic: bool | None = None
    refusal: str | None = None
    edge_band: str | None = None
    target_set: str | None = None
    embedder: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "distribution", distribution_kind(self.distribution))
        problems = [
            (self.n < 1, f"n must be at least 1, got {self.n}"),
            (not 0 < self.confidence < 1, f"confidence must lie in (0, 1), got {self.confidence}"),
            (self.max_tokens < 1, f"max_tokens must be at least 1, got {self.max_tokens}"),
            (self.judge_max_tokens < 1, f"judge_max_tokens must be at least 1, got {self.judge_max_tokens}"),
            (self.temperature is not None and self.temperature < 0,
             f"temperature must be >= 0, got {self.temperature}"),
            (not (self.lambda_h > 0 and self.lambda_l > 0), "lambda_h and lambda_l must be positive"),
        ]
        for bad, message in problems:
            if bad:
                raise ValueError(message)
        settings_from(self.explicit_settings())
        if self.preset is not None:
            resolve(self.preset)

    def explicit_settings(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in SETTING_NAMES if getattr(self, k) is not None}

    def resolved(self, spec: QuerySpec) -> CertifyConfig:
        """Every rule filled in: preset, then the query file's rules, then these options."""
        definition = resolve(self.preset or spec.preset, spec.file_settings(),
                             settings_from(self.explicit_settings()))
        return replace(self, preset=definition.preset, **definition.settings())

    def definition(self) -> Definition:
        """The rules of a :meth:`resolved` config."""
        return Definition.model_validate({"preset": self.preset, **{
            k: getattr(self, k) for k in SETTING_NAMES}})

    @property
    def judge_is_llm(self) -> bool:
        return self.judge != RULE

    def query_path(self) -> Path:
        return DEMO_QUERY_FILE if self.queries == DEMO else Path(self.queries)

    def certification_id(self, spec: QuerySpec) -> str:
        """Name plus a hash of what decides the conversations, with every rule resolved.

        Rules at the paper preset's values stay out of the hash (length and jailbreak p always
        in), so certifications recorded before the rules existed keep their ids.
        """
        config = self.resolved(spec)
        rules = set(SETTING_NAMES) - {"max_length", "jailbreak_p"}
        identity = {k: v for k, v in asdict(config).items()
                    if k not in ("queries", "seed", "preset") and k not in rules}
        identity.update(config.definition().differences())
        identity["spec"] = content_hash(spec_identity(spec))
        return f"{spec.name}-{SHORT[self.distribution]}-s{self.seed}-{content_hash(identity, 4)}"


def spec_identity(spec: QuerySpec) -> dict[str, Any]:
    """The spec without its rules (they enter the identity resolved, through the config)."""
    data = spec.model_dump(mode="json", exclude={"preset", "certification"})
    for key in ("edge_band", "target_set"):
        data["graph"].pop(key)
    return data


@dataclass
class CertifyOutcome(CheckedOutcome):
    certification_id: str
    certificate: Certificate
    store: Path
    cassette: Path
    rows_hash: str
    model_calls: int
    replayed_calls: int
    turns: int
    check: ReplayCheck
    extra: dict[str, Any] = field(default_factory=dict)
    definition: Definition | None = None
    dropped: list[int] = field(default_factory=list)
    """Indices of GP samples dropped after ``gp_tries`` walks short of full length."""

    @property
    def recorded_certificate(self) -> dict[str, Any] | None:
        return (self.check.recorded or {}).get("certificate")


Progress = Callable[[int, PlayedConversation], None]


def with_role_sampling(entry: ModelEntry, role: str, **overrides: Any) -> ModelEntry:
    """A copy of ``entry`` whose sampling for ``role`` has ``overrides`` (``None`` values dropped)."""
    given = {k: v for k, v in overrides.items() if v is not None}
    sampling = {**entry.sampling, role: {**entry.sampling.get(role, {}), **given}}
    return entry.model_copy(update={"sampling": sampling})


def cassette_path(certification_id: str, cassette_dir: Path) -> Path:
    return Path(cassette_dir) / f"certify-{certification_id}.jsonl.gz"


@dataclass
class Setup:
    config: CertifyConfig
    spec: QuerySpec
    graph: QueryGraph
    entries: dict[str, ModelEntry]


def _identity_fields(config: CertifyConfig) -> dict[str, Any]:
    """A resolved config's fields that can tell two certifications apart (the query file's path
    and the preset's name do not: its rules enter resolved)."""
    return {k: v for k, v in asdict(config).items() if k not in ("queries", "preset")}


def _from_meta(cassette: Cassette) -> Setup:
    meta = cassette.meta
    if meta.get("kind") != META_KIND:
        raise CassetteError(f"{cassette.path}: not a certification cassette (header.meta.kind is "
                            f"{meta.get('kind')!r}); fix: pass a cassette written by "
                            "`vcrime-audit certify`")
    missing = [k for k in ("config", "spec", "graph", "models") if k not in meta]
    if missing:
        raise CassetteError(f"{cassette.path}: header.meta lacks {', '.join(missing)}; "
                            "fix: re-record the cassette")
    known = {f.name for f in fields(CertifyConfig)}
    spec = QuerySpec.model_validate(meta["spec"])
    return Setup(
        config=CertifyConfig(**{k: v for k, v in meta["config"].items() if k in known}).resolved(spec),
        spec=spec,
        graph=QueryGraph.model_validate(meta["graph"]),
        entries={n: ModelEntry.model_validate(e) for n, e in meta["models"].items()})


def _players(setup: Setup, backend: ModelBackend) -> Players:
    config, spec = setup.config, setup.spec
    target = with_role_sampling(setup.entries[config.model], TARGET_ROLE,
                                max_tokens=config.max_tokens, temperature=config.temperature)
    rule = rule_judge_from_spec(spec.judge) if spec.judge is not None and spec.judge.secret else None
    if not config.judge_is_llm and rule is None:
        raise ValueError(f"{config.queries}: judge: the query file defines no rule judge; fix: add "
                         "judge: {kind: secret_leak, secret: ...} or pass --judge MODEL")
    llm = None
    if config.judge_is_llm:
        judge_entry = with_role_sampling(setup.entries[config.judge], JUDGE_ROLE,
                                         max_tokens=config.judge_max_tokens)
        llm = LLMJudge(backend, judge_entry, criterion_from_spec(spec.judge))
    return Players(backend=backend, target=target, system_prompt=spec.system_prompt,
                   detector=refusal_detector(config.definition().refusal), rule=rule, llm=llm,
                   selected=LLM if config.judge_is_llm else RULE,
                   final_turn=bool(config.final_turn),
                   stop_at_catastrophic=bool(config.stop_at_catastrophic))


def _layer(spec: QuerySpec, config: CertifyConfig) -> JailbreakLayer:
    return layer_for(spec, config.definition(), config.distribution)


def _distribution(config: CertifyConfig, graph: QueryGraph) -> ConversationDistribution:
    return distribution_for(config.distribution, graph, config.definition(), config.lambda_h,
                            config.lambda_l)


def _judge_params(players: Players) -> dict[str, Any]:
    return {RULE: players.rule.parameters() if players.rule else None,
            LLM: players.llm.parameters() if players.llm else None, "selected": players.selected}


async def _play(setup: Setup, cassette: Cassette, inner: ModelBackend | None, store: Store,
                progress: Progress | None) -> CertifyOutcome:
    config, spec, graph = setup.config, setup.spec, setup.graph
    cid = config.certification_id(spec)
    recorder = Recorder(CERTIFICATION, cid, cassette, store, inner)
    players = _players(setup, recorder.backend)
    distribution = _distribution(config, graph)
    layer = _layer(spec, config)
    definition = config.definition()
    target_sampling = players.target.sampling_for(TARGET_ROLE, 0).model_dump(exclude={"seed"})
    recorder.start({
        "certification_id": cid, "name": spec.name, "queries": config.queries,
        "spec_hash": content_hash(spec), "graph": graph.to_json(), "graph_hash": graph.content_hash(),
        "embedder": canonical_json(graph.embedder), "distribution": distribution.kind,
        "distribution_params": canonical_json(distribution.parameters()),
        "jailbreak_params": canonical_json(layer.parameters()),
        "refusal_detector": canonical_json(players.detector.parameters()),
        "target_model": config.model, "target_sampling": canonical_json(target_sampling),
        "judge": config.judge, "judge_params": canonical_json(_judge_params(players)),
        "backend": config.backend, "n": config.n, "confidence": config.confidence, "k": None,
        "n_safe": None, "n_missing": None, "lower": None, "upper": None,
        "conservative_lower": None, "conservative_upper": None, "bounds": None,
        "seed": config.seed, "cassette": shown_path(cassette.path), "reason": "",
        "rows_hash": None, "vcrime_version": __version__, "started_at": now(), "finished_at": None,
        "definition": canonical_json(definition), "n_dropped": None, "dropped": None},
        clear=lambda s: cstore.clear_conversations(s, cid))
    outcomes: list[bool | None] = []
    dropped: list[int] = []
    turns = 0
    try:
        for index in range(config.n):
            played = await play_conversation(index, config.seed, distribution, layer, players, cid)
            if played.row is None:
                dropped.append(index)
                continue
            recorder.commit(lambda row=played.row: cstore.insert_conversation(store, row))
            outcomes.append(played.outcome)
            turns += played.row["n_turns"]
            if progress is not None:
                progress(index, played)
    except BaseException as exc:
        recorder.crash(exc)
        raise
    finally:
        await recorder.aclose()
    certificate = certify(outcomes, config.confidence)
    bounds = canonical_json(certificate)
    rows = cstore.conversations(store, cid)
    digest = cstore.rows_hash(rows, bounds, {"dropped": dropped} if dropped else None)
    table = {"conversations": [{k: v for k, v in r.items() if k not in cstore.HASH_EXCLUDED}
                               for r in rows], "certificate": [{"bounds": bounds}],
             **({"dropped": [{"idx": i} for i in dropped]} if dropped else {})}
    check = recorder.finish(
        {"status": DONE, "n_dropped": len(dropped), "dropped": canonical_json(dropped),
         "k": certificate.n_catastrophic, "n_safe": certificate.n_safe,
         "n_missing": certificate.n_missing, "lower": certificate.judged.lower,
         "upper": certificate.judged.upper, "conservative_lower": certificate.conservative_lower,
         "conservative_upper": certificate.conservative_upper, "bounds": bounds, "rows_hash": digest},
        {"certification_id": cid, "rows_hash": digest,
         "certificate": certificate.model_dump(mode="json"), "rows": row_digest(table)}, "rows_hash")
    return CertifyOutcome(cid, certificate, store.path, cassette.path, digest,
                          recorder.backend.model_calls, recorder.backend.replayed, turns, check,
                          definition=definition, dropped=dropped)


async def run_certification(config: CertifyConfig, db: Path = DEFAULT_DB,
                            cassette_dir: Path = DEFAULT_CASSETTES,
                            mode: RecordMode = RecordMode.once, *,
                            backend: ModelBackend | None = None, embedder: Embedder | None = None,
                            progress: Progress | None = None) -> CertifyOutcome:
    """Certify the target model on the config's query graph, recording every model call.

    An existing cassette supplies the spec, graph and model entries it was recorded with.
    ``backend`` (the inner backend) and ``embedder`` default to the registry's and the rules';
    a given ``backend`` is closed at the end like a built one. ``progress`` is called after each
    conversation while the cassette records.
    """
    spec = load_query_file(config.query_path())
    config = config.resolved(spec)
    cassette = Cassette(cassette_path(config.certification_id(spec), cassette_dir), mode)
    if cassette.meta:
        setup = _from_meta(cassette)
        check_recorded_job(cassette.path, "certification", setup.config.certification_id(setup.spec),
                           config.certification_id(spec), _identity_fields(setup.config),
                           _identity_fields(config))
    else:
        names = {config.model} | ({config.judge} if config.judge_is_llm else set())
        entries = {name: get_model(name) for name in sorted(names)}
        graph = graph_for(spec, config.definition(), embedder)
        setup = Setup(config, spec, graph, entries)
        cassette.meta = {"kind": META_KIND, "config": asdict(config),
                         "spec": spec.model_dump(mode="json"), "graph": graph.model_dump(mode="json"),
                         "models": {n: e.recorded() for n, e in entries.items()},
                         "definition": config.definition().model_dump(mode="json"),
                         "vcrime_version": __version__, "fingerprints": {}}
    inner = None
    if cassette.recording:
        inner = backend if backend is not None else make_backend(config.backend, setup.entries)
    with Store(db) as store:
        return await _play(setup, cassette, inner, store, progress if cassette.recording else None)


async def replay_certification(cassette_file: Path, db: Path | None = None,
                               progress: Progress | None = None,
                               found_for: str | None = None) -> CertifyOutcome:
    """Re-run a recorded certification from its cassette alone: no model, no embedder, no files.
    ``found_for``: the certification id it was found for (``verify``: a store's row), which
    another certification's cassette is not."""
    if not Path(cassette_file).is_file():
        raise CassetteError(f"{cassette_file}: no such cassette; fix: pass the path of a "
                            "certify-*.jsonl.gz file")
    cassette = Cassette(cassette_file, RecordMode.none)
    setup = _from_meta(cassette)
    cid = setup.config.certification_id(setup.spec)
    if found_for is not None:
        check_recorded_job(cassette.path, "certification", cid, found_for)
    with Store(db or Path("runs") / f"replay-certify-{cid}.sqlite") as store:
        return await _play(setup, cassette, None, store, progress)
