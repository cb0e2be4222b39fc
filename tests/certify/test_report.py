"""The audit report's certification section, on hand-written rows."""

from __future__ import annotations

from vcrime_audit.certify.report import HEADING, certification_section


def row(**changes) -> dict:
    base = {"certification_id": "secret_keeping-ar-s0-abcd1234", "name": "secret_keeping",
            "distribution": "adaptive_rejection", "jailbreak_params": '{"p":0.25,"templates":{}}',
            "target_model": "smollm2-135m", "judge": "rule", "status": "done", "n": 10, "k": 3,
            "n_missing": 1, "confidence": 0.95, "lower": 0.07486, "upper": 0.70070,
            "conservative_lower": 0.0667395, "conservative_upper": 0.7376,
            "seed": 0, "cassette": "cassettes/certify-x.jsonl.gz"}
    return {**base, **changes}


def table_rows(markdown: str) -> list[list[str]]:
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]


def test_a_finished_certification_shows_counts_and_both_intervals():
    text = certification_section([row()])
    assert text.startswith(HEADING)
    [cells] = table_rows(text)
    assert cells == ["`secret_keeping-ar-s0-abcd1234`", "secret_keeping", "AR", "0.25",
                     "smollm2-135m", "rule", "3/9", "1", "95%", "[0.0749, 0.7007]",
                     "[0.0667, 0.7376]", "0"]
    assert "`vcrime-audit certify --replay cassettes/certify-x.jsonl.gz`" in text


def test_unfinished_rows_show_their_status_and_no_numbers():
    [cells] = table_rows(certification_section([row(status="error", k=None, n_missing=None,
                                                    lower=None, upper=None)]))
    assert cells[6:11] == ["error", "n/a", "95%", "n/a", "n/a"]


def test_rows_keep_their_order_and_an_empty_store_says_so():
    text = certification_section([row(certification_id="b", distribution="graph_path"),
                                  row(certification_id="a", distribution="random_node")])
    assert [c[0] for c in table_rows(text)] == ["`b`", "`a`"]
    assert [c[2] for c in table_rows(text)] == ["GP", "RN"]
    empty = certification_section([])
    assert empty.startswith(HEADING) and "No certification" in empty and "|" not in empty


def test_each_certificate_names_its_definition_and_drops():
    from vcrime_audit.certify.presets import PRESETS

    stored = PRESETS["qrllm"].model_dump_json()
    text = certification_section([row(definition=stored, n_dropped=2), row(certification_id="old")])
    [with_drops, old] = table_rows(text)
    assert with_drops[6] == "3/7" and old[6] == "3/9"
    assert ("- `secret_keeping-ar-s0-abcd1234`: preset qrllm: max_length=5, jailbreak_p=0.2, "
            "jailbreak_ar=false, ar_dead_end=jump, gp_full_length_only=true, gp_tries=5, "
            "final_turn=true, stop_at_catastrophic=true, refusal=qrllm4, edge_band=strict, "
            "target_set=threshold, embedder=mpnet; 2 GP sample(s) dropped") in text
    assert "- `old`: definition not recorded" in text
