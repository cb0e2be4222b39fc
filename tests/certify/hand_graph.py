"""A small hand-made query graph (edges and similarities chosen by hand)."""

from __future__ import annotations

import numpy as np

from vcrime_audit.certify.graph import QueryGraph, graph_from_similarities
from vcrime_audit.certify.queryfile import GraphParams, Query, QuerySpec

EDGES = [(0, 1), (0, 2), (1, 2), (1, 3), (2, 4), (3, 4), (3, 5), (4, 5), (0, 5), (2, 6)]
SIM_TO_TARGET = [0.1, 0.3, 0.2, 0.6, 0.5, 0.9, 0.4]
TARGET_K = 2  # Q_T = {5, 3}
N = len(SIM_TO_TARGET)


def hand_spec(n: int = N) -> QuerySpec:
    return QuerySpec(
        name="hand",
        target=Query(id="t", text="target query"),
        queries=[Query(id=f"q{i}", text=f"query number {i}") for i in range(n)],
    )


def hand_graph() -> QueryGraph:
    sims = np.zeros((N, N))
    for a, b in EDGES:
        sims[a, b] = sims[b, a] = 0.5
    params = GraphParams(sim_low=0.4, sim_high=0.6, target_k=TARGET_K)
    return graph_from_similarities(hand_spec(), sims, np.array(SIM_TO_TARGET), params,
                                   {"model": "hand-made"})


def neighbours(v: int) -> set[int]:
    return {b for a, b in EDGES if a == v} | {a for a, b in EDGES if b == v}
