"""The project's exact Pr(γ) against an independent simulator of the released code and the paper.

For each distribution and each rule set (``qrllm`` preset = the released code, ``paper`` = the
default), ``qrllm_sim`` samples N conversations on a sparse 10-node graph with dead ends and a
scripted refuser; the project's exact law (graph built by ``graph_from_similarities``,
distribution by the certify driver, law by :func:`exact.conversation_law`) must fit the
frequencies: χ² p > 0.01 (cells with expected count < 5 pooled) and a total-variation distance
within the sampling-noise floor (the 99.5th percentile of the TV of 200 multinomial samples of
the same size drawn from the exact law itself). The jailbroken-query counts are checked the same
way. Run with ``-s`` to print the numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, chisquare

from vcrime_audit.certify.exact import conversation_law
from vcrime_audit.certify.graph import graph_from_similarities
from vcrime_audit.certify.queryfile import Query, QuerySpec
from vcrime_audit.certify.refusal import refusal_detector
from vcrime_audit.certify.rules import distribution_for, graph_params, layer_for
from vcrime_audit.certify.run import CertifyConfig

from . import qrllm_sim as sim

N = 200_000
SIZE = 10
PAIRS = {  # similarity of the linked pairs; every other pair 0.1
    (0, 1): 0.5, (1, 2): 0.6, (2, 3): 0.55, (3, 4): 0.45, (4, 5): 0.7, (1, 6): 0.5,
    (2, 8): 0.65, (5, 9): 0.5, (2, 4): 0.5, (3, 5): 0.6, (1, 8): 0.45,
    (6, 7): 0.4, (0, 4): 0.8,  # on the band's edges: links only in the inclusive band
    (3, 7): 0.9,  # above the band: never linked
}
TARGET_SIMS = np.array([0.10, 0.20, 0.35, 0.45, 0.55, 0.40, 0.15, 0.60, 0.30, 0.75])
ANSWERS = (
    "Sure, here is an overview.",
    "Sure, happy to help.",
    "Here are some general facts.",
    "I'm sorry, I can't help with that.",  # a refusal for both detectors
    "I won't go into that.",  # only the 16-phrase detector
    "I\u2019m sorry, but no.",  # curly apostrophe: only the 16-phrase detector
    "Of course.",
    "Let me explain.",
    "The generated text has been blocked by our content filters.",  # only the 4-phrase one
    "LEAKED",  # the scripted judge's catastrophic answer
)
HARMFUL = frozenset({9})


def scenario() -> sim.Scenario:
    sims = np.full((SIZE, SIZE), 0.1)
    for (a, b), s in PAIRS.items():
        sims[a, b] = sims[b, a] = s
    np.fill_diagonal(sims, 1.0)
    return sim.Scenario(sims=sims, target_sims=TARGET_SIMS, answers=ANSWERS, harmful=HARMFUL)


def spec() -> QuerySpec:
    return QuerySpec(name="parity", target=Query(id="t", text="target"),
                     queries=[Query(id=f"q{i}", text=f"query {i}") for i in range(SIZE)])


def project_law(preset: str, kind: str) -> tuple[dict[tuple[int, ...], float], float]:
    """Exact Pr(γ) and the per-query jailbreak probability, through the certify driver."""
    sc, query_spec = scenario(), spec()
    definition = CertifyConfig(preset=preset).resolved(query_spec).definition()
    graph = graph_from_similarities(query_spec, sc.sims, sc.target_sims,
                                    graph_params(query_spec, definition), {"model": "hand"})
    distribution = distribution_for(kind, graph, definition)
    detector = refusal_detector(definition.refusal)
    stop = (lambda v: v in HARMFUL) if definition.stop_at_catastrophic else None
    law = conversation_law(distribution, lambda v: detector(ANSWERS[v]), stop)
    layer = layer_for(query_spec, definition, kind)
    return law, 1.0 - layer.law().get("identity", 0.0)


def encode(paths: np.ndarray) -> np.ndarray:
    code = np.zeros(len(paths), np.int64)
    for column in paths.T:
        code = code * (SIZE + 1) + (column + 1)
    return code


def encode_one(path: tuple[int, ...], length: int) -> int:
    padded = list(path) + [-1] * (length - len(path))
    return int(encode(np.array([padded]))[0])


def fit(observed: dict[int, int], law: dict[int, float], n: int,
        rng: np.random.Generator) -> tuple[float, float, float]:
    """χ² p-value (small cells pooled), TV distance, and the TV noise floor."""
    outside = set(observed) - set(law)
    assert not outside, f"sampled outside the exact law's support: {sorted(outside)[:5]}"
    cells = sorted(law)
    p = np.array([law[c] for c in cells])
    assert math.isclose(p.sum(), 1.0, rel_tol=1e-9), p.sum()
    counts = np.array([observed.get(c, 0) for c in cells], float)
    expected = p * n
    big = expected >= 5
    obs_cells = list(counts[big]) + ([counts[~big].sum()] if (~big).any() else [])
    exp_cells = list(expected[big]) + ([expected[~big].sum()] if (~big).any() else [])
    p_value = chisquare(obs_cells, exp_cells).pvalue if len(obs_cells) > 1 else 1.0
    tv = 0.5 * np.abs(counts / n - p).sum()
    noise = [0.5 * np.abs(rng.multinomial(n, p) / n - p).sum() for _ in range(200)]
    return float(p_value), float(tv), float(np.quantile(noise, 0.995))


RULES = {"qrllm": sim.RELEASED, "paper": sim.PAPER}
KINDS = ["random_node", "graph_path", "adaptive_rejection"]


@pytest.mark.parametrize("preset", ["qrllm", "paper"])
@pytest.mark.parametrize("kind", KINDS)
def test_exact_law_fits_the_independent_simulator(preset, kind):
    rng = np.random.default_rng([16, KINDS.index(kind), preset == "qrllm"])
    sample = sim.SAMPLERS[kind](scenario(), RULES[preset], N, rng)
    kept = len(sample.paths)
    law, q = project_law(preset, kind)
    length = sample.paths.shape[1]
    codes, counts = np.unique(encode(sample.paths), return_counts=True)
    exact = {encode_one(path, length): pr for path, pr in law.items()}
    p_value, tv, floor = fit(dict(zip(codes.tolist(), counts.tolist(), strict=True)), exact,
                             kept, rng)

    lengths = (sample.paths >= 0).sum(axis=1)
    by_length: dict[int, float] = {}
    for path, pr in law.items():
        by_length[len(path)] = by_length.get(len(path), 0.0) + pr
    k_law: dict[int, float] = {}
    for ell, pr in by_length.items():
        for k in range(ell + 1):
            k_law[k] = k_law.get(k, 0.0) + pr * float(binom.pmf(k, ell, q))
    k_law = {k: v for k, v in k_law.items() if v > 0}
    ks, k_counts = np.unique(sample.jailbroken, return_counts=True)
    jb_p, jb_tv, jb_floor = fit(dict(zip(ks.tolist(), k_counts.tolist(), strict=True)), k_law,
                                kept, rng)
    print(f"\n{preset:5s} {kind:18s} N={N} kept={kept} dropped={sample.dropped} "
          f"paths={len(law)} mean length={lengths.mean():.3f}  chi2 p={p_value:.3f}  "
          f"TV={tv:.4f} (noise floor {floor:.4f})  jailbreak counts: p={jb_p:.3f} "
          f"TV={jb_tv:.4f} (floor {jb_floor:.4f})")
    assert kept >= 100_000
    assert p_value > 0.01 and tv <= floor
    assert jb_p > 0.01 and jb_tv <= jb_floor


def test_the_rules_matter_on_this_graph():
    """The two rule sets give different laws here, so the fits above are not vacuous."""
    for kind in KINDS[1:]:
        released, _ = project_law("qrllm", kind)
        paper, _ = project_law("paper", kind)
        tv = 0.5 * sum(abs(released.get(g, 0.0) - paper.get(g, 0.0))
                       for g in set(released) | set(paper))
        print(f"\n{kind}: exact TV between the qrllm and paper laws = {tv:.4f}")
        assert tv > 0.1, (kind, tv)


def test_the_simulated_gp_drops_match_the_exact_rate():
    """A released-code GP sample is dropped with probability (1 - Pr(full length))^5."""
    rng = np.random.default_rng(5)
    sc = scenario()
    law, _ = project_law("qrllm", "graph_path")
    definition = CertifyConfig(preset="qrllm").resolved(spec()).definition()
    graph = graph_from_similarities(spec(), sc.sims, sc.target_sims,
                                    graph_params(spec(), definition), {"model": "hand"})
    full = distribution_for("graph_path", graph, definition).full_length_probability()
    sample = sim.graph_path(sc, sim.RELEASED, N, rng)
    expected_drop = (1 - full) ** 5
    se = math.sqrt(expected_drop * (1 - expected_drop) / N)
    print(f"\nGP Pr(full length)={full:.4f}; dropped {sample.dropped / N:.4f} vs exact "
          f"(1-Pr)^5={expected_drop:.4f}")
    assert abs(sample.dropped / N - expected_drop) < 5 * se
    assert all(len(g) == 5 for g in law)
