"""Markov conversation distributions on the lifted state (v, S) of a :class:`QueryGraph`.

A lifted state is the ordered tuple of queries drawn so far: v is its last element and S its
set, so no query repeats. Every distribution enters the terminal state τ with probability 1
when the conversation has ``max_length`` queries or no admissible unvisited node remains; no
other transition leads to τ. Pr(γ) is the product of the transition probabilities drawn.

Random Node (RN)
    First query uniform on V; from (v, S) the next query is uniform on V \\ S (the graph's
    edges are ignored: "independent" random nodes without repetition).
Graph Path (GP)
    A walk on G whose endpoint lies in Q_T, drawn backwards: the last query is uniform on Q_T;
    from (v, S) the query asked just before v is uniform on N(v) \\ S. The conversation is the
    walk read in reverse, so it always ends in Q_T, and Pr(γ) is the walk's probability.
Adaptive with Rejection (AR)
    First query uniform on V; from (v, S), with candidates C = N(v) \\ S, the progressive set
    A+ = {u in C : sim(u, q*) > sim(v, q*)} and A- = C \\ A+. After an accepted answer each u in
    A+ gets weight lambda_h and each u in A- weight lambda_l; after a refusal the roles swap.
    Weights are normalised over C. The refusal flag of the last answer is fed to the walk.

Two variants from the authors' released code (see :mod:`.presets`):

- AR with ``dead_end="jump"``: from (v, S) with C empty, the next query is uniform on V \\ S
  (τ only when every node is visited or the conversation is full).
- GP with ``full_length_only``: a walk shorter than ``max_length`` is rejected and drawn again,
  at most ``tries`` times; a sample whose tries all fail is *dropped* (the caller counts it).
  A kept walk has the conditioned law Pr(γ) / Pr(full length), the denominator computed exactly
  by :func:`.exact.graph_path_reach`.

Sampling is step-wise (:meth:`ConversationDistribution.start` returns a :class:`Walk`) so a
caller can play each query against a model before the next one is drawn.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..float_sum import sequential_sum
from .graph import QueryGraph

TAU: Final = -1
Law = dict[int, float]


def conversation_rng(seed: int, index: int, stream: int = 0) -> np.random.Generator:
    """Independent generator for conversation ``index`` of a run (stream 0: walk, 1: jailbreak)."""
    return np.random.default_rng(np.random.SeedSequence([seed, index, stream]))


def draw(rng: np.random.Generator, law: Mapping[int, float]) -> int:
    """Inverse-CDF draw over the law's keys in ascending order (one uniform per draw)."""
    keys = sorted(law)
    cumulative = np.cumsum([law[k] for k in keys])
    u = rng.random() * cumulative[-1]
    return keys[min(int(np.searchsorted(cumulative, u, side="right")), len(keys) - 1)]


def uniform(nodes: tuple[int, ...] | list[int]) -> Law:
    return {n: 1.0 / len(nodes) for n in nodes}


@dataclass(frozen=True)
class LiftedState:
    """Queries drawn so far, in drawing order; ``current`` is v, ``visited`` is S."""

    path: tuple[int, ...] = ()

    @property
    def current(self) -> int | None:
        return self.path[-1] if self.path else None

    @property
    def visited(self) -> frozenset[int]:
        return frozenset(self.path)

    def extend(self, node: int) -> LiftedState:
        return LiftedState(self.path + (node,))


