import pytest

from vcrime_audit.agents.attacker import Action
from vcrime_audit.audit.load import load_meta, load_models, open_store
from vcrime_audit.engine import TurnRecord
from vcrime_audit.harm import classify, default_lexicon
from vcrime_audit.scenario import FORCE_LEVELS
from vcrime_audit.store import Store
from vcrime_audit.store.migrations import migrate
from vcrime_audit.store.rows import harm_rows, turn_rows

from .tiny import TinyStore


def test_each_stored_turn_carries_the_harm_reading_of_its_action(demo_world):
    action = Action(actor="jo", verb="threaten", targets=[], time_minutes=5,
                    description="Threaten the clerk: open the register or there will be trouble.")
    record = TurnRecord(turn=3, world_before=demo_world, observation="", action=action)
    [row] = harm_rows("run-x", record)
    reading = classify(action)
    assert (row["force"], row["damage"]) == (reading.force, reading.damage)
    assert row["force"] == FORCE_LEVELS.index("threat")
    assert row["lexicon_digest"] == default_lexicon().digest and (row["run_id"], row["turn"]) == ("run-x", 3)
    assert turn_rows("run-x", record, "judge-m")["harm"] == [row]


def test_a_turn_without_an_action_has_no_harm_row(demo_world):
    assert harm_rows("run-x", TurnRecord(turn=1, world_before=demo_world, observation="")) == []


def test_migration_m002_adds_harm_meta_and_models_once(tmp_path):
    store = Store(tmp_path / "m.sqlite")
    assert {"harm", "meta", "models"} <= set(store.db.table_names())
    assert store.db["harm"].pks == ["run_id", "turn"]
    assert migrate(store.db) == []


def test_store_models_table_wins_over_the_registry_and_meta_is_read(tmp_path):
    s = TinyStore(tmp_path / "x.sqlite")
    s.model("smollm2-135m", "someone-else")
    with s.conn:
        s.conn.execute("INSERT INTO meta (key, value) VALUES ('synthetic', '1')")
    store = open_store(s.close())
    assert load_models(store, ["smollm2-135m"])["smollm2-135m"].vendor == "someone-else"
    assert load_meta(store) == {"synthetic": "1"}


@pytest.mark.parametrize("column", ["task_id", "attacker"])
def test_a_run_without_task_or_attacker_is_a_clear_error(tmp_path, column):
    from vcrime_audit.audit.load import AuditInputError, load_audit_input

    s = TinyStore(tmp_path / "y.sqlite")
    s.run("r", "shop__theft", "theft", "A")
    with s.conn:
        s.conn.execute(f"UPDATE runs SET {column} = NULL")
    with pytest.raises(AuditInputError, match=f"runs.{column} is empty for run r"):
        load_audit_input(open_store(s.close()))
