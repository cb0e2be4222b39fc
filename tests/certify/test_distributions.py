"""Each distribution against its definition, computed here from the edge list alone."""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict

import numpy as np
import pytest
from scipy.stats import chisquare

from vcrime_audit.certify.distributions import (
    TAU,
    AdaptiveRejection,
    GraphPath,
    LiftedState,
    RandomNode,
    conversation_rng,
    make_distribution,
    sample_walk,
)

from .hand_graph import SIM_TO_TARGET, N, neighbours

MAX_LEN = 4
SAMPLES = 6000
Q_T = {5, 3}
LAMBDA_H, LAMBDA_L = 3.0, 1.0


def expected_rn(path: tuple[int, ...], refused: bool | None) -> dict[int, float]:
    if len(path) >= MAX_LEN:
        return {TAU: 1.0}
    rest = [v for v in range(N) if v not in path]
    return {v: 1 / len(rest) for v in rest} if rest else {TAU: 1.0}


def expected_gp(path: tuple[int, ...], refused: bool | None) -> dict[int, float]:
    """Backward chain: ``path`` is in drawing order, its first node the conversation's last."""
    if not path:
        return {v: 1 / len(Q_T) for v in Q_T}
    if len(path) >= MAX_LEN:
        return {TAU: 1.0}
    free = neighbours(path[-1]) - set(path)
    return {v: 1 / len(free) for v in free} if free else {TAU: 1.0}


def expected_ar(path: tuple[int, ...], refused: bool | None) -> dict[int, float]:
    if not path:
        return {v: 1 / N for v in range(N)}
    if len(path) >= MAX_LEN:
        return {TAU: 1.0}
    v = path[-1]
    free = neighbours(v) - set(path)
    if not free:
        return {TAU: 1.0}
    closer = {u for u in free if SIM_TO_TARGET[u] > SIM_TO_TARGET[v]}
    favoured = (free - closer) if refused else closer
    weights = {u: (LAMBDA_H if u in favoured else LAMBDA_L) for u in free}
    total = sum(weights.values())
    return {u: w / total for u, w in weights.items()}


def draw_many(dist, seed: int, refusal_p: float = 0.0):
    """Walks with their drawing-order paths and the refusal flag fed after each query."""
    rng = np.random.default_rng(seed)
    flag_rng = np.random.default_rng(seed + 1)
    out = []
    for _ in range(SAMPLES):
        walk = dist.start(rng)
        flags = []
        node = walk.next_node()
        while node is not None:
            flag = bool(flag_rng.random() < refusal_p) if dist.needs_feedback else None
            flags.append(flag)
            node = walk.next_node(flag)
        order = tuple(reversed(walk.path)) if dist.reverse else walk.path
        out.append((walk, order, flags))
    return out


def transition_counts(samples):
    """(lifted state (v, S), refusal flag) -> Counter of the next drawn node or TAU."""
    counts: dict[tuple, Counter] = defaultdict(Counter)
    for walk, order, flags in samples:
        if not walk.distribution.reverse:
            assert order == walk.path
        for t in range(len(order) + 1):
            prefix = order[:t]
            key = (prefix[-1] if prefix else None, frozenset(prefix),
                   flags[t - 1] if t and not walk.distribution.reverse else None)
            counts[key][order[t] if t < len(order) else TAU] += 1
    return counts


def expected_for_key(key, law_fn):
    """The law depends on (v, S) only; rebuild a representative ordered path to evaluate it."""
    v, visited, flag = key
    path = tuple(sorted(visited - {v})) + ((v,) if v is not None else ())
    return law_fn(path, flag)


def check_chi_square(counts, law_fn) -> int:
    tested = 0
    for key, counter in counts.items():
        law = expected_for_key(key, law_fn)
        assert set(counter) <= set(law), f"drew outside the support at {key}: {counter}"
        total = sum(counter.values())
        if len(law) == 1:
            assert counter == Counter({next(iter(law)): total})
            continue
        cells = sorted(law)
        expected = np.array([law[c] * total for c in cells])
        if expected.min() < 5:
            continue
        observed = np.array([counter.get(c, 0) for c in cells])
        p_value = chisquare(observed, expected).pvalue
        assert p_value > 1e-4, (key, dict(counter), law, p_value)
        tested += 1
    return tested


CASES = [
    pytest.param(RandomNode, {}, expected_rn, 0.0, id="random_node"),
    pytest.param(GraphPath, {}, expected_gp, 0.0, id="graph_path"),
    pytest.param(AdaptiveRejection, {"lambda_h": LAMBDA_H, "lambda_l": LAMBDA_L}, expected_ar,
                 0.4, id="adaptive_rejection"),
]


