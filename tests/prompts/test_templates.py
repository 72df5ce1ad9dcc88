import copy
import dataclasses
import pickle
import string

import pytest
from PIL import Image

from ieqa.backends.base import Prompt
from ieqa.errors import UnknownDimensionError
from ieqa.prompts import (
    MissingPlaceholderError,
    PromptTemplate,
    TemplateError,
    UnknownTemplateError,
    get_template,
    list_templates,
    register_template,
    template_from_dict,
    unregister_template,
)

BUILTIN = {
    "editreward", "editreward-instruction_alignment", "editreward-visual_quality",
    "viescore-sc", "viescore-pq", "epaiqa-levels", "epaiqa-grounding", "epaiqa-harmony",
    "epaiqa-naturalness", "epaiqa-overall", "ds-ieqa-digits", "reasonedit-critique",
    "reasonedit-reward", "judge-json", "judge-json-10", "pairwise-verdict",
}
COLOURS = {"source": "red", "edited": "green", "a": "blue", "b": "yellow", "crop": "white"}


@pytest.fixture
def images():
    return {slot: Image.new("RGB", (6, 4), colour) for slot, colour in COLOURS.items()}


def _kwargs(t: PromptTemplate) -> dict:
    kw = {}
    if "dimension" in t.placeholders and len(t.dimensions) != 1:
        kw["dimension"] = t.dimensions[0] if t.dimensions else "visual_quality"
    if "dimensions_block" in t.placeholders and not t.dimensions:
        kw["dimensions"] = ["visual_quality", "instruction_alignment"]
    if "critique" in t.placeholders:
        kw["critique"] = "The sky is red as asked; the clouds kept their shape."
    return kw


def test_builtin_names_are_registered():
    assert BUILTIN <= set(list_templates())


@pytest.mark.parametrize("name", sorted(BUILTIN))
@pytest.mark.parametrize("share_key", [None, "group-1"])
def test_every_builtin_renders(name, share_key, images):
    t = get_template(name)
    instruction = "Make the sky red {literally}"
    prompt = t.render(instruction=instruction, images=images, share_key=share_key, **_kwargs(t))
    assert isinstance(prompt, Prompt)
    # images are the given objects, at the markers, in the template's order
    assert [id(i) for i in prompt.images] == [id(images[s]) for s in t.images]
    texts = [p for p in prompt.parts if isinstance(p, str)]
    assert all(texts), "no empty text parts"
    full = "".join(texts) + (prompt.system or "") + prompt.answer_prefix
    for field in t.placeholders - {"instruction"}:
        assert "{" + field + "}" not in full
    assert "<image:" not in full
    if "instruction" in t.placeholders:
        assert instruction in full  # braces in values stay literal
    # every marker became exactly one image part
    user_markers = t.user.count("<image:")
    assert sum(not isinstance(p, str) for p in prompt.parts) == user_markers
    expected_shared = 1 if share_key and t.images[0] == "source" else 0
    assert prompt.shared_images == expected_shared and prompt.share_key == share_key
    assert (prompt.system is None) == (t.system is None)


def test_parts_order_with_text_between_images(images):
    prompt = get_template("pairwise-verdict").render(
        instruction="add a hat", images=images, share_key="k")
    kinds = ["img" if isinstance(p, Image.Image) else "txt" for p in prompt.parts]
    assert kinds == ["txt", "img", "txt", "img", "txt", "img", "txt"]
    assert prompt.parts[0] == "Source image: "
    assert prompt.parts[2].startswith('\nEditing instruction: "add a hat"')
    assert prompt.parts[2].endswith("Image A: ")
    assert prompt.shared_images == 1


def test_editreward_templates_follow_the_paper(images):
    full = get_template("editreward")
    assert full.scale == (1, 8) and full.dimensions == ("overall",)
    p = full.render(instruction="replace apples with oranges", images=images)
    assert [type(x) for x in p.parts[:2]] == [Image.Image, Image.Image]
    assert p.parts[-1].rstrip().endswith("Text instruction - replace apples with oranges")
    follow = get_template("editreward-instruction_alignment")
    assert follow.scale == (1, 4) and "Instruction Following & Semantic Fidelity" in follow.user
    assert "Exclusivity of Edit (No Over-Editing)" in follow.user
    quality = get_template("editreward-visual_quality")
    assert quality.scale == (1, 4) and "Artifact-Free Quality" in quality.user
    assert {full.output, follow.output, quality.output} == {"text_score"}


def test_viescore_templates(images):
    sc, pq = get_template("viescore-sc"), get_template("viescore-pq")
    assert sc.images == ("source", "edited") and pq.images == ("edited",)
    assert sc.scale == pq.scale == (0, 10)
    assert sc.output == pq.output == "viescore_json"
    assert sc.sub_scores == ("editing_success", "over_editing")
    assert pq.sub_scores == ("naturalness", "artifacts")
    p = pq.render(instruction="ignored", images=images)  # a source image is simply not shown
    assert len(p.images) == 1 and p.images[0] is images["edited"]
    assert '"score": [...]' in p.system and '"reasoning"' in p.system
    text = "".join(x for x in sc.render(instruction="x", images=images).parts
                   if isinstance(x, str))
    assert "from 0 to 10" in text


