"""Call records: what the store keeps of each request."""

from dataclasses import asdict, fields

from vcrime_audit.agents.calling import CallRecord
from vcrime_audit.backends.base import GenerateRequest, Message
from vcrime_audit.canonical import content_hash
from vcrime_audit.models import Sampling

STORED = [f.name for f in fields(CallRecord) if f.name != "request"]


def test_call_record_fields_are_asdict_without_the_request():
    record = CallRecord("judge", "assess", 1, "m", "h" * 32, True, "", "stop", 10, 20, 0.5)
    assert record.fields() == {k: v for k, v in asdict(record).items() if k != "request"}
    assert list(record.fields()) == STORED


def test_a_records_request_hash_is_made_from_its_request_when_its_row_is():
    request = GenerateRequest(role="judge", call="assess", model="m", attempt=0,
                              messages=[Message(role="user", content="Is the door locked? \u00e9")],
                              sampling=Sampling(seed=7, max_tokens=64), output_schema={"type": "object"})
    record = CallRecord("judge", "assess", 0, "m", "", True, "", "stop", 10, 20, 0.5, request=request)
    row = record.fields()
    assert list(row) == STORED
    assert row["request_hash"] == content_hash(request) == content_hash(request.model_dump(mode="json"))
