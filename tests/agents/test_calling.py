"""Call records: what the store keeps of each request."""

from dataclasses import asdict, fields

from vcrime_audit.agents.calling import CallRecord


def test_call_record_fields_are_asdict():
    record = CallRecord("judge", "assess", 1, "m", "h" * 32, True, "", "stop", 10, 20, 0.5)
    assert record.fields() == asdict(record)
    assert list(record.fields()) == [f.name for f in fields(CallRecord)]
