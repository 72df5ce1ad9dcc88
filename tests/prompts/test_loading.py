import json

import pytest
from PIL import Image

from ieqa.prompts import (
    TemplateError,
    get_template,
    list_templates,
    load_template,
    unregister_template,
)

YAML_TEMPLATE = """\
name: test-yaml-judge
description: Asks for a 1-10 quality score.
reference: in-house
system: You judge image edits.
user: |
  <image:source><image:edited>
  Instruction: {instruction}. Rate the {dimension} of the second image from {low} to {high}.
  Note: {note}
answer_prefix: "{Dimension} score:"
output: text_score
dimensions: [PQ, SC]
scale: [1, 10]
images: [source, edited]
dimension_names: {SC: "editing fidelity"}
defaults: {note: "be strict"}
"""


def _images():
    return {"source": Image.new("RGB", (4, 4)), "edited": Image.new("RGB", (4, 4), "white")}


def test_load_yaml(tmp_path):
    path = tmp_path / "judge.yaml"
    path.write_text(YAML_TEMPLATE)
    t = load_template(path)
    assert t.name == "test-yaml-judge" and t.scale == (1.0, 10.0)
    assert t.dimensions == ("visual_quality", "instruction_alignment")
    p = t.render(instruction="add snow", images=_images(), dimension="SC")
    assert p.answer_prefix == "Editing fidelity score:"
    assert "Rate the editing fidelity of the second image from 1 to 10." in p.parts[-1]
    assert "Note: be strict" in p.parts[-1] and p.system == "You judge image edits."
    assert "test-yaml-judge" not in list_templates()  # not registered unless asked


def test_load_json_and_register(tmp_path):
    data = {"name": "test-json-judge", "user": "<image:edited>How good? {instruction}",
            "output": "verdict", "images": ["edited"]}
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(data))
    try:
        t = load_template(str(path), register=True)
        assert get_template("test-json-judge") is t
        assert t.scale is None and t.system is None and t.description == ""
        with pytest.raises(TemplateError, match="already registered"):
            load_template(path, register=True)
        load_template(path, register=True, overwrite=True)
    finally:
        unregister_template("test-json-judge")


def test_load_dict_and_round_trip():
    original = get_template("viescore-sc")
    again = load_template(original.to_dict())
    assert again == original


@pytest.mark.parametrize("change,field", [
    ({"outptu": "json_scores"}, "outptu"),
    ({"output": "scores"}, "output"),
    ({"scale": "1-5"}, "scale"),
    ({"scale": [1, 5, 9]}, "scale"),
    ({"images": "source"}, "images"),
    ({"name": 3}, "name"),
    ({"defaults": {"note": ["a"]}}, "defaults.note"),
    ({"user": "<image:edited><image:source>{instruction}"}, "user"),
    ({"dimensions": ["wobble"]}, "dimensions"),
    ({"output": "json_scores", "scale": None}, "scale"),
])
def test_bad_fields_are_named(tmp_path, change, field):
    data = {"name": "bad", "user": "<image:source><image:edited>{instruction}",
            "output": "text_score", "scale": [1, 5], "images": ["source", "edited"]}
    data.update(change)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TemplateError, match=f"field '{field}'") as err:
        load_template(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("missing", ["name", "user", "output", "images"])
def test_required_fields(missing):
    data = {"name": "bad", "user": "<image:edited>{instruction}", "output": "text_score",
            "scale": [1, 5], "images": ["edited"]}
    del data[missing]
    with pytest.raises(TemplateError, match=f"field '{missing}': required"):
        load_template(data)


def test_unreadable_inputs(tmp_path):
    bad_yaml = tmp_path / "t.yaml"
    bad_yaml.write_text("name: [unclosed\n")
    with pytest.raises(TemplateError, match="not valid YAML"):
        load_template(bad_yaml)
    listing = tmp_path / "t.yml"
    listing.write_text("- name: a\n- name: b\n")
    with pytest.raises(TemplateError, match="must be a mapping"):
        load_template(listing)
    with pytest.raises(TemplateError, match="must end in"):
        load_template(tmp_path / "t.txt")
    with pytest.raises(TemplateError, match="cannot read"):
        load_template(tmp_path / "absent.yaml")
    broken = tmp_path / "t.json"
    broken.write_text("{")
    with pytest.raises(TemplateError, match="not valid JSON"):
        load_template(broken)
