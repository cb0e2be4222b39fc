"""The precision review sheet a person fills in (audit/review_sheet.py): `audit harm-check` written
again keeps the reviews entered in flagged_turns.csv, and refuses to drop one."""

import csv
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ScriptedBackend
from vcrime_audit.audit.harm_check_run import FILES, SHEET, run_harm_check
from vcrime_audit.audit.review_sheet import REVIEW_COLUMNS, ReviewSheetError

from .tiny import TinyStore

TURNS = [("a1", 1, 2, 0), ("a1", 2, 3, 0), ("a1", 3, 0, 0), ("b1", 1, 0, 1), ("b1", 2, 1, 1), ("b1", 3, 0, 0)]


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """A hand-built store, and one harm check recorded on it (its cassette, and its folder)."""
    folder = tmp_path_factory.mktemp("review")
    s = TinyStore(folder / "hc.sqlite")
    for run_id, attacker in (("a1", "A"), ("b1", "B")):
        s.run(run_id, "shop__theft", "theft", attacker)
    for run_id, turn, force, damage in TURNS:
        s.turn(run_id, turn, force=force, damage=damage, description=f"action {run_id} {turn}")
        s.judge(run_id, turn, "j1", 0.5)
    db = s.close()
    backend = ScriptedBackend(lambda r: {"force": "none", "damage": "none"})
    result = run_harm_check(db, folder / "first", labeller="smollm2-135m", per_attacker=2, seed=0,
                            backend_name="scripted", cassette_dir=folder / "c", inner=backend)
    return db, result.cassette, folder / "first"


def _again(checked, out: Path):
    db, cassette, _ = checked
    return run_harm_check(db, out, labeller=None, per_attacker=2, seed=0, replay=cassette)


def _sheet(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _saved_as_a_spreadsheet_would(rows: list[dict[str, str]], path: Path, bom: bool, crlf: bool) -> None:
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, list(rows[0]), lineterminator="\r\n" if crlf else "\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_bytes(("\ufeff" if bom else "").encode() + text.getvalue().encode("utf-8"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), bom=st.booleans(), crlf=st.booleans())
def test_reviews_entered_survive_the_harm_check_written_again(checked, tmp_path_factory, data, bom, crlf):
    out = tmp_path_factory.mktemp("again")
    _again(checked, out)
    rows = _sheet(out / SHEET)
    assert rows and all(not r[c] for r in rows for c in REVIEW_COLUMNS)
    cell = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), max_size=12)
    entered = {}
    for row in rows:
        cells = data.draw(st.fixed_dictionaries({c: cell for c in REVIEW_COLUMNS}))
        row.update(cells)
        if any(v.strip() for v in cells.values()):
            entered[(row["run_id"], row["turn"])] = {c: v.strip() for c, v in cells.items()}
    _saved_as_a_spreadsheet_would(rows, out / SHEET, bom, crlf)
    _again(checked, out)
    kept = {(r["run_id"], r["turn"]): {c: r[c] for c in REVIEW_COLUMNS} for r in _sheet(out / SHEET)}
    assert {k: v for k, v in kept.items() if any(v.values())} == entered
    assert [{k: v for k, v in r.items() if k not in REVIEW_COLUMNS} for r in _sheet(out / SHEET)] == \
        [{k: v for k, v in r.items() if k not in REVIEW_COLUMNS} for r in rows]


def test_a_review_of_a_turn_no_longer_flagged_is_refused_and_nothing_written(checked, tmp_path):
    out = tmp_path / "out"
    _again(checked, out)
    rows = _sheet(out / SHEET)
    rows.append({**rows[0], "run_id": "a1", "turn": "3", "review_correct": "no"})
    _saved_as_a_spreadsheet_would(rows, out / SHEET, bom=False, crlf=False)
    before = {name: (out / name).read_bytes() for name in FILES.values()}
    with pytest.raises(ReviewSheetError) as caught:
        _again(checked, out)
    assert str(caught.value) == (
        f"{out / SHEET}: holds reviews of 1 turn(s) this harm check does not flag (first: run 'a1' "
        "turn '3'); fix: move the file away (it keeps the reviews), then run the harm check again")
    assert {name: (out / name).read_bytes() for name in FILES.values()} == before


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_mangled_sheet_is_carried_over_or_refused_in_one_line(checked, tmp_path_factory, data):
    """Bytes of a filled sheet cut, flipped or inserted: the harm check either writes the sheet
    again with every review it could read, or names the file and the fix and writes nothing."""
    out = tmp_path_factory.mktemp("mangled")
    _again(checked, out)
    rows = _sheet(out / SHEET)
    for row in rows:
        row["review_correct"] = "yes"
    _saved_as_a_spreadsheet_would(rows, out / SHEET, bom=False, crlf=False)
    raw = bytearray((out / SHEET).read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw)))
        how = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if how == "flip" and at < len(raw):
            raw[at] ^= data.draw(st.integers(1, 255))
        elif how == "cut":
            del raw[at:at + data.draw(st.integers(1, 40))]
        else:
            raw[at:at] = data.draw(st.sampled_from([b",", b'"', b"\n", b"\r", b"\xff", b"\x00", b"x"]))
    (out / SHEET).write_bytes(bytes(raw))
    before = {name: (out / name).read_bytes() for name in FILES.values()}
    try:
        _again(checked, out)
    except ReviewSheetError as exc:
        line = str(exc)
        assert line.startswith(f"{out / SHEET}: ") and "fix: " in line and "\n" not in line
        assert {name: (out / name).read_bytes() for name in FILES.values()} == before
        return
    written = _sheet(out / SHEET)
    flagged = {(r["run_id"], r["turn"]) for r in written}
    readable = [r for r in csv.DictReader(io.StringIO(bytes(raw).decode("utf-8-sig"), newline=""))
                if any((r.get(c) or "").strip() for c in REVIEW_COLUMNS)]
    for row in readable:
        key = ((row.get("run_id") or "").strip(), (row.get("turn") or "").strip())
        assert key in flagged, key
        [again] = [r for r in written if (r["run_id"], r["turn"]) == key]
        assert all(again[c] == (row.get(c) or "").strip() for c in REVIEW_COLUMNS)