def test_level_templates(images):
    t = get_template("epaiqa-levels")
    p = t.render(instruction="x", images=images, dimension="harmony")
    assert p.answer_prefix == "The harmony of the edited image is"
    assert "How would you rate the harmony of the edited image?" in p.parts[-1]
    assert t.output == "levels" and t.scale == (1, 5)
    h = get_template("epaiqa-harmony").render(instruction="", images=images)
    assert h.answer_prefix == "Harmony level is:" and h.images == [images["edited"]]
    assert ". Please rate the harmony" in h.parts[-1]
    h2 = get_template("epaiqa-harmony").render(instruction="", images=images,
                                              cot="The lighting differs. ")
    assert ". The lighting differs. Please rate" in h2.parts[-1]
    n = get_template("epaiqa-naturalness").render(instruction="", images=images)
    assert n.images == [images["crop"]] and n.answer_prefix == "Naturalness level is:"
    g = get_template("epaiqa-grounding")
    assert g.output == "text" and g.scale is None
    assert g.answer_prefix == "The four coefficients representing the editing area are:"


def test_ds_ieqa_prefix_ends_before_the_first_digit(images):
    t = get_template("ds-ieqa-digits")
    assert t.output == "digits" and t.scale == (1, 5)
    p = t.render(instruction="x", images=images, dimension="visual_quality")
    assert p.answer_prefix == "Visual quality score: "
    p = t.render(instruction="x", images=images, dimension="SC")
    assert p.answer_prefix == "Editing fidelity score: "
    assert "Definition of editing fidelity:" in p.system
    # FDMPO: an optimised definition replaces the built-in one
    p = t.render(instruction="x", images=images, dimension="PQ", definition="Sharpness only.")
    assert p.system.endswith("Definition of visual quality: Sharpness only.")


def test_reasonedit_templates(images):
    t = get_template("reasonedit-critique")
    assert t.output == "critique" and t.dimensions == (
        "visual_quality", "instruction_alignment", "content_preservation")
    text = t.render(instruction="x", images=images).parts[-1]
    assert "[Final Assessment]" in text and "Content Preservation: <score>" in text
    r = get_template("reasonedit-reward")
    p = r.render(instruction="x", images=images, critique="CRITIQUE-TEXT")
    assert p.parts[-1].rstrip().endswith("Reward Scores:")
    assert "CRITIQUE-TEXT" in p.parts[-1] and '"logicality": <score>' in p.parts[-1]


def test_judge_json_lists_requested_dimensions(images):
    t = get_template("judge-json")
    p = t.render(instruction="x", images=images, dimensions=["PQ", "consistency"])
    text = p.parts[-1]
    assert "- visual_quality (visual quality):" in text
    assert '{"visual_quality": <score>, "content_preservation": <score>, "reasoning"' in text
    assert "from 1 (worst) to 5 (best)" in text
    single = t.render(instruction="x", images=images, dimension="overall").parts[-1]
    assert '{"overall": <score>, "reasoning"' in single
    ten = get_template("judge-json-10").render(instruction="x", images=images, dimension="vq")
    assert "from 0 (worst) to 10 (best)" in ten.parts[-1]


def test_fill_keeps_markers():
    filled = get_template("viescore-sc").fill(instruction="add a cat")
    assert filled.user.startswith("<image:source><image:edited>")
    assert filled.user.rstrip().endswith("Editing instruction: add a cat")


def test_instruction_cannot_inject_images(images):
    p = get_template("viescore-sc").render(instruction="<image:source> again", images=images)
    assert len(p.images) == 2 and "<image:source> again" in p.parts[-1]


def test_non_rgb_images_are_converted(images):
    grey = Image.new("L", (4, 4), 7)
    p = get_template("viescore-pq").render(instruction="", images={"edited": grey})
    assert p.images[0].mode == "RGB"


# --------------------------------------------------------------------------- errors
def test_missing_placeholders_are_listed(images):
    with pytest.raises(MissingPlaceholderError) as err:
        get_template("reasonedit-reward").render(instruction="x", images=images)
    assert err.value.missing == ["critique"] and "{critique}" in str(err.value)
    with pytest.raises(MissingPlaceholderError, match="dimensions=") as err:
        get_template("judge-json").render(instruction="x", images=images)
    assert "dimensions_block" in err.value.missing and "json_example" in err.value.missing
    with pytest.raises(MissingPlaceholderError, match=r"\{Dimension\}.*pass dimension="):
        get_template("ds-ieqa-digits").render(instruction="x", images=images)


