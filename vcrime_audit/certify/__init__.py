"""C3LLM certification: query graphs, Markov conversation distributions, Clopper–Pearson bounds.

A whole run (play against the target model, judge, certify, store, record/replay) is
:func:`vcrime_audit.certify.run.run_certification` / ``replay_certification``; the building
blocks below are what it drives::

    spec = load_query_file(DEMO_QUERY_FILE)
    graph = build_graph(spec)
    dist = make_distribution("adaptive_rejection", graph)
    layer = JailbreakLayer(spec.jailbreak_templates, p)
    walk = AugmentedWalk(dist.start(conversation_rng(seed, i)), layer,
                         conversation_rng(seed, i, stream=1))
    turn = walk.next_turn()
    while turn is not None:
        answer = ...                      # play turn.text with the full history
        turn = walk.next_turn(refused=detector(answer))
    certificate = certify(outcomes)
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bounds import Certificate, CountInterval, certify, clopper_pearson, conversation_outcome
    from .distributions import (
        DISTRIBUTIONS,
        TAU,
        AdaptiveRejection,
        ConversationDistribution,
        GraphPath,
        LiftedState,
        RandomNode,
        SampledConversation,
        Walk,
        conversation_rng,
        make_distribution,
    )
    from .embedders import Embedder, MiniLMEmbedder
    from .graph import QueryGraph, build_graph
    from .jailbreak import IDENTITY, AugmentedConversation, AugmentedWalk, JailbreakLayer, Turn
    from .judges import KeywordRefusalDetector, SecretLeakJudge, rule_judge_from_spec
    from .queryfile import GraphParams, QueryFileError, QuerySpec, load_query_file

_HOMES = {
    ".bounds": ("Certificate", "CountInterval", "certify", "clopper_pearson", "conversation_outcome"),
    ".distributions": ("DISTRIBUTIONS", "TAU", "AdaptiveRejection", "ConversationDistribution",
                       "GraphPath", "LiftedState", "RandomNode", "SampledConversation", "Walk",
                       "conversation_rng", "make_distribution"),
    ".embedders": ("Embedder", "MiniLMEmbedder"),
    ".graph": ("QueryGraph", "build_graph"),
    ".jailbreak": ("IDENTITY", "AugmentedConversation", "AugmentedWalk", "JailbreakLayer", "Turn"),
    ".judges": ("KeywordRefusalDetector", "SecretLeakJudge", "rule_judge_from_spec"),
    ".queryfile": ("GraphParams", "QueryFileError", "QuerySpec", "load_query_file"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """The building blocks, imported from their modules when first asked for: importing one
    module of the package (the audit reads ``certify.report`` and ``certify.store``) then imports
    only what it needs."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


DEMO_QUERY_FILE = Path(__file__).parent / "demo" / "secret_keeping.yaml"

__all__ = [
    "DEMO_QUERY_FILE", "DISTRIBUTIONS", "IDENTITY", "TAU", "AdaptiveRejection",
    "AugmentedConversation", "AugmentedWalk", "Certificate", "ConversationDistribution",
    "CountInterval", "Embedder", "GraphParams", "GraphPath", "JailbreakLayer",
    "KeywordRefusalDetector", "LiftedState", "MiniLMEmbedder", "QueryFileError", "QueryGraph",
    "QuerySpec", "RandomNode", "SampledConversation", "SecretLeakJudge", "Turn", "Walk",
    "build_graph", "certify", "clopper_pearson", "conversation_outcome", "conversation_rng",
    "load_query_file", "make_distribution", "rule_judge_from_spec",
]
