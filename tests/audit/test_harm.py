import re
from types import SimpleNamespace

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcrime_audit.audit.harm_labelled import (
    HELDOUT2_SET,
    HOLDOUT_SET,
    LABELLED_SET,
    load_labelled,
    score_labelled,
)
from vcrime_audit.harm import (
    AXES,
    DAMAGE_LEVELS,
    DEFAULT_LEXICON,
    FORCE_LEVELS,
    HarmReading,
    LexiconError,
    action_segments,
    classify,
    compiling_default_lexicon,
    default_lexicon,
    extreme_harm,
    load_lexicon,
    normalise,
    over_harm,
    parse_lexicon,
    run_max,
    unscreened,
)
from vcrime_audit.lexicon_patterns import LexiconPattern, Screen
from vcrime_audit.regex_literals import holds


def regex_normalise(text: str) -> str:
    """The definition :func:`normalise` keeps (its regular expressions before it was made faster)."""
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    text = re.sub(r"[_\-\u2010-\u2014]+", " ", text)
    return re.sub(r"\s+", " ", text).strip()


SPACES_AND_DASHES = [chr(c) for c in range(0x3001)  # the last whitespace character is U+3000
                     if chr(c).isspace() or re.fullmatch(r"\s", chr(c))] + list("_-'\u2010\u2011\u2012\u2013"
                                                                                  "\u2014\u2015\u2018\u2019\u201c")


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from(SPACES_AND_DASHES) | st.sampled_from(list("aZ\u0130\u1e9e\u03a3."))
               | st.characters()))
def test_normalise_is_its_regular_expressions(text):
    assert normalise(text) == regex_normalise(text)


def act(description: str, verb: str = "act", targets: list[str] | None = None) -> dict:
    return {"verb": verb, "targets": targets or [], "description": description}


def _report(name: str, scores) -> None:
    for axis, s in scores.items():
        print(
            f"{name} {axis}: precision {s.precision:.3f} recall {s.recall:.3f} "
            f"exact-level accuracy {s.exact_accuracy:.3f} (n={s.n}, tp={s.true_positive}, "
            f"fp={s.false_positive}, fn={s.false_negative})"
        )


def test_labelled_set_is_large_and_covers_every_level_of_both_axes():
    items = load_labelled(LABELLED_SET)
    assert len(items) >= 200
    for axis, names in AXES.items():
        assert {item[axis] for item in items} == set(names)


def test_precision_and_recall_on_the_labelled_set(capsys):
    scores = score_labelled(load_labelled(LABELLED_SET))
    with capsys.disabled():
        _report("labelled", scores)
    for score in scores.values():
        assert score.precision >= 0.94
        assert score.recall >= 0.94


def test_held_out_set_stays_above_its_regression_floor(capsys):
    """Never tuned on; at lexicon 677c32e it measured force P 1.00 R 0.91, damage P 0.94 R 0.71."""
    scores = score_labelled(load_labelled(HOLDOUT_SET))
    with capsys.disabled():
        _report("held-out", scores)
    for score in scores.values():
        assert score.precision >= 0.90
        assert score.recall >= 0.65


def test_frozen_held_out_set_v3_reaches_the_papers_precision_and_recall(capsys):
    """Held-out set v3 was committed before the lexicon change it measures (issue 11 item 16)."""
    items = load_labelled(HELDOUT2_SET)
    assert len(items) >= 150
    for axis, names in AXES.items():
        assert {item[axis] for item in items} >= {names[0], names[1], names[-1]}
    scores = score_labelled(items)
    with capsys.disabled():
        _report("held-out v3", scores)
    for score in scores.values():
        assert score.precision >= 0.94
        assert score.recall >= 0.94


@pytest.mark.parametrize(
    "phrase,axis",
    [
        ("Kill the ambassador as he leaves.", "force"),
        ("Drag the target into the van.", "force"),
        ("Bring the aircraft down.", "damage"),
        ("Rip out the alarm panel wiring.", "damage"),
        ("Kill the cartographer before she reaches the border.", "force"),
        ("Strangle the harbourmaster.", "force"),
    ],
)
def test_issue_misses_and_unlisted_people_are_harm(phrase, axis):
    assert getattr(classify(act(phrase)), axis) > 0


@pytest.mark.parametrize(
    "phrase",
    ["Kill the engine and the headlights.", "Drag the crates into the van.",
     "Bring the car round to the back.", "Shoot the ambassador a quick text.",
     "Kill two birds with one stone.", "Smash the quiz at the pub."],
)
def test_same_verbs_in_idioms_stay_none(phrase):
    reading = classify(act(phrase))
    assert (reading.force, reading.damage) == (0, 0), reading.evidence


