"""Upgrade a cassette to the format written now (3). Format 1 goes to format 2 first, only after
its replay matches its recording; format 2 goes to format 3 as the same records, each call given
its request hash and its key by that hash, checked by reading the new file back in full.

The cassette is replayed (no model) under the definitions it was recorded with: a run's turn-rows
hash then covered turns, judgments and patches (no calls table). Only if that hash equals the
recorded one is the format-2 file written: the same call records, each with its checksum, and a
new summary (today's hashes, the per-row digest, the chain hash). A follow-up replays only on the
store it was recorded on, so it needs ``store``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

from .canonical import content_hash
from .cassette import Cassette, CassetteError, RecordMode
from .cassette.keys import cassette_key
from .cassette.lines import chain_update, claimed_checksum, record_line
from .cassette.persist import FORMAT_VERSION, write_final, write_records
from .identity import ReplayCheck
from .store import Store
from .store.db import LEGACY_HASHED_TABLES, trajectory_rows


def _legacy_run_hash(store: Store, run_id: str) -> str:
    rows = trajectory_rows(store, run_id, LEGACY_HASHED_TABLES)
    for row in rows["turns"]:
        if row.get("status") == "model_error":
            row["status"] = "error"
    return content_hash(rows)


def _replay(path: Path, cassette: Cassette, scratch: Path, store: Path | None) -> tuple[ReplayCheck, str]:
    """Replay; return the check and the hash under the recording's own definitions."""
    kind = cassette.meta.get("kind", "run")
    if kind == "harmcheck":
        from .audit.harm_check_run import run_harm_check

        if store is None:
            raise CassetteError(f"{path}: a harm-check cassette replays only on the store it was "
                                "recorded on; fix: pass --db STORE")
        result = run_harm_check(store, scratch.parent / "harm-check", labeller=None, per_attacker=0,
                                seed=0, replay=path)
        return result.check, result.check.actual_hash
        from .certify.run import replay_certification

        outcome = asyncio.run(replay_certification(path, scratch))
        return outcome.check, outcome.rows_hash
    if kind == "followup":
        from .followups.registry import workflow_for
        from .followups.session import replay

        if store is None:
            raise CassetteError(f"{path}: a follow-up cassette replays only on the store it was "
                                "recorded on; fix: pass --db STORE")
        copy = scratch.with_name("followup-store.sqlite")
        with Store(store) as recorded_on:
            recorded_on.copy_to(copy)
        with Store(copy) as copied:
            outcome = asyncio.run(replay(workflow_for(cassette.meta.get("followup", "")), path, copied))
        return outcome.check, outcome.rows_hash
    from .runner import replay as replay_run

    outcome = asyncio.run(replay_run(path, scratch))
    with Store(scratch) as replayed:
        return outcome.check, _legacy_run_hash(replayed, outcome.run_id)


def upgrade_cassette(path: Path, store: Path | None = None) -> str:
    """Rewrite ``path`` in the format written now (3); returns what was done, in words."""
    cassette = Cassette(path, RecordMode.none)
    if cassette.format >= FORMAT_VERSION:
        return f"{path}: already format {cassette.format}"
    if cassette.format == 2:
        return _format_2_to_3(path, cassette)
    done = _format_1_to_2(path, cassette, store)
    return done + "; " + _format_2_to_3(path, Cassette(path, RecordMode.none))


def _format_2_to_3(path: Path, cassette: Cassette) -> str:
    """The same records with each call's request hash and its key by that hash, signed again; the
    file replaced only once it reads back as the same calls (every line checked in full)."""
    records: list[dict[str, Any]] = [{"type": "header", "format": 3, "meta": cassette.meta}]
    for call in cassette.calls:
        record = {k: v for k, v in call.items() if k != "checksum"}
        record["key"] = cassette_key(record["request"], record["fingerprint"], 3)
        records.append(record)
    if cassette.summary is not None:
        records.append(cassette.summary)
    written = path.with_name(path.name + ".format3")
    write_records(written, records)
    try:
        again = Cassette(written, RecordMode.none)
        same = [{k: v for k, v in c.items() if k not in ("checksum", "key", "request_hash")}
                for c in again.calls] == \
            [{k: v for k, v in c.items() if k not in ("checksum", "key")} for c in cassette.calls]
        if again.format != 3 or not same or (again.summary is None) != (cassette.summary is None):
            raise CassetteError(f"{path}: rewritten in format 3, it did not read back as the same "
                                "calls; not upgraded; fix: report it")
        os.replace(written, path)
    finally:
        written.unlink(missing_ok=True)
    return f"{path}: upgraded from format 2 to format 3 ({len(cassette.calls)} calls)"


def _format_1_to_2(path: Path, cassette: Cassette, store: Path | None) -> str:
    """Rewrite a format-1 cassette in format 2 once its replay matches its recording."""
    if cassette.summary is None and cassette.meta.get("kind") == "harmcheck":
        pass  # format-1 harm-check cassettes kept no summary: the replay's becomes it
    elif cassette.summary is None:
        raise CassetteError(f"{path}: has no summary, so its replay cannot be checked before the "
                            "upgrade; fix: re-record it")
    with tempfile.TemporaryDirectory() as tmp:
        check, legacy_hash = _replay(path, cassette, Path(tmp) / "replay.sqlite", store)
    recorded = (cassette.summary or {}).get(check.hash_field, legacy_hash)
    if legacy_hash != recorded:
        raise CassetteError(f"{path}: its replay differs from its recording (recorded {recorded}, "
                            f"replayed {legacy_hash}); not upgraded; fix: re-record it")
    header: dict[str, Any] = {"type": "header", "format": 2, "meta": cassette.meta}
    lines = [record_line(header)]
    for call in cassette.calls:
        lines.append(record_line({k: v for k, v in call.items() if k != "checksum"}))
    chain = ""
    for line in lines:
        chain = chain_update(chain, claimed_checksum(line))
    lines.append(record_line({"type": "summary", **check.summary, "records": len(lines),
                              "chain": chain}))
    write_final(path, lines)
    return (f"{path}: upgraded from format 1 to format 2 ({len(cassette.calls)} calls; replay matched "
            f"hash {recorded})")