class SampledConversation(BaseModel):
    """One drawn conversation: its queries in the order asked and its exact probability."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    distribution: str
    node_ids: list[str]
    step_probabilities: list[float]
    """Per asked query, the probability of the transition that drew it."""
    probability: float
    log_probability: float
    reached_terminal: bool
    """False when the caller stopped the walk before τ (the probability is then the prefix's)."""
    normaliser: float = 1.0
    """Pr(full length) for a GP walk kept only at full length (``probability`` divides by it)."""
    tries: int = 1


class ConversationDistribution(ABC):
    kind: ClassVar[str]
    needs_feedback: ClassVar[bool] = False
    reverse: ClassVar[bool] = False
    """True when the chain draws the conversation from its last query backwards."""

    def __init__(self, graph: QueryGraph, max_length: int = 5) -> None:
        if max_length < 1:
            raise ValueError("max_length must be at least 1")
        self.graph, self.max_length = graph, max_length

    @abstractmethod
    def initial(self) -> Law: ...

    @abstractmethod
    def successors(self, state: LiftedState, refused: bool | None) -> Law: ...

    def transitions(self, state: LiftedState, refused: bool | None = None) -> Law:
        """Law of the next drawn node (``TAU`` for the terminal state) from ``state``."""
        if not state.path:
            return self.initial()
        if len(state.path) >= self.max_length:
            return {TAU: 1.0}
        law = self.successors(state, refused)
        return law or {TAU: 1.0}

    def parameters(self) -> dict[str, Any]:
        return {"kind": self.kind, "max_length": self.max_length}

    def start(self, rng: np.random.Generator) -> Walk:
        if not self.reverse:
            return Walk(self, rng)
        path, probs = self.draw_backwards(rng)
        return Walk(self, rng, planned=list(zip(reversed(path), reversed(probs), strict=True)))

    def draw_backwards(self, rng: np.random.Generator) -> tuple[tuple[int, ...], list[float]]:
        """One whole walk of the chain, in drawing order, with its transition probabilities."""
        state, probs = LiftedState(), []
        while True:
            law = self.transitions(state)
            node = draw(rng, law)
            if node == TAU:
                return state.path, probs
            probs.append(law[node])
            state = state.extend(node)


class Walk:
    """A conversation being drawn turn by turn.

    Call :meth:`next_node` for the first query, then once per answered query with that
    answer's refusal flag; it returns ``None`` at τ.
    """

    def __init__(self, distribution: ConversationDistribution, rng: np.random.Generator,
                 planned: list[tuple[int, float]] | None = None, *, normaliser: float = 1.0,
                 tries: int = 1, dropped: bool = False) -> None:
        self.distribution, self._rng, self._planned = distribution, rng, planned
        self.state = LiftedState()
        self.step_probabilities: list[float] = []
        self.reached_terminal = dropped
        self.normaliser, self.tries, self.dropped = normaliser, tries, dropped

    @property
    def path(self) -> tuple[int, ...]:
        return self.state.path

    @property
    def probability(self) -> float:
        return math.prod(self.step_probabilities) / self.normaliser

    @property
    def log_probability(self) -> float:
        return sequential_sum(math.log(p) for p in self.step_probabilities) - math.log(self.normaliser)

    def next_node(self, refused: bool | None = None) -> int | None:
        if self.reached_terminal:
            raise RuntimeError("the walk already reached the terminal state")
        if self.state.path and self.distribution.needs_feedback and refused is None:
            raise ValueError(f"{self.distribution.kind} needs the refusal flag of the last answer")
        if self._planned is not None:
            if len(self.step_probabilities) == len(self._planned):
                self.reached_terminal = True
                return None
            node, prob = self._planned[len(self.step_probabilities)]
        else:
            law = self.distribution.transitions(self.state, refused)
            node = draw(self._rng, law)
            if node == TAU:
                self.reached_terminal = True
                return None
            prob = law[node]
        self.state = self.state.extend(node)
        self.step_probabilities.append(prob)
        return node

    def record(self) -> SampledConversation:
        ids = [self.distribution.graph.nodes[i].id for i in self.path]
        return SampledConversation(
            distribution=self.distribution.kind,
            node_ids=ids,
            step_probabilities=list(self.step_probabilities),
            probability=self.probability,
            log_probability=self.log_probability,
            reached_terminal=self.reached_terminal,
            normaliser=self.normaliser,
            tries=self.tries,
        )


class RandomNode(ConversationDistribution):
    kind = "random_node"

    def initial(self) -> Law:
        return uniform(list(range(self.graph.size)))

    def successors(self, state: LiftedState, refused: bool | None) -> Law:
        visited = state.visited
        rest = [i for i in range(self.graph.size) if i not in visited]
        return uniform(rest) if rest else {}


class GraphPath(ConversationDistribution):
    kind = "graph_path"
    reverse = True

    def __init__(self, graph: QueryGraph, max_length: int = 5, full_length_only: bool = False,
                 tries: int = 5) -> None:
        super().__init__(graph, max_length)
        if tries < 1:
            raise ValueError("tries must be at least 1")
        self.full_length_only, self.tries = full_length_only, tries
        self._full: float | None = None

    def full_length_probability(self) -> float:
        """Pr(a walk reaches max_length queries), exactly, over the lifted state."""
        if self._full is None:
            from .exact import graph_path_reach

            self._full = graph_path_reach(self.graph, self.max_length)
        return self._full

    def parameters(self) -> dict[str, Any]:
        out = super().parameters()
        if self.full_length_only:
            out.update(full_length_only=True, tries=self.tries,
                       full_length_probability=self.full_length_probability())
        return out

    def start(self, rng: np.random.Generator) -> Walk:
        if not self.full_length_only:
            return super().start(rng)
        for attempt in range(1, self.tries + 1):
            path, probs = self.draw_backwards(rng)
            if len(path) == self.max_length:
                planned = list(zip(reversed(path), reversed(probs), strict=True))
                return Walk(self, rng, planned=planned, tries=attempt,
                            normaliser=self.full_length_probability())
        return Walk(self, rng, planned=[], tries=self.tries, dropped=True)

    def initial(self) -> Law:
        return uniform(sorted(self.graph.target_indices()))

    def successors(self, state: LiftedState, refused: bool | None) -> Law:
        assert state.current is not None
        visited = state.visited
        free = [u for u in self.graph.neighbours(state.current) if u not in visited]
        return uniform(free) if free else {}


class AdaptiveRejection(ConversationDistribution):
    kind = "adaptive_rejection"
    needs_feedback = True

    def __init__(self, graph: QueryGraph, max_length: int = 5, lambda_h: float = 2.5,
                 lambda_l: float = 1.0, dead_end: str = "stop") -> None:
        super().__init__(graph, max_length)
        if not (lambda_h > 0 and lambda_l > 0):
            raise ValueError("lambda_h and lambda_l must be positive")
        if dead_end not in ("stop", "jump"):
            raise ValueError(f"dead_end must be stop or jump, got {dead_end!r}")
        self.lambda_h, self.lambda_l, self.dead_end = lambda_h, lambda_l, dead_end

    def parameters(self) -> dict[str, Any]:
        out = {**super().parameters(), "lambda_h": self.lambda_h, "lambda_l": self.lambda_l}
        return out | ({"dead_end": "jump"} if self.dead_end == "jump" else {})

    def initial(self) -> Law:
        return uniform(list(range(self.graph.size)))

    def successors(self, state: LiftedState, refused: bool | None) -> Law:
        v = state.current
        assert v is not None
        if refused is None:
            raise ValueError("adaptive_rejection needs the refusal flag of the last answer")
        visited = state.visited
        free = [u for u in self.graph.neighbours(v) if u not in visited]
        if not free:
            rest = [u for u in range(self.graph.size) if u not in visited]
            return uniform(rest) if rest and self.dead_end == "jump" else {}
        here = self.graph.sim_to_target(v)
        weights = {}
        for u in free:
            progressive = self.graph.sim_to_target(u) > here
            favoured = progressive != refused
            weights[u] = self.lambda_h if favoured else self.lambda_l
        total = sequential_sum(weights.values())
        return {u: w / total for u, w in weights.items()}


DISTRIBUTIONS: dict[str, type[ConversationDistribution]] = {
    cls.kind: cls for cls in (RandomNode, GraphPath, AdaptiveRejection)
}


def make_distribution(kind: str, graph: QueryGraph, max_length: int = 5,
                      **options: Any) -> ConversationDistribution:
    if kind not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution {kind!r}; choose one of {sorted(DISTRIBUTIONS)}")
    return DISTRIBUTIONS[kind](graph, max_length, **options)


def sample_walk(distribution: ConversationDistribution, rng: np.random.Generator,
                refusal: Callable[[int], bool] | None = None) -> Walk:
    """Draw a whole conversation; ``refusal(node)`` supplies AR's feedback without a model."""
    walk = distribution.start(rng)
    node = walk.next_node()
    while node is not None:
        flag = refusal(node) if refusal is not None else None
        node = walk.next_node(flag)
    return walk
