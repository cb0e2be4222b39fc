"""A :class:`~.presets.Definition` turned into the parts a certification is drawn with."""

from __future__ import annotations

from typing import Any

from .distributions import ConversationDistribution, make_distribution
from .embedders import Embedder, embedder_named
from .graph import QueryGraph, build_graph
from .jailbreak import DEFAULT_TEMPLATES, JailbreakLayer, effective_p
from .presets import Definition
from .queryfile import GraphParams, QuerySpec


def graph_params(spec: QuerySpec, definition: Definition) -> GraphParams:
    """The query file's band and Q_T size with the definition's edge and target-set rules."""
    return spec.graph.model_copy(update={"edge_band": definition.edge_band,
                                         "target_set": definition.target_set})


def graph_for(spec: QuerySpec, definition: Definition,
              embedder: Embedder | None = None) -> QueryGraph:
    """Build the graph; ``embedder`` (e.g. a test's) replaces the definition's named one."""
    return build_graph(spec, graph_params(spec, definition),
                       embedder or embedder_named(definition.embedder))


def distribution_for(kind: str, graph: QueryGraph, definition: Definition,
                     lambda_h: float = 2.5, lambda_l: float = 1.0) -> ConversationDistribution:
    options: dict[str, Any] = {}
    if kind == "adaptive_rejection":
        options = {"lambda_h": lambda_h, "lambda_l": lambda_l, "dead_end": definition.ar_dead_end}
    elif kind == "graph_path":
        options = {"full_length_only": definition.gp_full_length_only,
                   "tries": definition.gp_tries}
    distribution = make_distribution(kind, graph, definition.max_length, **options)
    if options.get("full_length_only") and distribution.full_length_probability() == 0:
        raise ValueError(f"graph_path: no walk on the graph has {definition.max_length} queries, "
                         "so every sample would be dropped; lower max_length or set "
                         "gp_full_length_only false")
    return distribution


def layer_for(spec: QuerySpec, definition: Definition, kind: str) -> JailbreakLayer:
    return JailbreakLayer(list(spec.jailbreak_templates or DEFAULT_TEMPLATES),
                          effective_p(definition, kind))
