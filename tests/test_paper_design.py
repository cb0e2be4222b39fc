"""studies/paper.yaml is the paper's grid on open-weight models of eight vendors, and every
study, default and script writes outside the tracked files."""

from __future__ import annotations

import re
import subprocess

from typer.testing import CliRunner

from tests.committed import ALL, CASSETTES, CERTIFY, DEMO_RUN, FOLLOWUPS
from tests.readme import ROOT, has_git
from vcrime_audit.cli import app
from vcrime_audit.defaults import DEFAULT_CASSETTES, DEFAULT_DB, DEFAULT_REPORTS
from vcrime_audit.followups.plan import load_rejudge_plan
from vcrime_audit.models import get_model
from vcrime_audit.study import StudyConfig, grid, load_study

PAPER = ROOT / "studies" / "paper.yaml"


def test_the_paper_study_is_8_attackers_by_40_tasks_by_3_seeds_with_one_judge_and_world_manager():
    spec = load_study(PAPER)
    runs = grid(spec)
    assert (len(spec.attackers), len({r.task for r in runs}), len(spec.seeds)) == (8, 40, 3)
    assert len(runs) == 960 == len({r.run_id() for r in runs})
    assert {r.judge for r in runs} == {spec.judge} and {r.world_manager for r in runs} == {spec.world_manager}
    assert spec.judge == spec.world_manager and (spec.max_turns, spec.stall_turns) == (60, 30)


def test_the_paper_models_are_open_weight_vllm_entries_of_eight_vendors():
    spec = load_study(PAPER)
    entries = [get_model(name) for name in spec.attackers]
    assert len({e.vendor for e in entries}) == 8 and len({e.family for e in entries}) == 8
    for e in entries:
        assert e.backend == "vllm" == spec.backend
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", e.weights.hf_repo or ""), e.name
        assert re.fullmatch(r"([0-9a-f]{40})?", e.revision), e.name
        assert f"hf download {e.weights.hf_repo}" in e.weights.install
        if e.revision:
            assert f"--revision {e.revision}" in e.weights.install
        assert e.options["engine"]["tensor_parallel_size"] >= 1 and e.options["structured_outputs_backend"]
    share = sum(e.options["engine"]["gpu_memory_utilization"] for e in entries)
    assert share <= 0.9, f"the eight engines share the GPUs: {share:.2f} of their memory"


def test_models_lists_every_entry_with_its_state_under_a_header(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # no downloaded weights under ~/.cache
    out = CliRunner().invoke(app, ["models"]).output
    lines = out.splitlines()
    assert lines[0].split() == ["model", "engines", "vendor", "family", "weights", "where"]
    for name in load_study(PAPER).attackers:
        [row] = [line for line in lines if line.startswith(name + " ")]
        assert "not installed" in row and get_model(name).weights.hf_repo in row
        assert f"install   {name}: hf download" in out


def test_new_output_goes_to_ignored_folders_by_default():
    for path in (DEFAULT_DB, DEFAULT_CASSETTES, DEFAULT_REPORTS, StudyConfig.model_fields["db"].default,
                 StudyConfig.model_fields["cassette_dir"].default):
        assert path.parts[0] == "runs", path
    for study in sorted((ROOT / "studies").glob("*.yaml")):
        spec = load_rejudge_plan(study) if study.stem.endswith("rejudge") else load_study(study)
        assert spec.db.parts[0] == "runs" and spec.cassette_dir.parts[0] == "runs", study
    if has_git():
        probe = ["runs/x.sqlite", "runs/cassettes/x.jsonl.gz", "runs/reports/x/report.md"]
        ignored = subprocess.run(["git", "check-ignore", *probe], cwd=ROOT, capture_output=True, text=True)
        assert ignored.stdout.split() == probe


def test_the_committed_cassettes_are_named_exactly_in_the_tests_and_the_demo_script():
    assert all(p.is_file() for p in ALL)
    if has_git():
        tracked = subprocess.run(["git", "ls-files", "cassettes"], cwd=ROOT, capture_output=True,
                                 text=True, check=True).stdout.split()
        assert sorted(tracked) == sorted(str(p.relative_to(ROOT)) for p in ALL)
    script = (ROOT / "scripts" / "demo_report.sh").read_text()
    assert "*" not in script.replace("set -euo pipefail", "")
    for path in (DEMO_RUN, CERTIFY, *FOLLOWUPS.values()):
        assert f" {path.relative_to(ROOT)} " in script or f" {path.relative_to(ROOT)}\n" in script
    assert CASSETTES == ROOT / "cassettes"
