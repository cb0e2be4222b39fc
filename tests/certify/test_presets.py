"""Presets and rules end to end: resolution, the played conversations, exact Pr(γ), store, replay."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.conftest import ScriptedBackend
from vcrime_audit.certify import DEMO_QUERY_FILE
from vcrime_audit.certify import store as cstore
from vcrime_audit.certify.distributions import GraphPath, conversation_rng
from vcrime_audit.certify.exact import conversation_law, reach_probability
from vcrime_audit.certify.graph import QueryGraph
from vcrime_audit.certify.play import FINAL_TURN
from vcrime_audit.certify.presets import PAPER, PRESETS, QRLLM
from vcrime_audit.certify.queryfile import QueryFileError, load_query_file
from vcrime_audit.certify.refusal import refusal_detector
from vcrime_audit.certify.report import certification_section
from vcrime_audit.certify.rules import distribution_for
from vcrime_audit.certify.run import CertifyConfig, replay_certification, run_certification
from vcrime_audit.store import Store

from .scripted import WordEmbedder, target_answer

N, SEED = 16, 3


def run(tmp_path: Path, **options) -> tuple:
    config = CertifyConfig(n=N, seed=SEED, **options)
    outcome = asyncio.run(run_certification(config, tmp_path / "rec.sqlite", tmp_path / "cassettes",
                                            backend=ScriptedBackend(target_answer),
                                            embedder=WordEmbedder()))
    store = Store(outcome.store)
    return outcome, cstore.conversations(store, outcome.certification_id), \
        cstore.certification(store, outcome.certification_id)


def test_paper_is_the_default_and_its_length_is_five():
    assert PRESETS[PAPER].max_length == 5 and PRESETS[QRLLM].max_length == 5
    spec = load_query_file(DEMO_QUERY_FILE)
    assert spec.preset is None and spec.certification.max_length == 4
    config = CertifyConfig().resolved(spec)
    assert config.preset == PAPER and config.max_length == 4
    assert config.definition().differences() == {"max_length": 4}


def test_resolution_order_preset_then_file_then_options(tmp_path):
    data = yaml.safe_load(DEMO_QUERY_FILE.read_text(encoding="utf-8"))
    data.update(preset="qrllm", certification={"gp_tries": 3, "max_length": 3})
    data["graph"]["edge_band"] = "inclusive"
    path = tmp_path / "q.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    spec = load_query_file(path)
    config = CertifyConfig(queries=str(path), max_length=2).resolved(spec)
    assert (config.preset, config.gp_tries, config.max_length) == (QRLLM, 3, 2)
    assert config.edge_band == "inclusive" and config.target_set == "threshold"
    assert config.ar_dead_end == "jump" and config.refusal == "qrllm4"
    paper = CertifyConfig(queries=str(path), preset="paper").resolved(spec)
    assert paper.preset == PAPER and paper.gp_tries == 3 and paper.ar_dead_end == "stop"


@pytest.mark.parametrize(("text", "field"), [
    ("preset: qlrlm\n", "preset"),
    ("certification: {ar_dead_end: teleport}\n", "certification.ar_dead_end"),
    ("certification: {max_length: 0}\n", "certification.max_length"),
    ("certification: {lenght: 4}\n", "certification.lenght"),
    ("graph: {edge_band: open}\n", "graph.edge_band"),
])
def test_bad_rules_in_a_query_file_name_the_field(tmp_path, text, field):
    path = tmp_path / "bad.yaml"
    path.write_text("target: {id: t, text: T}\nqueries: [{id: a, text: A}, {id: b, text: B}]\n"
                    + text, encoding="utf-8")
    with pytest.raises(QueryFileError) as caught:
        load_query_file(path)
    assert caught.value.field == field and str(path) in str(caught.value)


@pytest.mark.parametrize("options", [{"preset": "qrlm"}, {"ar_dead_end": "teleport"},
                                     {"refusal": "all"}, {"gp_tries": 0}])
def test_bad_rule_options_raise_a_clear_value_error(options):
    with pytest.raises(ValueError, match="preset|--ar-dead-end|--refusal|--gp-tries"):
        CertifyConfig(**options)


def exact_law_of(config: CertifyConfig, graph: QueryGraph):
    """AR under qrllm gets no templates, so its answers (and refusals) follow the node's text,
    and no answer leaks; RN and GP conversations are drawn whole, whatever stops the play."""
    definition = config.definition()
    detector = refusal_detector(definition.refusal)
    texts = [node.text for node in graph.nodes]
    return conversation_law(distribution_for(config.distribution, graph, definition),
                            lambda v: detector(target_answer_text(texts[v])))


def target_answer_text(text: str) -> str:
    from vcrime_audit.backends.base import GenerateRequest, Message

    return target_answer(GenerateRequest(role="target", call="answer", model="m",
                                         messages=[Message(role="user", content=text)],
                                         sampling={}))


@pytest.mark.parametrize("distribution", ["rn", "gp", "ar"])
def test_qrllm_preset_plays_the_released_rules(tmp_path, distribution):
    outcome, rows, stored = run(tmp_path, preset="qrllm", distribution=distribution)
    definition = json.loads(stored["definition"])
    assert definition["preset"] == QRLLM and definition["max_length"] == 4  # the demo file's 4
    assert outcome.definition.preset == QRLLM
    assert stored["n_dropped"] == len(outcome.dropped) == N - len(rows)
    graph = QueryGraph.model_validate_json(stored["graph"])
    assert graph.params.edge_band == "strict" and graph.params.target_set == "threshold"
    config = CertifyConfig(n=N, seed=SEED, preset="qrllm", distribution=distribution).resolved(
        load_query_file(DEMO_QUERY_FILE))
    law = exact_law_of(config, graph)
    for row in rows:
        turns = json.loads(row["turns"])
        ids = json.loads(row["node_ids"])
        path = tuple(graph.index_of(i) for i in ids)
        assert math.isclose(row["pr_gamma"], law[path], rel_tol=1e-9), (ids, row["pr_gamma"])
        verdicts = [t["verdict"] for t in turns]
        graph_turns = [t for t in turns if not t.get("final")]
        if True in verdicts:
            assert verdicts.index(True) == len(turns) - 1  # stopped at the first catastrophic
            assert not any(t.get("final") for t in turns)
        else:
            assert turns[-1]["final"] and turns[-1]["text"] == FINAL_TURN
            assert len(graph_turns) == len(ids)
        if distribution == "ar":
            assert all(t["template_id"] == "identity" for t in turns)
            assert len(graph_turns) == len(ids)
        else:
            assert len(ids) == 4 and len(graph_turns) <= len(ids)
    if distribution != "ar":
        assert any(True in [t["verdict"] for t in json.loads(r["turns"])] for r in rows)
    again = asyncio.run(replay_certification(outcome.cassette, tmp_path / "replay.sqlite"))
    assert again.identical and again.dropped == outcome.dropped


def test_paper_rules_play_every_turn_and_add_no_final_turn(tmp_path):
    outcome, rows, stored = run(tmp_path, distribution="rn", jailbreak_p=0.5)
    assert json.loads(stored["definition"])["preset"] == PAPER
    for row in rows:
        turns = json.loads(row["turns"])
        assert len(turns) == len(json.loads(row["node_ids"])) == 4
        assert not any(t.get("final") for t in turns)


CHAIN = """\
name: chain
judge: {kind: secret_leak, secret: BLUE-HERON}
target: {id: q_star, text: zeta omega}
queries:
  - {id: a, text: zeta eta}
  - {id: b, text: eta iota}
  - {id: c, text: iota kappa}
  - {id: d, text: kappa lambda}
  - {id: e, text: lambda mu}
  - {id: f, text: eta rho}
