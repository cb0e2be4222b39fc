"""`vcrime-audit determinism`: recorded calls sent again to a live backend and compared byte for
byte, on the embedded model (local), a loopback llama.cpp server (openai) and transformers.

The measured rates are printed (``pytest -s``)."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from typer.testing import CliRunner

from tests.backends.server import llama_server
from vcrime_audit.backends.base import GenerateRequest, GenerateResult, Message, Sampling
from vcrime_audit.backends.registry import make_backend
from vcrime_audit.cassette import Cassette, RecordingBackend, RecordMode
from vcrime_audit.cli import app
from vcrime_audit.determinism import check, first_difference, recorded_backend, sample_positions
from vcrime_audit.models import get_model

MODEL = "smollm2-135m"
COLOR = {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}},
         "required": ["color"], "additionalProperties": False}
PROMPTS = ("Name one colour of the sky.", "Pick a colour for a fire truck.",
           "Which colour is grass?", "Say a colour.")


def test_first_difference_by_hand():
    assert first_difference(b"abc", b"abc") is None
    assert first_difference(b"abc", b"abd") == 2
    assert first_difference(b"abc", b"ab") == 2 and first_difference(b"", b"x") == 0
    assert first_difference("é".encode(), b"e") == 0


def test_sample_is_seeded_sorted_and_capped():
    assert sample_positions(10, 4, 1) == sample_positions(10, 4, 1)
    assert sample_positions(10, 4, 1) == sorted(sample_positions(10, 4, 1))
    assert len(set(sample_positions(10, 4, 1))) == 4 and sample_positions(3, 9, 0) == [0, 1, 2]
    with pytest.raises(ValueError, match="--sample must be at least 1"):
        sample_positions(3, 0, 0)


def test_recording_backend_is_read_from_the_fingerprints():
    assert recorded_backend([{"fingerprint": {"engine": "llama-cpp-python"}}]) == "local"
    assert recorded_backend([{"fingerprint": {"engine": "openai-compatible"}}]) == "openai"
    with pytest.raises(ValueError, match="pass --backend"):
        recorded_backend([{"fingerprint": {"engine": "scripted"}}])


def test_missing_cassette_is_one_clear_line(tmp_path):
    done = CliRunner().invoke(app, ["determinism", str(tmp_path / "none.jsonl.gz")])
    assert done.exit_code == 2 and "none.jsonl.gz: no such cassette; fix:" in done.output


def requests(model: str) -> list[GenerateRequest]:
    """Greedy and sampled short calls, with and without a schema."""
    out = []
    for i, prompt in enumerate(PROMPTS):
        sampling = Sampling(temperature=0.7 if i % 2 else 0.0, top_p=0.95, max_tokens=20, seed=i)
        out.append(GenerateRequest(role="judge", call=f"probe{i}", model=model,
                                   messages=[Message(role="user", content=prompt)], sampling=sampling,
                                   output_schema=COLOR if i < 3 else None))
    return out


class Tampered:
    """The live backend, but the answer to one call is changed at byte ``at`` (a stand-in for a
    backend that drifted after the recording)."""

    def __init__(self, inner, call: str, at: int) -> None:
        self.inner, self.call, self.at, self.name = inner, call, at, inner.name

    def fingerprint(self, model):
        return self.inner.fingerprint(model)

    async def generate(self, request) -> GenerateResult:
        result = await self.inner.generate(request)
        if request.call == self.call:
            text = result.text[:self.at] + "\u00a7" + result.text[self.at + 1:]
            result = result.model_copy(update={"text": text})
        return result

    async def aclose(self):
        pass


def record(backend, path, model: str) -> list[GenerateResult]:
    """Record the probe calls into a cassette whose header names the model entries."""
    cassette = Cassette(path, RecordMode.once)
    cassette.meta = {"models": {model: get_model(model).model_dump(mode="json")}, "fingerprints": {}}
    recorder = RecordingBackend(cassette, backend)

    async def go():
        return [await recorder.generate(r) for r in requests(model)]

    results = asyncio.run(go())
    cassette.save()
    return results


def measured(output: str) -> tuple[int, int]:
    rate = next(line for line in output.splitlines() if line.startswith("rate"))
    same, sent = rate.split()[1].split("/")
    return int(same), int(sent)


def run_check(path, backend: str, db) -> tuple[str, int, int]:
    done = CliRunner().invoke(app, ["determinism", str(path), "--sample", str(len(PROMPTS)),
                                    "--backend", backend, "--db", str(db)])
    assert done.exit_code == 0, done.output
    same, sent = measured(done.output)
    calls = [line for line in done.output.splitlines() if line.startswith("call ")]
    assert sent == len(PROMPTS) == len(calls)
    assert same == sum("identical (" in line for line in calls)
    rows = sqlite3.connect(db).execute("SELECT COUNT(*), SUM(identical), MIN(fingerprint_match) FROM "
                                       "determinism WHERE backend = ?", [backend]).fetchone()
    assert rows == (sent, same, 1)
    assert "fingerprint  smollm2-135m: same as recorded" in done.output
    print(f"\n[determinism] {backend}: {same}/{sent} identical\n{done.output}")
    return done.output, same, sent


@pytest.mark.live
def test_local_reproduces_its_recording_and_catches_a_changed_answer(tmp_path):
    entry = get_model(MODEL)
    backend = make_backend("local", {MODEL: entry})
    path = tmp_path / "local.jsonl.gz"
    recorded = record(backend, path, MODEL)
    _, same, sent = run_check(path, "local", tmp_path / "s.sqlite")
    assert same == sent  # llama.cpp on one CPU: the same bytes again
    victim = requests(MODEL)[2].call
    report = asyncio.run(check(path, len(PROMPTS), 0, backend=Tampered(backend, victim, 3)))
    changed = [c for c in report.checks if not c.identical]
    assert [c.call for c in changed] == [victim] and changed[0].first_difference == 3
    assert changed[0].live_bytes == len(recorded[2].text.encode()) + 1  # "§" is two bytes
    assert report.rate == pytest.approx((len(PROMPTS) - 1) / len(PROMPTS))
    asyncio.run(backend.aclose())


@pytest.mark.live
def test_openai_against_a_loopback_llama_cpp_server(tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp.server.app")
    entry = get_model(MODEL)
    with llama_server(entry.weights_path(), entry.weights.served_name, tmp_path / "server.log") as server:
        monkeypatch.setenv("VCRIME_OPENAI_BASE_URL", server.base_url)
        backend = make_backend("openai", {MODEL: entry})
        single = make_backend("openai", {"smollm2-135m-server": get_model("smollm2-135m-server")})
        assert backend.fingerprint(MODEL) == single.fingerprint("smollm2-135m-server")
        path = tmp_path / "openai.jsonl.gz"
        record(backend, path, MODEL)
        run_check(path, "openai", tmp_path / "s.sqlite")


@pytest.mark.live
def test_transformers_on_the_default_model(tmp_path):
    pytest.importorskip("transformers")
    backend = make_backend("transformers", {MODEL: get_model(MODEL)})
    path = tmp_path / "transformers.jsonl.gz"
    record(backend, path, MODEL)
    asyncio.run(backend.aclose())
    run_check(path, "transformers", tmp_path / "s.sqlite")


@pytest.mark.live
def test_study_check_determinism_writes_the_store_and_the_report(tmp_path):
    """One run of the demo study (its committed cassette), one recorded call sent again."""
    import shutil

    import yaml

    from tests.followups.conftest import ROOT
    from vcrime_audit.audit.other_sections import other_sections

    spec = yaml.safe_load((ROOT / "studies" / "demo.yaml").read_text())
    spec.update(tasks=["robotics_company__data_theft"], seeds=[0], db=str(tmp_path / "study.sqlite"),
                cassette_dir=str(tmp_path / "cassettes"))
    (tmp_path / "one.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "cassettes").mkdir()
    for path in (ROOT / "cassettes" / "study-demo").glob("robotics_company__data_theft-s0-*"):
        shutil.copy(path, tmp_path / "cassettes")
    done = CliRunner().invoke(app, ["study", str(tmp_path / "one.yaml"), "--replay",
                                    "--check-determinism", "1"])
    assert done.exit_code == 0, done.output
    db = tmp_path / "study.sqlite"
    rows = sqlite3.connect(db).execute(
        "SELECT d.run_id, d.identical, r.cassette FROM determinism d JOIN runs r ON r.run_id = d.run_id"
        ).fetchall()
    assert len(rows) == 1 and rows[0][2].endswith(".jsonl.gz")
    same = rows[0][1]
    assert f"determinism {same}/1 re-sent call(s) identical ({same:.2f}) over 1 run(s)" in done.output
    section = "\n".join(other_sections(db))
    assert "## Determinism" in section and f"| local | 1 | 1 | {same} | {same:.2f} | 1/1 |" in section
    print(f"\n[determinism] study demo run, local, 1 call: {same}/1 identical")


def test_run_id_comes_from_a_run_cassette_only():
    from tests.followups.conftest import DEMO_RUN, ROOT
    from vcrime_audit.determinism import run_id_of

    assert run_id_of(DEMO_RUN) == DEMO_RUN.name.removesuffix(".jsonl.gz")
    assert run_id_of(sorted((ROOT / "cassettes").glob("rejudge-*.jsonl.gz"))[0]) is None
