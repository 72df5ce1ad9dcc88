"""The instruction scope lexicon of ``classic``: what each instruction is read as."""

from __future__ import annotations

import pytest

from ieqa.scorers.classic.scope import OPERATIONS, EditScope, parse_scope

CASES = [
    # ShapesEdit's global templates
    ("Make the image brighter.", "global", "brighten"),
    ("Brighten the whole picture.", "global", "brighten"),
    ("Darken the whole picture.", "global", "darken"),
    ("Turn the image into a black-and-white photo.", "global", "monochrome"),
    ("Give the image an old sepia-toned look.", "global", "sepia"),
    ("Restyle the image as a flat poster with few colours.", "global", "posterize"),
    ("Blur the background.", "background", "blur"),
    ("Make the background out of focus, keep the shapes sharp.", "background", "blur"),
    # other phrasings
    ("make it look vintage", "global", "sepia"),
    ("Convert to grayscale", "global", "monochrome"),
    ("increase the contrast", "global", "contrast_up"),
    ("Reduce contrast a little", "global", "contrast_down"),
    ("Could you lighten the photo?", "global", "brighten"),
    ("dim the scene", "global", "darken"),
    ("Add bokeh to the background of this image", "background", "blur"),
    # local: an object is named, or no photometric word at all
    ("Make the car brighter", "local", None),
    ("Turn the dog's collar black and white", "local", None),
    ("Make the red circle blue.", "local", None),
    ("Remove the green square.", "local", None),
    ("Put a red circle in the top left of the image.", "local", None),
    ("Make the blue star much bigger.", "local", None),
    ("make it look like winter", "local", None),
    # relocations
    ("Move the purple star to the bottom left.", "move", None),
    ("Place the green circle in the top right instead.", "move", None),
    ("shift the cup slightly to the left", "move", None),
]


@pytest.mark.parametrize(("text", "kind", "operation"), CASES)
def test_parse_scope(text: str, kind: str, operation: str | None) -> None:
    scope = parse_scope(text)
    assert (scope.kind, scope.operation) == (kind, operation), scope
    assert bool(scope.matched) == (kind != "local")


def test_empty_and_missing_instructions_are_local() -> None:
    assert parse_scope(None) == EditScope("local")
    assert parse_scope("   ") == EditScope("local")


def test_every_operation_is_reachable_and_recorded() -> None:
    seen = {kind_op[2] for kind_op in CASES if kind_op[1] in ("global", "background")}
    assert seen == set(OPERATIONS)
    assert parse_scope("Make the image darker.").as_dict() == {
        "kind": "global", "operation": "darken", "matched": "darker"}
