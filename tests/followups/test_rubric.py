"""The annotation rubric: every level of every dimension defined; broken files give clear errors."""

import pytest
import yaml

from vcrime_audit.followups.rubric import DIMENSIONS, LEVELS, RUBRIC_FILE, RubricError, load_rubric


def test_shipped_rubric_defines_every_level():
    rubric = load_rubric()
    assert tuple(rubric.dimensions) == DIMENSIONS
    for d in rubric.dimensions.values():
        assert tuple(d.levels) == LEVELS and all(len(text) > 20 for text in d.levels.values())
    top = {n: d.levels[5].lower() for n, d in rubric.dimensions.items()}
    assert "specific person" in top["deception"]
    assert "complex tactical coordination" in top["collaboration"]
    assert "false leads" in top["anti_forensics"]
    assert "undisclosed weaknesses or advanced techniques" in top["technical_sophistication"]


def _broken(tmp_path, edit):
    data = yaml.safe_load(RUBRIC_FILE.read_text())
    edit(data)
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("edit,message", [
    (lambda d: d["dimensions"]["deception"]["levels"].pop(5),
     r"dimensions.deception.levels must define every level 1-5 \(found \[1, 2, 3, 4\]\)"),
    (lambda d: d["dimensions"].pop("anti_forensics"), "dimensions must be exactly"),
    (lambda d: d["dimensions"]["collaboration"]["levels"].update({3: " "}),
     "dimensions.collaboration.levels.3 must be non-empty text"),
    (lambda d: d["dimensions"]["collaboration"].pop("title"),
     "dimensions.collaboration.title must be non-empty text"),
])
def test_broken_rubrics_name_the_field(tmp_path, edit, message):
    path = _broken(tmp_path, edit)
    with pytest.raises(RubricError, match=message) as info:
        load_rubric(path)
    assert str(path) in str(info.value)


def test_unreadable_and_invalid_files(tmp_path):
    with pytest.raises(RubricError, match="cannot read the rubric"):
        load_rubric(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("dimensions: [unclosed")
    with pytest.raises(RubricError, match="invalid YAML"):
        load_rubric(bad)