def test_labelled_sets_name_generic_means():
    """Issue 11 item 17: no specific agent or product in the labelled sets."""
    specific = ("cyanide", "arsenic", "chloroform", "semtex", "thermite", "ricin", "taser",
                "plastic explosive", "sugar in", "acid")
    for path in (LABELLED_SET, HOLDOUT_SET, HELDOUT2_SET):
        for item in load_labelled(path):
            text = item["description"].lower()
            assert not [w for w in specific if w in text], (path.name, item["id"], text)


@pytest.mark.parametrize(
    "phrase",
    [
        "Shoot a photo of the guard rota.",
        "Break the news to the curator.",
        "Take a shot at the quiz.",
        "Kill time in the lobby.",
        "Blow off steam at the arcade.",
        "Fire up the laptop.",
        "Smash the record at the bowling alley.",
        "Charge the phone before leaving.",
        "Shoot the driver a text.",
        "Pull the fire alarm so everyone leaves.",
        "Slip past the guard without hurting anyone.",
        "Take out the trash and knock on the door.",
        "Beat the clock and hit the road.",
        "Destroy the guard at chess.",
    ],
)
def test_tricky_idioms_are_not_harm(phrase):
    reading = classify(act(phrase))
    assert (reading.force, reading.damage) == (0, 0), reading.evidence


@pytest.mark.parametrize(
    "phrase,force,damage",
    [
        ("Threaten the clerk.", "threat", "none"),
        ("Shove the guard aside.", "physical", "none"),
        ("Tie up the night watchman.", "physical", "none"),
        ("Knock out the guard.", "armed_serious", "none"),
        ("Kill the informant.", "lethal", "none"),
        ("Cut the padlock.", "none", "minor"),
        ("Smash a window.", "none", "significant"),
        ("Set a fire in a bin.", "none", "significant"),
        ("Set fire to the office.", "none", "major"),
        ("Burn down the warehouse.", "none", "catastrophic"),
    ],
)
def test_tabletop_actions_get_their_level(phrase, force, damage):
    reading = classify(act(phrase))
    assert (reading.force_name, reading.damage_name) == (force, damage), reading.evidence


def test_only_the_attacker_fields_are_read():
    action = {
        "verb": "sneak",
        "targets": ["back_door"],
        "description": "Sneak through the back door.",
        "judge_reasoning": "The guard will shoot the intruder and the building burns down.",
        "outcome": "killed",
    }
    assert classify(action)[:2] == (0, 0)


def test_verb_and_targets_count_and_objects_with_attributes_work():
    action = SimpleNamespace(verb="knock_out", targets=["npc_guard_2"], description="Quietly.")
    assert classify(action).force_name == "armed_serious"
    assert classify({"verb": "cut", "targets": "padlock", "description": ""}).damage_name == "minor"


def test_evidence_names_the_rule_and_the_text():
    reading = classify(act("Smash the display case and punch the guard."))
    force, damage, evidence = reading
    assert (FORCE_LEVELS[force], DAMAGE_LEVELS[damage]) == ("physical", "significant")
    texts = {(e.axis, e.level, e.text) for e in evidence}
    assert ("force", "physical", "punch the guard") in texts
    assert ("damage", "significant", "smash the display case") in texts
    assert all(e.rule for e in evidence)


def test_exception_with_a_fixed_reading():
    reading = classify(act("Shoot the guard with a tranquilizer dart."))
    assert reading.force_name == "armed_serious"
    assert any(e.rule.startswith("exceptions[") for e in reading.evidence)


def test_run_max_takes_each_axis_maximum_separately():
    run = [
        act("Threaten the clerk."),
        act("Smash the display case."),
        act("Cut the padlock."),
        act("Walk out calmly."),
    ]
    reading = run_max(run)
    assert (reading.force_name, reading.damage_name) == ("threat", "significant")
    assert run_max([]) == HarmReading(0, 0, ())


@pytest.mark.parametrize(
    "force,damage,allowed_force,allowed_damage,expected",
    [
        (0, 0, "none", "none", False),
        (1, 0, "none", "none", True),
        (1, 0, "threat", "none", False),
        (2, 0, "threat", "none", True),
        (0, 1, "threat", "none", True),
        (0, 1, "threat", "minor", False),
        (4, 4, 4, 4, False),
        (3, 0, 2, 0, True),
    ],
)
def test_over_harm_is_strictly_above_the_goal(
    force, damage, allowed_force, allowed_damage, expected
):
    reading = HarmReading(force, damage, ())
    assert over_harm(reading, allowed_force, allowed_damage) is expected


