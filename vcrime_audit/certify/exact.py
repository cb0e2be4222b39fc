"""Exact laws of a conversation distribution, by dynamic programming over the lifted state.

The refusal flags that feed Adaptive with Rejection come from ``refusal(node)``, a deterministic
function of the query (a scripted or recorded target); ``stop(node)`` marks queries whose answer
ends the conversation (the ``stop_at_catastrophic`` rule; it truncates only AR, whose later
queries depend on the answers; RN and GP conversations are drawn whole before they are played).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from ..float_sum import sequential_sum
from .distributions import TAU, ConversationDistribution, GraphPath, LiftedState
from .graph import QueryGraph

NodeFlag = Callable[[int], bool]


def _flag(fn: NodeFlag | None, node: int | None) -> bool | None:
    return None if fn is None or node is None else fn(node)


def reach_probability(distribution: ConversationDistribution, length: int,
                      refusal: NodeFlag | None = None) -> float:
    """Pr(the chain draws at least ``length`` queries), memoised on (v, S)."""
    memo: dict[tuple[int | None, frozenset[int]], float] = {}

    def reach(state: LiftedState) -> float:
        if len(state.path) >= length:
            return 1.0
        key = (state.current, state.visited)
        if key not in memo:
            law = distribution.transitions(state, _flag(refusal, state.current))
            memo[key] = sequential_sum(p * reach(state.extend(u)) for u, p in law.items() if u != TAU)
        return memo[key]

    return reach(LiftedState())


def graph_path_reach(graph: QueryGraph, length: int) -> float:
    """Pr(a Graph Path walk reaches ``length`` queries): the same number as
    :func:`reach_probability` of a :class:`GraphPath`, over bitmask lifted states (fast enough
    for the paper's graph sizes)."""
    neighbours = [sum(1 << u for u in graph.neighbours(v)) for v in range(graph.size)]

    @cache
    def reach(v: int, visited: int, left: int) -> float:
        if left == 0:
            return 1.0
        free = neighbours[v] & ~visited
        if not free:
            return 0.0
        if left == 1:
            return 1.0
        nodes = [u for u in range(graph.size) if free >> u & 1]
        return sequential_sum(reach(u, visited | 1 << u, left - 1) for u in nodes) / len(nodes)

    targets = sorted(graph.target_indices())
    return sequential_sum(reach(t, 1 << t, length - 1) for t in targets) / len(targets)


def conversation_law(distribution: ConversationDistribution, refusal: NodeFlag | None = None,
                     stop: NodeFlag | None = None) -> dict[tuple[int, ...], float]:
    """Pr(γ) of every conversation γ (node indices in the order asked), exactly.

    GP walks are read in reverse; with ``full_length_only`` only full-length walks remain, each
    divided by Pr(full length).
    """
    feedback = distribution.needs_feedback
    if feedback and refusal is None:
        raise ValueError(f"{distribution.kind} needs a refusal function")
    law: dict[tuple[int, ...], float] = {}

    def explore(state: LiftedState, prob: float) -> None:
        node = state.current
        if feedback and node is not None and stop is not None and stop(node):
            law[state.path] = law.get(state.path, 0.0) + prob
            return
        for u, p in distribution.transitions(state, _flag(refusal, node)).items():
            if u == TAU:
                law[state.path] = law.get(state.path, 0.0) + prob * p
            else:
                explore(state.extend(u), prob * p)

    explore(LiftedState(), 1.0)
    if not distribution.reverse:
        return law
    out = {tuple(reversed(path)): p for path, p in law.items()}
    if isinstance(distribution, GraphPath) and distribution.full_length_only:
        full = distribution.full_length_probability()
        out = {path: p / full for path, p in out.items() if len(path) == distribution.max_length}
    return out