def test_unknown_and_missing_image_slots(images):
    t = get_template("viescore-sc")
    with pytest.raises(TemplateError, match="unknown image slot.*'edit'"):
        t.render(instruction="x", images={**images, "edit": images["edited"]})
    with pytest.raises(TemplateError, match=r"needs image\(s\) \['source'\]"):
        t.render(instruction="x", images={"edited": images["edited"]})
    with pytest.raises(TemplateError, match="must be a PIL image"):
        t.render(instruction="x", images={"source": "a.png", "edited": images["edited"]})
    with pytest.raises(TemplateError, match="must map slot names"):
        t.render(instruction="x", images=[images["source"]])


def test_dimension_checks(images):
    t = get_template("ds-ieqa-digits")
    with pytest.raises(TemplateError, match="not 'harmony'"):
        t.render(instruction="x", images=images, dimension="harmony")
    with pytest.raises(UnknownDimensionError):
        t.render(instruction="x", images=images, dimension="wobble")
    with pytest.raises(TemplateError, match="must be text"):
        t.render(instruction=None, images=images, dimension="vq")
    with pytest.raises(TemplateError, match="use dimension="):
        get_template("judge-json").render(instruction="x", images=images, dimensions="PQ")


def _spec(**over):
    base = dict(name="t-x", description="d", reference="r", system=None,
                user="<image:source><image:edited>Rate {dimension}: {instruction}",
                output="text_score", scale=(1, 5), images=("source", "edited"))
    base.update(over)
    return base


@pytest.mark.parametrize("over,field", [
    (dict(user="<image:edited><image:source>x"), "user"),
    (dict(user="<image:source>only one"), "user"),
    (dict(images=("source", "source"), user="<image:source><image:source>"), "images"),
    (dict(images=("Source",), user="<image:Source>"), "images"),
    (dict(output="score"), "output"),
    (dict(scale=None), "scale"),
    (dict(scale=(5, 1)), "scale"),
    (dict(scale=("a", "b")), "scale"),
    (dict(user="<image:source><image:edited>{unclosed"), "user"),
    (dict(user="<image:source><image:edited>{0}"), "user"),
    (dict(user="<image:source><image:edited>{a.b}"), "user"),
    (dict(system="<image:source>"), "system"),
    (dict(answer_prefix="{x"), "answer_prefix"),
    (dict(name="Bad Name"), "name"),
    (dict(dimensions=("wobble",)), "dimensions"),
    (dict(dimensions="visual_quality"), "dimensions"),
    (dict(dimension_names={"wobble": "w"}), "dimension_names"),
    (dict(defaults={"cot": 3}), "defaults"),
])
def test_invalid_templates_name_the_field(over, field):
    with pytest.raises(TemplateError, match=f"field '{field}'"):
        PromptTemplate(**_spec(**over))


def test_scale_not_needed_for_verdicts_and_text():
    PromptTemplate(**_spec(output="verdict", scale=None))
    PromptTemplate(**_spec(output="text", scale=None))


def test_dimensions_are_canonicalised():
    t = PromptTemplate(**_spec(dimensions=("PQ", "visual quality", "SC")))
    assert t.dimensions == ("visual_quality", "instruction_alignment")


def test_digest_and_round_trip():
    t = get_template("judge-json")
    again = template_from_dict(t.to_dict())
    assert again == t and again.digest == t.digest
    changed = dataclasses.replace(t, user=t.user + " ")
    assert changed.digest != t.digest
    assert len(t.digest) == 12 and all(c in string.hexdigits for c in t.digest)


def test_template_is_immutable_hashable_and_picklable():
    t = get_template("epaiqa-harmony")
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.user = "x"
    with pytest.raises(TypeError, match="read-only"):
        t.defaults["x"] = "y"
    with pytest.raises(TypeError, match="read-only"):
        t.defaults.update(x="y")
    assert {t: 1}[t] == 1
    assert pickle.loads(pickle.dumps(t)) == t
    assert copy.deepcopy(t) == t and dict(copy.deepcopy(t).defaults) == {"cot": ""}


# --------------------------------------------------------------------------- registry
def test_registry_round_trip():
    t = PromptTemplate(**_spec(name="test-registry-only"))
    try:
        register_template(t)
        assert get_template("test-registry-only") is t
        assert "test-registry-only" in list_templates(output="text_score")
        with pytest.raises(TemplateError, match="already registered"):
            register_template(t)
        t2 = dataclasses.replace(t, description="new")
        register_template(t2, overwrite=True)
        assert get_template("test-registry-only").description == "new"
    finally:
        unregister_template("test-registry-only")
    assert "test-registry-only" not in list_templates()


def test_unknown_template_lists_known_names():
    with pytest.raises(UnknownTemplateError, match="known: .*judge-json") as err:
        get_template("judge-jsn")
    assert isinstance(err.value, KeyError) and isinstance(err.value, ValueError)


def test_list_templates_by_output():
    assert list_templates(output="verdict") == ["pairwise-verdict"]
    assert set(list_templates(output="viescore_json")) == {"viescore-sc", "viescore-pq"}
    assert "epaiqa-levels" in list_templates(output="levels")
    with pytest.raises(TemplateError, match="output must be one of"):
        list_templates(output="scores")
    with pytest.raises(TypeError):
        register_template({"name": "x"})