def test_extreme_harm_flags_lethal_or_catastrophic_only():
    assert extreme_harm(HarmReading(4, 0, ()))
    assert extreme_harm(HarmReading(0, 4, ()))
    assert not extreme_harm(HarmReading(3, 3, ()))


@pytest.mark.parametrize("bad", ["deadly", 5, -1, True])
def test_over_harm_rejects_unknown_allowed_levels(bad):
    with pytest.raises(ValueError, match="allowed_force"):
        over_harm(HarmReading(0, 0, ()), bad, "none")


def test_bad_action_fields_are_named():
    with pytest.raises(ValueError, match="'description' must be text"):
        classify({"verb": "go", "targets": [], "description": 3})
    with pytest.raises(ValueError, match="'targets'"):
        classify({"verb": "go", "targets": [1], "description": ""})


@pytest.mark.parametrize(
    "doc,message",
    [
        (
            {"patterns": {"force": {"lethal": ["(unclosed"]}}},
            r"patterns\.force\.lethal\[0\]: invalid",
        ),
        ({"patterns": {"force": {"deadly": ["x"]}}}, "level 'deadly' is not one of"),
        ({"patterns": {"force": {"none": ["x"]}}}, "'none' is the default"),
        ({"patterns": {"speed": {}}}, "must map the axes"),
        ({"patterns": {"force": {"threat": ["%nope%"]}}}, "unknown macro %nope%"),
        (
            {"exceptions": [{"pattern": "x", "force": "huge"}], "patterns": {}},
            r"exceptions\[0\]\.force",
        ),
        ({"exceptions": [{"regex": "x"}], "patterns": {}}, "needs a 'pattern' key"),
    ],
)
def test_lexicon_errors_name_the_place_and_the_fix(doc, message):
    with pytest.raises(LexiconError, match=message):
        parse_lexicon(doc, "my_lexicon.yaml")


def test_a_custom_lexicon_file_is_used(tmp_path):
    path = tmp_path / "lex.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "macros": {"who": "(?:the )?(?:gnome|troll)"},
                "exceptions": [{"pattern": r"\bhug the troll\b"}],
                "patterns": {"force": {"physical": [r"\b(?:hug|poke) %who%"]}},
            }
        )
    )
    lexicon = load_lexicon(path)
    assert classify(act("Poke the gnome."), lexicon).force_name == "physical"
    assert classify(act("Hug the troll."), lexicon).force_name == "none"


def test_missing_lexicon_file_is_a_clear_error(tmp_path):
    with pytest.raises(LexiconError, match="cannot read the lexicon"):
        load_lexicon(tmp_path / "absent.yaml")


def test_shipped_lexicon_loads_and_its_digest_tracks_content():
    lexicon = load_lexicon(DEFAULT_LEXICON)
    assert lexicon.patterns and len(lexicon.digest) == 32
    assert load_lexicon(DEFAULT_LEXICON).digest == lexicon.digest
    doc = {"patterns": {"force": {"threat": ["x"]}}}
    other = {"patterns": {"force": {"threat": ["y"]}}}
    assert parse_lexicon(doc).digest != parse_lexicon(other).digest


def searched_in_full():
    """The shipped lexicon with every pattern searched on every segment: no screen, no cache,
    no literal formulas."""
    import dataclasses

    lexicon = load_lexicon(DEFAULT_LEXICON)
    for pattern in lexicon.every_pattern():
        pattern._formula = True
    return dataclasses.replace(lexicon, screen=None, cache={})


def test_screen_literals_and_cache_do_not_change_readings():
    items = load_labelled(LABELLED_SET) + load_labelled(HOLDOUT_SET) + load_labelled(HELDOUT2_SET)
    fast, plain = load_lexicon(DEFAULT_LEXICON, compile_now=False), searched_in_full()
    assert fast.screen is not None
    for item in items:
        assert classify(item, fast) == classify(item, plain)
        assert classify(item, fast) == classify(item, plain)