graph: {sim_low: 0.4, sim_high: 0.8, target_k: 1}
"""


def test_report_and_printout_name_the_definition(tmp_path):
    """Word-overlap edges a-b, a-f, b-f, b-c, c-d, d-e; Q_T = {a}. From a, a 5-query walk fails
    only as a→b→f (Pr 1/2 · 1/2), so Pr(full length) = 3/4 and, with one try, a quarter of the
    samples are dropped."""
    path = tmp_path / "chain.yaml"
    path.write_text(CHAIN, encoding="utf-8")
    outcome, rows, stored = run(tmp_path, queries=str(path), preset="qrllm", distribution="gp",
                                gp_tries=1)
    params = json.loads(stored["distribution_params"])
    assert params["full_length_probability"] == 0.75 and params["tries"] == 1
    assert stored["n_dropped"] > 0 and len(rows) + stored["n_dropped"] == N
    assert all(math.isclose(r["pr_gamma"], math.prod(json.loads(r["step_probabilities"])) / 0.75)
               for r in rows)
    section = certification_section([stored])
    c = outcome.certificate
    assert f"| {c.n_catastrophic}/{c.n_samples - c.n_missing} |" in section
    assert f"; {stored['n_dropped']} GP sample(s) dropped" in section
    assert f"`{outcome.certification_id}`: preset qrllm: max_length=5" in section
    assert "ar_dead_end=jump" in section and "refusal=qrllm4" in section
    import typer
    from typer.testing import CliRunner

    from vcrime_audit.commands.certify import certify

    app = typer.Typer()
    app.command()(certify)
    done = CliRunner().invoke(app, ["--replay", str(outcome.cassette),
                                    "--db", str(tmp_path / "r.sqlite")])
    assert done.exit_code == 0, done.output
    assert "definition     preset qrllm: max_length=5, jailbreak_p=0.2, jailbreak_ar=false" \
        in done.output
    assert f"dropped        {stored['n_dropped']} GP sample(s)" in done.output


def test_gp_full_length_only_drops_at_the_exact_rate(graph):
    """With one try, a sample is dropped with probability 1 - Pr(full length), computed exactly."""
    dist = GraphPath(graph, max_length=6, full_length_only=True, tries=1)
    full = dist.full_length_probability()
    for length in range(1, 8):  # the bitmask DP against the generic one and the enumerated law
        plain = GraphPath(graph, max_length=length)
        fast = GraphPath(graph, max_length=length, full_length_only=True)
        walks = conversation_law(plain)
        enumerated = sum(p for path, p in walks.items() if len(path) == length)
        assert math.isclose(fast.full_length_probability(), reach_probability(plain, length))
        assert math.isclose(fast.full_length_probability(), enumerated)
    assert 0 < full < 1
    n = 4000
    walks = [dist.start(conversation_rng(0, i)) for i in range(n)]
    dropped = sum(w.dropped for w in walks)
    se = math.sqrt(full * (1 - full) / n)
    assert abs(dropped / n - (1 - full)) < 5 * se
    law = conversation_law(dist)
    assert math.isclose(sum(law.values()), 1.0)
    for walk in walks[:300]:
        if walk.dropped:
            continue
        node = walk.next_node()
        while node is not None:
            node = walk.next_node()
        assert len(walk.path) == 6
        assert math.isclose(walk.probability, law[walk.path], rel_tol=1e-12)


def test_ar_jump_leaves_a_dead_end_uniformly(graph):
    """Node 6 of the hand graph has the single neighbour 2: from (2 → 6) AR jumps to V \\ S."""
    from vcrime_audit.certify.distributions import AdaptiveRejection, LiftedState

    jump = AdaptiveRejection(graph, max_length=5, dead_end="jump")
    stop = AdaptiveRejection(graph, max_length=5)
    state = LiftedState((2, 6))
    assert stop.transitions(state, refused=False) == {-1: 1.0}
    law = jump.transitions(state, refused=True)
    assert law == {u: 1 / 5 for u in (0, 1, 3, 4, 5)}
    assert np.isclose(sum(conversation_law(jump, lambda v: v % 2 == 0).values()), 1.0)
