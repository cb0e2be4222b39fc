"""Studies: the grid, shards, resume after an interruption, and merging shard stores."""

import asyncio
import gzip
import shutil
import time
from pathlib import Path

import pytest

from tests.committed import STUDY_DEMO, STUDY_DEMO_RUNS
from tests.scripted_study import TASKS, scripted_spec
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.cassette.errors import AnotherJobsCassette
from vcrime_audit.cassette.persist import journal_path
from vcrime_audit.merge import merge_cassettes, merge_stores
from vcrime_audit.runner import cassette_path
from vcrime_audit.scenario import ScenarioError
from vcrime_audit.store import Store, turn_rows_hash
from vcrime_audit.store.db import StoreError
from vcrime_audit.study import grid, load_study, parse_shard, run_study

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "studies" / "demo.yaml"
RECORDED = STUDY_DEMO


def test_grid_is_attackers_by_tasks_by_seeds_and_shards_partition_it():
    spec = load_study(DEMO).model_copy(update={"attackers": ["a", "b"], "seeds": [0, 1, 2]})
    full = grid(spec)
    assert len(full) == 2 * 2 * 3 and len({c.run_id() for c in full}) == 12
    shards = [grid(spec, (i, 3)) for i in (1, 2, 3)]
    assert sorted(c.run_id() for s in shards for c in s) == sorted(c.run_id() for c in full)
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "x/2"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def test_study_file_errors_name_the_field(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: x\nattackers: []\njudge: j\nworld_manager: w\n")
    with pytest.raises(ScenarioError) as info:
        load_study(path)
    assert info.value.field == "attackers" and str(path) in str(info.value)


@pytest.fixture
def study(tmp_path):
    (tmp_path / "cassettes").mkdir()
    for path in STUDY_DEMO_RUNS:
        shutil.copy(path, tmp_path / "cassettes")

    def make(db_name):
        return load_study(DEMO).model_copy(update={"db": tmp_path / db_name,
                                                   "cassette_dir": tmp_path / "cassettes"})
    return make


def _all_rows(path, run_ids):
    store = Store(path)
    return {r: (turn_rows_hash(store, r), store.run(r)["status"], store.run(r)["turns"]) for r in run_ids}


class Interrupted(Exception):
    pass


def test_an_interrupted_study_resumes_to_the_same_rows(study):
    whole = study("whole.sqlite")
    done = asyncio.run(run_study(whole, replay_only=True))
    run_ids = [c.run_id() for c in grid(whole)]
    assert done.done == len(run_ids) >= 2 and done.skipped == 0

    part = study("part.sqlite")
    seen = []

    def stop_after_the_first_turn(run_id, record):
        seen.append(run_id)
        raise Interrupted

    with pytest.raises(Interrupted):
        asyncio.run(run_study(part.model_copy(update={"concurrency": 1}), replay_only=True,
                              on_turn=stop_after_the_first_turn))
    statuses = [r["status"] for r in Store(part.db).runs()]
    assert "running" in statuses or "crashed" in statuses
    again = asyncio.run(run_study(part, replay_only=True))
    assert again.skipped + again.done == len(run_ids) and again.done >= 1
    assert _all_rows(part.db, run_ids) == _all_rows(whole.db, run_ids)


def test_shards_merge_into_the_whole(study, tmp_path):
    whole = study("whole.sqlite")
    asyncio.run(run_study(whole, replay_only=True))
    shard_dbs = []
    for i in (1, 2):
        spec = study(f"shard{i}.sqlite")
        asyncio.run(run_study(spec, (i, 2), replay_only=True))
        shard_dbs.append(spec.db)
    report = merge_stores(tmp_path / "merged.sqlite", shard_dbs)
    n = len(grid(whole))
    assert len(report.runs_added) == n >= 2
    run_ids = [c.run_id() for c in grid(whole)]
    assert _all_rows(tmp_path / "merged.sqlite", run_ids) == _all_rows(whole.db, run_ids)
    assert len(merge_stores(tmp_path / "merged.sqlite", shard_dbs).runs_same) == n
    merge_cassettes(tmp_path / "gathered", [tmp_path / "cassettes"], report)
    assert report.cassettes_copied == n


def test_a_cassette_copied_over_another_runs_crashes_that_run_and_stores_none_of_it(study, tmp_path):
    spec = study("copied.sqlite")
    kept, overwritten = (cassette_path(c, spec.cassette_dir) for c in grid(spec))
    shutil.copyfile(kept, overwritten)
    result = asyncio.run(run_study(spec, replay_only=True))
    assert result.done == 1 and [run for run, _ in result.crashed] == [overwritten.name[:-9]]
    [(_, reason)] = result.crashed
    assert f"{overwritten}: header.meta.config.task is 'robotics_company__data_theft', but run " \
        f"{overwritten.name[:-9]} has 'robotics_company__theft'" in reason
    store = Store(spec.db)
    assert {r["run_id"]: r["task_id"] for r in store.runs() if r["status"] != "crashed"} == {
        kept.name[:-9]: "robotics_company__data_theft"}
    assert overwritten.read_bytes() == kept.read_bytes()


def test_a_finished_runs_pending_journal_must_record_that_run(study, tmp_path):
    """A run killed after its summary leaves a journal that the next study compresses. One holding
    another run's recording used to be compressed under this run's name, silently."""
    spec = study("pending.sqlite")
    asyncio.run(run_study(spec, replay_only=True))
    kept, killed = (cassette_path(c, spec.cassette_dir) for c in grid(spec))
    recording = gzip.decompress(kept.read_bytes())
    journal_path(killed).write_bytes(recording)
    killed.unlink()
    assert Cassette(killed, RecordMode.none).pending_finalise
    with pytest.raises(AnotherJobsCassette) as caught:
        asyncio.run(run_study(spec, replay_only=True))
    assert str(caught.value).startswith(
        f"{killed}: header.meta.config.task is 'robotics_company__data_theft', but run "
        f"{killed.name[:-9]} has 'robotics_company__theft': the file is run {kept.name[:-9]}'s "
        "recording; fix: ")
    assert not killed.exists() and journal_path(killed).read_bytes() == recording
    journal_path(killed).write_bytes(gzip.decompress(STUDY_DEMO.joinpath(killed.name).read_bytes()))
    assert asyncio.run(run_study(spec, replay_only=True)).finalised == 1
    assert killed.read_bytes() == STUDY_DEMO.joinpath(killed.name).read_bytes()


@pytest.fixture
def played_and_copied(study, tmp_path):
    """A replayed study store, a copy of it, and the id of the copy's first run."""
    spec = study("a.sqlite")
    asyncio.run(run_study(spec, replay_only=True))
    shutil.copy(spec.db, tmp_path / "b.sqlite")
    other = Store(tmp_path / "b.sqlite")
    return spec, other, other.runs()[0]["run_id"]


def test_merge_refuses_a_conflicting_run(played_and_copied, tmp_path):
    spec, other, run_id = played_and_copied
    with other.db.conn:
        other.db.conn.execute("UPDATE turns SET verb = 'dance' WHERE run_id = ?", [run_id])
    with pytest.raises(StoreError, match=f"run {run_id} differs"):
        merge_stores(spec.db, [tmp_path / "b.sqlite"])


def test_merge_brings_re_judgments_of_a_run_already_present(played_and_copied, tmp_path):
    spec, other, run_id = played_and_copied
    with other.db.conn:
        other.db.conn.execute("INSERT INTO judgments SELECT run_id, turn, 'second-judge', 'rejudge', "
                              "dimensions, physically_possible, raw_outcomes, distribution, risky, "
                              "non_failure, catastrophic, NULL, NULL FROM judgments WHERE run_id = ?",
                              [run_id])
    report = merge_stores(spec.db, [tmp_path / "b.sqlite"])
    assert run_id in report.runs_same and not report.runs_added
    judges = {r["judge"] for r in Store(spec.db).rows("judgments", run_id)}
    assert judges == {"smollm2-135m", "second-judge"}


class Timed:
    """Passes calls through to the scripted backend; notes which run (asyncio task) made each."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name
        self.calls: list[tuple[int, float]] = []

    def fingerprint(self, model):
        return self.inner.fingerprint(model)

    async def generate(self, request):
        self.calls.append((id(asyncio.current_task()), time.perf_counter()))
        return await self.inner.generate(request)

    async def aclose(self):
        await self.inner.aclose()


def test_a_slot_plays_its_next_run_while_the_last_one_is_being_closed(registry, tmp_path, monkeypatch):
    from vcrime_audit.backends.registry import make_backend
    from vcrime_audit.cassette import Cassette
    from vcrime_audit.models import get_model

    spec = scripted_spec(tmp_path, concurrency=1, tasks=TASKS[:2], seeds=[0])
    closing = Cassette.close_with_summary

    def slow_close(self, fields):  # runs on a worker thread: the event loop goes on meanwhile
        time.sleep(0.5)
        closing(self, fields)

    monkeypatch.setattr(Cassette, "close_with_summary", slow_close)
    backend = Timed(make_backend("scripted", {n: get_model(n) for n in
                                              ("scripted-attacker", "scripted-judge", "scripted-wm")}))
    finished: list[float] = []
    result = asyncio.run(run_study(spec, backend=backend,
                                   on_run=lambda _: finished.append(time.perf_counter())))
    assert result.done == 2 and not result.crashed
    runs = list(dict.fromkeys(task for task, _ in backend.calls))
    assert len(runs) == 2
    second_starts = min(t for task, t in backend.calls if task == runs[1])
    first_ends = max(t for task, t in backend.calls if task == runs[0])
    assert first_ends < second_starts < finished[0]  # one slot: never two runs calling at once
    assert rows_of(spec) == rows_of(spec.model_copy(update={"concurrency": 2}), tmp_path / "two")


def rows_of(spec, folder=None):
    """Each run's (status, turns, rows hash) in the store ``spec`` plays into (again in ``folder``)."""
    if folder is not None:
        spec = spec.model_copy(update={"db": folder / "s.sqlite", "cassette_dir": folder / "c"})
        asyncio.run(run_study(spec))
    return _all_rows(spec.db, [c.run_id() for c in grid(spec)])


def cyclic_garbage_of(spec) -> list[str]:
    """Types of the objects in reference cycles that playing ``spec`` leaves (what the cycle
    collector, off while runs play, would have had to find)."""
    import gc

    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds is kept in gc.garbage, not freed
    try:
        result = asyncio.run(run_study(spec))
        gc.collect()
        assert result.done == len(grid(spec)) and not result.crashed
        return sorted(type(o).__name__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_runs_leave_no_reference_cycles_behind(registry, tmp_path):
    """The collector is off while runs play (collector.collector_off_while_runs_play): a run that
    left cycles would grow a long study's memory until it ended."""
    cyclic_garbage_of(scripted_spec(tmp_path / "warm", tasks=TASKS[:1], seeds=[0]))  # imports, schemas
    one = cyclic_garbage_of(scripted_spec(tmp_path / "one", tasks=TASKS[:1], seeds=[0], max_turns=6))
    six = cyclic_garbage_of(scripted_spec(tmp_path / "six", seeds=[0, 1], max_turns=6))
    assert six == one


def test_runs_of_a_task_share_its_world_read_once_and_give_a_lone_runs_rows(registry, tmp_path,
                                                                            monkeypatch):
    """A study reads each task once (runner.EpisodeInputs) and its runs, in flight together,
    share the initial world: each must still give the rows it gives played alone."""
    import vcrime_audit.runner as runner

    reads: list[str] = []
    read = runner.load_task
    monkeypatch.setattr(runner, "load_task", lambda task, *a: reads.append(task) or read(task, *a))
    spec = scripted_spec(tmp_path / "study", concurrency=6, seeds=[0, 1, 2], max_turns=4)
    result = asyncio.run(run_study(spec))
    assert result.done == len(grid(spec)) == 9 and not result.crashed
    assert sorted(reads) == sorted(TASKS)
    alone = {}
    for config in grid(spec):
        outcome = asyncio.run(runner.run_episode(config, tmp_path / "alone.sqlite", tmp_path / "alone"))
        alone[outcome.run_id] = (outcome.status, outcome.turns, outcome.turn_rows_hash)
    assert len(reads) == len(TASKS) + len(alone) and all(turns for _, turns, _ in alone.values())
    assert {o.run_id: (o.status, o.turns, o.turn_rows_hash) for o in result.outcomes} == alone


def test_a_study_sizes_the_per_run_memos_for_its_lanes_while_its_runs_play(registry, tmp_path):
    from vcrime_audit import world
    from vcrime_audit.memo import RUNS_FLOOR

    per_run = world._CANONICAL.limit // RUNS_FLOOR
    seen: set[int] = set()
    spec = scripted_spec(tmp_path / "study", concurrency=6, seeds=[0, 1, 2], max_turns=2)
    result = asyncio.run(run_study(spec, on_turn=lambda run_id, record: seen.add(world._CANONICAL.limit)))
    assert result.done == 9 and not result.crashed
    assert seen == {6 * per_run}
    assert world._CANONICAL.limit == RUNS_FLOOR * per_run, "one run at a time again after the study"


@pytest.mark.parametrize("processes", ["1", "2"])
def test_a_study_into_a_store_with_damaged_pages_stops_in_one_line(tmp_path, processes):
    from typer.testing import CliRunner

    from tests.committed import DEMO_RUN, ROOT
    from tests.damage import zero_table_pages
    from vcrime_audit.cli import app

    cassettes, db = tmp_path / "cassettes", tmp_path / "s.sqlite"
    cassettes.mkdir()
    for path in STUDY_DEMO_RUNS:
        shutil.copyfile(path, cassettes / path.name)
    assert CliRunner().invoke(app, ["replay", str(DEMO_RUN), "--db", str(db)]).exit_code == 0
    zero_table_pages(db, "turns")
    done = CliRunner().invoke(app, ["study", str(ROOT / "studies" / "demo.yaml"), "--replay", "--db",
                                    str(db), "--cassette-dir", str(cassettes), "--processes", processes])
    assert done.exit_code == 2 and isinstance(done.exception, SystemExit), done.output
    assert done.output.strip().splitlines()[-1] == (
        f"error: {db}: cannot be read or written (database disk image is malformed); fix: check it "
        "with `vcrime-audit verify`, restore it from a copy, or replay its cassettes into a new store")