@pytest.mark.parametrize("cls,options,law_fn,refusal_p", CASES)
def test_transition_frequencies_match_the_definition(graph, cls, options, law_fn, refusal_p):
    dist = cls(graph, max_length=MAX_LEN, **options)
    samples = draw_many(dist, seed=20240607, refusal_p=refusal_p)
    tested = check_chi_square(transition_counts(samples), law_fn)
    assert tested >= 8
    for walk, _, _ in samples:
        assert len(set(walk.path)) == len(walk.path), walk.path
        assert 1 <= len(walk.path) <= MAX_LEN
        assert walk.reached_terminal


@pytest.mark.parametrize("cls,options,law_fn,refusal_p", CASES)
def test_probability_is_the_product_of_the_drawn_transitions(graph, cls, options, law_fn,
                                                             refusal_p):
    dist = cls(graph, max_length=MAX_LEN, **options)
    for walk, order, flags in draw_many(dist, seed=7, refusal_p=refusal_p)[:500]:
        expected = 1.0
        for t in range(len(order)):
            flag = flags[t - 1] if t and not dist.reverse else None
            expected *= law_fn(order[:t], flag)[order[t]]
        assert walk.probability == pytest.approx(expected, rel=1e-12)
        assert walk.log_probability == pytest.approx(math.log(expected), rel=1e-12)
        record = walk.record()
        assert record.node_ids == [f"q{i}" for i in walk.path]
        assert math.prod(record.step_probabilities) == pytest.approx(expected, rel=1e-12)


def test_graph_path_ends_in_the_target_set_and_follows_edges(graph):
    for walk, _, _ in draw_many(GraphPath(graph, max_length=MAX_LEN), seed=3)[:1000]:
        assert walk.path[-1] in Q_T
        for a, b in itertools.pairwise(walk.path):
            assert b in neighbours(a)


def test_adaptive_walk_follows_edges(graph):
    dist = AdaptiveRejection(graph, max_length=MAX_LEN)
    for walk, _, _ in draw_many(dist, seed=5, refusal_p=0.5)[:1000]:
        for a, b in itertools.pairwise(walk.path):
            assert b in neighbours(a)


def enumerate_paths(law_fn, prefix=()):
    """All complete drawing-order paths with their probability, by exhaustive expansion."""
    law = law_fn(prefix, None)
    if law == {TAU: 1.0}:
        yield prefix, 1.0
        return
    for node, p in law.items():
        for path, q in enumerate_paths(law_fn, prefix + (node,)):
            yield path, p * q


@pytest.mark.parametrize("cls,law_fn", [(RandomNode, expected_rn), (GraphPath, expected_gp)])
def test_whole_conversation_frequencies_match_their_probability(graph, cls, law_fn):
    dist = cls(graph, max_length=MAX_LEN)
    exact = dict(enumerate_paths(law_fn))
    assert sum(exact.values()) == pytest.approx(1.0)
    samples = draw_many(dist, seed=11)
    seen = Counter(order for _, order, _ in samples)
    for walk, order, _ in samples[:200]:
        assert walk.probability == pytest.approx(exact[order], rel=1e-12)
    # pool the rare paths into one cell so every expected count is at least 5
    common = sorted(p for p in exact if exact[p] * SAMPLES >= 5)
    observed = [seen[p] for p in common]
    expected = [exact[p] * SAMPLES for p in common]
    rest_expected = SAMPLES - sum(expected)
    if rest_expected >= 5:
        observed.append(SAMPLES - sum(observed))
        expected.append(rest_expected)
    assert len(common) >= 10
    assert chisquare(observed, expected).pvalue > 1e-4


def test_terminal_state_when_no_unvisited_neighbour(graph):
    # q6's only neighbour is q2: after (q2, q6) nothing is left; from q6 alone q2 is forced
    for dist in (AdaptiveRejection(graph, max_length=10), GraphPath(graph, max_length=10)):
        assert dist.transitions(LiftedState((2, 6)), refused=False) == {TAU: 1.0}
        assert dist.transitions(LiftedState((6,)), refused=True) == {2: 1.0}
    rn = RandomNode(graph, max_length=10)
    assert rn.transitions(LiftedState(tuple(range(N)))) == {TAU: 1.0}


def test_adaptive_requires_the_refusal_flag(graph):
    walk = AdaptiveRejection(graph).start(np.random.default_rng(0))
    walk.next_node()
    with pytest.raises(ValueError, match="refusal"):
        walk.next_node()


def test_walks_are_reproducible_from_seed_and_index(graph):
    for kind in ("random_node", "graph_path", "adaptive_rejection"):
        dist = make_distribution(kind, graph)

        def refusal(node: int) -> bool:
            return node % 2 == 0

        a = sample_walk(dist, conversation_rng(42, 3), refusal).record()
        b = sample_walk(dist, conversation_rng(42, 3), refusal).record()
        assert a == b
        others = {tuple(sample_walk(dist, conversation_rng(42, i), refusal).path)
                  for i in range(20)}
        assert len(others) > 1


def test_unknown_distribution_is_a_clear_error(graph):
    with pytest.raises(ValueError, match="choose one of"):
        make_distribution("zigzag", graph)
