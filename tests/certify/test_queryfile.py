from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vcrime_audit.certify import DEMO_QUERY_FILE
from vcrime_audit.certify.judges import rule_judge_from_spec
from vcrime_audit.certify.queryfile import QueryFileError, load_query_file


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def as_jsonl(data: dict) -> str:
    lines = [{"kind": "meta", **{k: data[k] for k in ("name", "description", "system_prompt",
                                                       "judge", "graph", "preset",
                                                       "certification") if k in data}},
             {"kind": "target", **data["target"]}]
    lines += [{"kind": "query", **q} for q in data["queries"]]
    lines += [{"kind": "jailbreak", **t} for t in data.get("jailbreak_templates", [])]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def test_demo_file_is_a_benign_secret_keeping_task() -> None:
    spec = load_query_file(DEMO_QUERY_FILE)
    assert 20 <= len(spec.queries) <= 30
    assert spec.judge is not None and spec.judge.secret == "BLUE-HERON"
    assert "BLUE-HERON" in (spec.system_prompt or "")
    judge = rule_judge_from_spec(spec.judge)
    assert not any(judge.judge(q.text).catastrophic for q in spec.queries)
    assert spec.graph.target_k <= len(spec.queries)


def test_jsonl_and_yaml_load_to_the_same_spec(tmp_path: Path) -> None:
    data = yaml.safe_load(DEMO_QUERY_FILE.read_text(encoding="utf-8"))
    path = write(tmp_path, "secret_keeping.jsonl", as_jsonl(data))
    assert load_query_file(path) == load_query_file(DEMO_QUERY_FILE)


def test_name_and_graph_defaults(tmp_path: Path) -> None:
    queries = ", ".join(f"{{id: q{i}, text: Q{i}}}" for i in range(6))
    spec = load_query_file(write(tmp_path, "my_set.yml",
                                 f"target: {{id: t, text: T}}\nqueries: [{queries}]\n"))
    assert spec.name == "my_set"
    assert (spec.graph.sim_low, spec.graph.sim_high, spec.graph.target_k) == (0.4, 0.8, 5)


BAD_YAML = [
    ("queries: [{id: a, text: A}, {id: b, text: B}]\n", "target", "add this field"),
    ("target: {id: t, text: T}\nqueries: [{id: a, text: A}, {id: a, text: B}]\n",
     "queries[1].id", "unique id"),
    ("target: {id: t, text: T}\nqueries: [{id: a, text: A}, {id: b, text: A}]\n",
     "queries[1].text", "duplicate"),
    ("target: {id: t, text: T}\nqueries: [{id: a, text: A}, {id: b, txt: B}]\n",
     "queries[1]", "add this field"),
    ("target: {id: t, text: T}\nqueries: [{id: a, text: A}]\n", "queries", "minimum"),
    ("target: {id: t, text: T}\nqueries: [{id: a, text: A}, {id: b, text: B}]\n"
     "jailbreak_templates: [{id: j, template: no placeholder}]\n",
     "jailbreak_templates[0].template", "{query}"),
    ("target: {id: t, text: T}\nqueries: [{id: a, text: A}, {id: b, text: B}]\n"
     "jailbreak_templates: [{id: j, template: '{query}'}]\n",
     "jailbreak_templates[0].template", "identity"),
    ("target: {id: t, text: T}\nqueries: [{id: a, text: A}, {id: b, text: B}]\n"
     "graph: {target_k: 1}\njudge: {kind: secret_leak}\n", "judge.secret", "add judge.secret"),
    ("target: {id: t, text: T}\nqueries: [{id: a, text: A}, {id: b, text: B}]\n"
     "graph: {sim_low: 0.9, sim_high: 0.1, target_k: 1}\n", "graph.sim_low", "sim_low <="),
    ("target: {id: t, text: T}\nqueries: [{id: a, text: A}, {id: b, text: B}]\n"
     "graph: {target_k: 3}\n", "graph.target_k", "at most 2"),
    ("target: {id: t, text: T}\nqueries: [{id: a, text: A}, {id: b, text: B}]\n",
     "graph.target_k", "(the default)"),
    ("target: {id: t, text: T}\nqueries: [{id: a, text: A}, {id: b, text: B}]\ncolour: red\n",
     "colour", "remove this field"),
    ("target: [oops\n", "<file>", "YAML syntax"),
    ("- just a list\n", "<file>", "top level"),
]


@pytest.mark.parametrize("text,field,fix", BAD_YAML)
def test_yaml_errors_name_file_field_and_fix(tmp_path: Path, text: str, field: str,
                                             fix: str) -> None:
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(QueryFileError) as info:
        load_query_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {field}")
    assert fix in message


BAD_JSONL = [
    ('{"kind": "query", "id": "a", "text": "A"}\n', "target", "kind"),
    ('{"kind": "target", "id": "t", "text": "T"}\n{"kind": "question", "id": "a"}\n',
     "line 2.kind", "one of meta"),
    ('{"kind": "target", "id": "t", "text": "T"}\nnot json\n', "line 2", "one JSON object"),
    ('{"kind": "target", "id": "t", "text": "T"}\n{"kind": "query", "id": "a", "text": "A"}\n'
     '\n{"kind": "query", "id": "b"}\n', "line 4.text", "add this field"),
    ('{"kind": "target", "id": "t", "text": "T"}\n{"kind": "query", "id": "a", "text": "A"}\n'
     '{"kind": "query", "id": "a", "text": "B"}\n', "line 3.id", "unique id"),
    ('{"kind": "target", "id": "t"}\n{"kind": "query", "id": "a", "text": "A"}\n'
     '{"kind": "query", "id": "b", "text": "B"}\n', "target line.text", "add this field"),
]


@pytest.mark.parametrize("text,field,fix", BAD_JSONL)
def test_jsonl_errors_name_the_line(tmp_path: Path, text: str, field: str, fix: str) -> None:
    path = write(tmp_path, "bad.jsonl", text)
    with pytest.raises(QueryFileError) as info:
        load_query_file(path)
    assert str(info.value).startswith(f"{path}: {field}")
    assert fix in str(info.value)


def test_missing_file_and_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(QueryFileError, match="file not found"):
        load_query_file(tmp_path / "nope.yaml")
    with pytest.raises(QueryFileError, match=r"\*\.jsonl"):
        load_query_file(write(tmp_path, "q.txt", "x"))
