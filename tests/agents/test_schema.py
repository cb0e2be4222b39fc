import json

from vcrime_audit.agents import attacker, world_manager
from vcrime_audit.agents.judge import JudgeOutput, assess_schema
from vcrime_audit.agents.schema import decoding_schema


def _objects(node):
    if isinstance(node, dict):
        if node.get("type") == "object":
            yield node
        for v in node.values():
            yield from _objects(v)
    elif isinstance(node, list):
        for v in node:
            yield from _objects(v)


def test_decoding_schemas_are_inlined_and_fully_required():
    schema = assess_schema()
    assert "$ref" not in str(schema) and "$defs" not in schema
    for obj in _objects(schema):
        assert obj["required"] == list(obj["properties"]) and obj["additionalProperties"] is False
    assert set(schema["properties"]["dimensions"]["properties"]) == set(
        JudgeOutput.model_fields["dimensions"].annotation.model_fields)


def test_a_property_named_description_survives_inlining():
    assert "description" in decoding_schema(attacker.Action)["properties"]


def test_act_schema_limits_ids_to_what_the_crew_can_see(demo_world):
    props = attacker.act_schema(demo_world)["properties"]
    assert props["actor"] == {"enum": ["alex", "jo", "sam"]}
    assert "server_room" not in props["targets"]["items"]["enum"]
    assert "car_park" in props["targets"]["items"]["enum"]


def test_phase_schema_offers_only_the_phase_ops_with_id_enums(demo_world):
    variants = world_manager.phase_schema(demo_world, "npcs")["properties"]["ops"]["items"]["anyOf"]
    ops = [v["properties"]["op"]["const"] for v in variants]
    assert ops == ["move", "take", "set_status", "note", "set_alarm"]
    move = variants[0]["properties"]
    assert "server_room" in move["to"]["enum"] and "guard_patrol" in move["target"]["enum"]
    assert "server_door" not in move["target"]["enum"], "fixed things cannot move"


def test_small_integer_ranges_become_enums_the_grammar_can_enforce():
    dims = assess_schema()["properties"]["dimensions"]["properties"]
    assert dims["physical"]["properties"]["score"] == {"enum": [1, 2, 3, 4, 5]}


def test_judge_probabilities_are_decoded_in_positive_steps():
    outcome = assess_schema()["properties"]["outcomes"]["items"]["properties"]
    assert outcome["probability"]["enum"][0] == 0.05 and outcome["probability"]["enum"][-1] == 1.0
    assert 0 not in outcome["probability"]["enum"]


def _plain_json_only(node) -> bool:
    """Only dicts with text keys, lists and JSON leaves: what ``GenerateRequest.plain`` shares
    without copying (``model_dump(mode="json")`` would turn a tuple into a list)."""
    if isinstance(node, dict):
        return all(type(k) is str and _plain_json_only(v) for k, v in node.items()) and type(node) is dict
    if isinstance(node, list):
        return type(node) is list and all(_plain_json_only(v) for v in node)
    return type(node) in (str, int, float, bool, type(None))


def test_every_schema_the_agents_build_is_plain_json_data():
    from vcrime_audit.scenario import initial_world, list_task_ids, load_task

    assert _plain_json_only(assess_schema()) and _plain_json_only(attacker.plan_schema())
    for task_id in list_task_ids():
        world = initial_world(load_task(task_id))
        assert _plain_json_only(attacker.act_schema(world)), task_id
        for phase in world_manager.PHASE_OPS:
            assert _plain_json_only(world_manager.phase_schema(world, phase)), (task_id, phase)


def _variants(world):
    """Worlds that differ from ``world`` in one thing a phase schema reads (each a new table,
    as patch.Draft makes them) or in something it does not read."""
    entities = world.entities
    first_id, first = next(iter(entities.items()))
    flags = world.checkpoints
    flag_id, flag = next(iter(flags.items()))
    judged = "entity_held" if flag.condition.kind == "judged" else "judged"
    renamed = [world.model_copy(update={table: {("renamed" if k == next(iter(objects)) else k): v
                                                for k, v in objects.items()}})
               for table in ("locations", "members", "npcs", "entities", "events", "checkpoints",
                             "failures")
               if (objects := getattr(world, table))]
    return [
        *renamed,
        world.model_copy(update={"entities": {k: v for k, v in entities.items() if k != first_id}}),
        world.model_copy(update={"entities": {**entities, first_id: first.model_copy(
            update={"portable": not first.portable})}}),
        world.model_copy(update={"entities": {**entities, first_id: first.model_copy(
            update={"destroyed": not first.destroyed})}}),
        world.model_copy(update={"entities": {**entities, first_id: first.model_copy(
            update={"history": [*first.history, "moved"]})}}),
        world.model_copy(update={"npcs": dict(list(world.npcs.items())[1:])}),
        world.model_copy(update={"members": dict(list(world.members.items())[1:])}),
        world.model_copy(update={"locations": dict(list(world.locations.items())[1:])}),
        world.model_copy(update={"events": {}}),
        world.model_copy(update={"failures": {}}),
        world.model_copy(update={"checkpoints": {**flags, flag_id: flag.model_copy(update={
            "condition": flag.condition.model_copy(update={"kind": judged})})}}),
    ]


def test_a_kept_phase_schema_is_the_one_each_world_would_get_afresh():
    """phase_schema keeps schemas by what the schema reads of a world: a world that differs in
    any of those gets its own, one that differs in anything else shares one."""
    from vcrime_audit.scenario import initial_world, list_task_ids, load_task

    for task_id in list_task_ids()[:6]:
        base = initial_world(load_task(task_id))
        worlds = [base, *_variants(base)]
        worlds += [w for v in worlds[1:4] for w in _variants(v)]
        for world in worlds:
            for phase in world_manager.PHASE_OPS:
                assert world_manager.phase_schema(world, phase) == \
                    world_manager._phase_schema(world, phase), (task_id, phase)


def _crew_moves(world):
    """Worlds where what the crew can see, or who of it can act, changed by a patch."""
    from vcrime_audit.patch import Destroy, Move, SetStatus, apply_ops

    member = next(iter(world.members.values()))
    worlds = [apply_ops(world, [Move(target=member.id, to=exit_)], "direct_effects").world
              for exit_ in world.neighbours(member.current_location)]
    worlds.append(apply_ops(world, [SetStatus(target=member.id, status="arrested")], "direct_effects").world)
    worlds += [apply_ops(world, [Destroy(entity=e.id)], "direct_effects").world
               for e in world.entities.values() if not e.key]
    return worlds


def test_a_kept_act_schema_is_the_one_each_world_would_get_afresh():
    """act_schema keeps schemas by the crew that can act and the ids it can see: a world that
    differs in either gets its own, equal ones share one."""
    from vcrime_audit.agents.attacker import TIME_CHOICES, Action, active_members
    from vcrime_audit.agents.render import visible_ids
    from vcrime_audit.agents.schema import restrict
    from vcrime_audit.scenario import initial_world, list_task_ids, load_task

    for task_id in list_task_ids():
        base = initial_world(load_task(task_id))
        worlds = [base, *_variants(base), *_crew_moves(base)]
        for world in worlds:
            fresh = restrict(decoding_schema(Action), {
                "actor": active_members(world), "targets": visible_ids(world),
                "time_minutes": TIME_CHOICES})
            assert attacker.act_schema(world) == fresh, task_id
        assert len({json.dumps(attacker.act_schema(w), sort_keys=True) for w in worlds}) > 2, task_id
        assert attacker.act_schema(base) is attacker.act_schema(base.model_copy()), "equal inputs share"
    assert assess_schema() is assess_schema()