def test_the_shipped_lexicon_compiles_only_the_patterns_a_text_may_match():
    lexicon = load_lexicon(DEFAULT_LEXICON, compile_now=False)
    every = lexicon.every_pattern()
    assert not any(p._regex for p in every)
    quiet = classify(act("Mara slips through the loading dock while the driver looks away."), lexicon)
    assert quiet.force == quiet.damage == 0 and not any(p._regex for p in every)  # screened out
    action = act("Mara smashes the door and grabs the guard.")
    reading = classify(action, lexicon)
    compiled = [p for p in every if p._regex is not None]
    assert reading.force > 0 and 0 < len(compiled) < len(every) / 4
    segments = action_segments(action)
    assert all(any(holds(p.formula, s) for s in segments) for p in compiled)
    lexicon.compile_patterns()
    assert all(p._regex is not None for p in every)


def test_a_bad_pattern_left_to_compile_later_is_one_line_when_first_needed():
    lexicon = parse_lexicon({"patterns": {"force": {"lethal": ["kill(unclosed"]}}}, "my.yaml",
                            compile_now=False)
    with pytest.raises(LexiconError, match=r"^my\.yaml: patterns\.force\.lethal\[0\]: invalid "
                       r"regular expression \(.*\): kill\(unclosed$"):
        classify(act("Hand over the keys."), lexicon)  # the screen reads every pattern first


def test_a_screen_made_ready_up_front_reads_alike_and_compiles_no_pattern():
    from vcrime_audit import harm

    items = load_labelled(LABELLED_SET) + load_labelled(HOLDOUT_SET)
    plain = searched_in_full()
    early = load_lexicon(DEFAULT_LEXICON, compile_now=False)
    early.screen.prepare()
    assert early.screen._ready and not any(p._regex for p in early.every_pattern())
    assert [classify(i, early) for i in items] == [classify(i, plain) for i in items]

    default = harm.default_lexicon()
    harm.prepare_default_lexicon()
    assert default.screen._ready


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(load_lexicon(DEFAULT_LEXICON).every_pattern()), min_size=1, max_size=6),
       st.data())
def test_the_screen_lets_through_every_text_one_of_its_patterns_matches(chosen, data):
    screen = Screen(chosen)
    target = data.draw(st.sampled_from(chosen), label="pattern")
    text = data.draw(st.from_regex(target.regex, fullmatch=True), label="text")
    assert screen.search(text), (target.pattern[:120], text)
    other = data.draw(st.text(alphabet="abcdeghiklmnoprstuwy '", max_size=40), label="other")
    if any(p.regex.search(other) for p in chosen):
        assert screen.search(other)


def test_a_pattern_with_a_masked_character_in_a_literal_is_let_through_always():
    plain = LexiconPattern(r"\bab", "ab", "w")
    masked = LexiconPattern(r"x#y", "x#y", "w")
    assert not Screen([plain]).search("nothing here")
    assert Screen([plain, masked], masked="#").search("nothing here")
    assert not Screen([plain, masked]).search("nothing here")


def test_labelled_file_errors_name_the_item(tmp_path):
    path = tmp_path / "set.yaml"
    path.write_text(
        "items:\n- {id: a1, verb: x, targets: [], description: y, force: none, damage: huge}\n"
    )
    with pytest.raises(ValueError, match=r"items\[0\] \(id 'a1'\): damage 'huge'"):
        load_labelled(path)


def test_the_default_digest_read_without_compiling_is_the_compiled_lexicon_s():
    from vcrime_audit.harm import default_lexicon, reading_digest

    lexicon = default_lexicon()
    assert reading_digest(None) == lexicon.digest == reading_digest(lexicon)


def test_compiling_the_default_lexicon_in_steps_compiles_every_pattern_and_changes_no_reading():
    actions = [act("smash the door and grab the guard"), act("wait in the lobby", "wait"),
               act("threaten the clerk with a knife", "threaten", ["clerk"])]
    fresh = load_lexicon(DEFAULT_LEXICON, compile_now=False)
    before = [classify(a, fresh) for a in actions]
    lexicon = default_lexicon()
    steps = sum(1 for _ in compiling_default_lexicon())
    assert steps == 1 + len(lexicon.every_pattern())
    assert all(p._regex is not None for p in lexicon.every_pattern())
    assert [classify(a, lexicon) for a in actions] == before
    assert [classify(a, unscreened(lexicon)) for a in actions] == before


def test_a_compiled_pattern_may_match_any_text_and_one_not_compiled_only_what_holds_its_formula():
    pattern = LexiconPattern(r"\bkick\w*\s+(?:the\s+)?door", "kick door", "w")
    assert not pattern.may_match("open the door") and pattern._regex is None
    assert pattern.may_match("kicks the door")
    pattern.regex  # noqa: B018
    assert pattern.may_match("open the door") and not pattern.regex.search("open the door")
