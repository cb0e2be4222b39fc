"""The query graph G = (V, E) around a target query q*.

Nodes are the queries of a :class:`QuerySpec`; an edge joins two queries whose cosine
similarity ``s`` lies in the band: ``sim_low <= s <= sim_high`` (``edge_band: inclusive``) or
``sim_low < s < sim_high`` (``strict``, the released code's); the upper bound drops
near-duplicates. Q_T is the ``target_k`` queries most similar to q* (``target_set: top_k``, ties
broken by file order) or every query whose similarity to q* exceeds ``sim_low``
(``threshold``, the released code's). Similarities are rounded to 6 decimals before any test,
so the stored numbers decide the stored edges and Q_T.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

from ..canonical import canonical_json, content_hash
from .embedders import Embedder, MiniLMEmbedder
from .queryfile import GraphParams, Query, QuerySpec

SIM_DECIMALS = 6


class GraphNode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    text: str
    sim_to_target: float


class GraphEdge(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    a: str
    b: str
    similarity: float


class QueryGraph(BaseModel):
    """The graph, how it was built, and by which embedder; serialises to canonical JSON."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    name: str
    source_hash: str
    target: Query
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    target_set: list[str]
    params: GraphParams
    embedder: dict[str, str]

    _index: dict[str, int] = PrivateAttr(default_factory=dict)
    _adjacency: tuple[tuple[int, ...], ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _consistent(self) -> QueryGraph:
        index = {node.id: i for i, node in enumerate(self.nodes)}
        if len(index) != len(self.nodes):
            raise ValueError("node ids are not unique")
        adjacency: list[set[int]] = [set() for _ in self.nodes]
        for edge in self.edges:
            if edge.a not in index or edge.b not in index:
                raise ValueError(f"edge {edge.a}-{edge.b} names an unknown node")
            i, j = index[edge.a], index[edge.b]
            if i == j:
                raise ValueError(f"self-loop on {edge.a}")
            adjacency[i].add(j)
            adjacency[j].add(i)
        unknown = [t for t in self.target_set if t not in index]
        if unknown:
            raise ValueError(f"target_set names unknown nodes {unknown}")
        self._index = index
        self._adjacency = tuple(tuple(sorted(s)) for s in adjacency)
        return self

    @property
    def size(self) -> int:
        return len(self.nodes)

    def index_of(self, node_id: str) -> int:
        return self._index[node_id]

    def neighbours(self, i: int) -> tuple[int, ...]:
        """Neighbour indices of node ``i``, ascending."""
        return self._adjacency[i]

    def target_indices(self) -> tuple[int, ...]:
        return tuple(self._index[t] for t in self.target_set)

    def sim_to_target(self, i: int) -> float:
        return self.nodes[i].sim_to_target

    def to_json(self) -> str:
        return canonical_json(self)

    @classmethod
    def from_json(cls, text: str) -> QueryGraph:
        return cls.model_validate_json(text)

    def content_hash(self) -> str:
        return content_hash(self)


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("the embedder returned a zero vector")
    unit = vectors / norms
    return unit @ unit.T


def in_band(s: float, params: GraphParams) -> bool:
    if params.edge_band == "strict":
        return params.sim_low < s < params.sim_high
    return params.sim_low <= s <= params.sim_high


def graph_from_similarities(spec: QuerySpec, sims: np.ndarray, target_sims: np.ndarray,
                            params: GraphParams, embedder: dict[str, str]) -> QueryGraph:
    """Build the graph from a query-by-query similarity matrix and similarities to q*."""
    n = len(spec.queries)
    if sims.shape != (n, n) or target_sims.shape != (n,):
        raise ValueError(f"expected ({n},{n}) and ({n},) similarities, got "
                         f"{sims.shape} and {target_sims.shape}")
    if params.target_set == "top_k" and params.target_k > n:
        raise ValueError(f"target_k={params.target_k} exceeds the {n} queries")
    to_target = [round(float(s), SIM_DECIMALS) for s in target_sims]
    nodes = [GraphNode(id=q.id, text=q.text, sim_to_target=s)
             for q, s in zip(spec.queries, to_target, strict=True)]
    edges = []
    for i in range(n):
        for j in range(i + 1, n):
            s = round(float(sims[i, j]), SIM_DECIMALS)
            if in_band(s, params):
                edges.append(GraphEdge(a=spec.queries[i].id, b=spec.queries[j].id, similarity=s))
    ranked = sorted(range(n), key=lambda i: (-to_target[i], i))
    if params.target_set == "threshold":
        targets = [i for i in ranked if to_target[i] > params.sim_low]
        if not targets:
            raise ValueError(f"no query has similarity to q* above sim_low={params.sim_low}; "
                             "lower graph.sim_low or use target_set top_k")
    else:
        targets = ranked[: params.target_k]
    return QueryGraph(
        name=spec.name,
        source_hash=content_hash(spec),
        target=spec.target,
        nodes=nodes,
        edges=edges,
        target_set=[spec.queries[i].id for i in targets],
        params=params,
        embedder=dict(embedder),
    )


def build_graph(spec: QuerySpec, params: GraphParams | None = None,
                embedder: Embedder | None = None) -> QueryGraph:
    """Embed q* and the queries, then connect pairs in the similarity band.

    ``params`` defaults to the file's ``graph`` section; ``embedder`` to :class:`MiniLMEmbedder`.
    """
    params = params or spec.graph
    embedder = embedder or MiniLMEmbedder()
    texts = [q.text for q in spec.queries] + [spec.target.text]
    vectors = np.asarray(embedder(texts), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(f"the embedder returned shape {vectors.shape} for {len(texts)} texts")
    cos = cosine_matrix(vectors)
    n = len(spec.queries)
    return graph_from_similarities(spec, cos[:n, :n], cos[:n, n], params, embedder.fingerprint)
