import json

import pytest
from pydantic import PrivateAttr, ValidationError

from vcrime_audit.canonical import canonical_json
from vcrime_audit.scenario import initial_world, list_task_ids, load_task
from vcrime_audit.world import OBJECT_TABLES, Strict, WorldState


def test_canonical_json_is_sorted_compact_and_round_trips(demo_world):
    text = demo_world.to_json()
    assert text == canonical_json(json.loads(text))
    again = WorldState.model_validate_json(text)
    assert again.to_json() == text and again.digest() == demo_world.digest()


def test_tables_are_kept_in_id_order_whatever_the_input_order(demo_world):
    data = demo_world.model_dump(mode="json")
    data["locations"] = dict(reversed(list(data["locations"].items())))
    world = WorldState.model_validate(data)
    assert list(world.locations) == sorted(world.locations)
    assert world.to_json() == demo_world.to_json()


def test_crew_of_five_is_rejected(demo_world):
    data = demo_world.model_dump(mode="json")
    member = data["members"]["alex"]
    for i in range(5):
        data["members"][f"m{i}"] = {**member, "id": f"m{i}"}
    with pytest.raises(ValidationError, match="1 to 4 members"):
        WorldState.model_validate(data)


def test_adjacency_is_undirected(demo_world):
    assert demo_world.adjacent("street", "car_park") and demo_world.adjacent("car_park", "street")
    assert not demo_world.adjacent("street", "server_room")
    assert demo_world.neighbours("stairwell") == ["corridor_first", "corridor_ground",
                                                  "corridor_second", "roof"]


def test_text_put_together_from_objects_is_the_definitions_for_every_task():
    from vcrime_audit.scenario import initial_world, list_task_ids, load_task

    for task_id in list_task_ids():
        world = initial_world(load_task(task_id))
        assert world.to_json() == canonical_json(world), task_id


def test_odd_tables_take_the_definitions_path(demo_world):
    """Keys that need escaping, and a table holding another kind of object (only
    ``model_construct`` builds either), still give the definition's text."""
    member = next(iter(demo_world.members.values()))
    location = next(iter(demo_world.locations.values()))
    odd_keys = {**demo_world.locations, 'q"uote\\é\u2028': location, "Z": location}
    for update in ({"locations": odd_keys}, {"npcs": {**demo_world.npcs, "intruder": member}},
                   {"entities": {}}):
        world = demo_world.model_copy(update=update)
        assert world.to_json() == canonical_json(world), update.keys()


def _models_of(world):
    yield world
    yield world.globals
    yield world.attacker
    for table in OBJECT_TABLES:
        yield from getattr(world, table).values()


@pytest.mark.parametrize("update", [None, {}, {"history": ["x"]}, {"turn": 7, "observable": "y"}])
def test_shallow_copy_is_model_copy_for_every_model_of_every_task(update):
    for task_id in list_task_ids():
        for model in _models_of(initial_world(load_task(task_id))):
            fields = {k: v for k, v in (update or {}).items() if k in type(model).model_fields}
            mine = model.shallow_copy(None if update is None else fields)
            pydantics = model.model_copy(update=fields)
            assert type(mine) is type(pydantics)
            assert mine.__dict__ == pydantics.__dict__ and mine == pydantics
            assert all(mine.__dict__[k] is pydantics.__dict__[k] for k in mine.__dict__), "values shared"
            assert mine.model_fields_set == pydantics.model_fields_set
            assert (mine.__pydantic_extra__, mine.__pydantic_private__) == (None, None)
            assert mine.__dict__ is not model.__dict__
            assert mine.model_fields_set is not model.model_fields_set
            mine.__dict__["id" if "id" in mine.__dict__ else "task_id"] = "changed"
            assert model.__dict__ != mine.__dict__, "the copy's fields are its own"


def test_shallow_copy_of_a_model_with_private_attributes_is_pydantics():
    class Kept(Strict):
        name: str
        _note: str = PrivateAttr("first")

    kept = Kept(name="a")
    kept._note = "second"
    copied = kept.shallow_copy({"name": "b"})
    assert (copied.name, copied._note, kept.name) == ("b", "second", "a")
    assert copied.__pydantic_private__ is not kept.__pydantic_private__
