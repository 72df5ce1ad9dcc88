"""Recipe loading, validation and --set overrides."""

from __future__ import annotations

import pytest

from ieqa.train import RecipeError, list_recipes, load_recipe


def test_every_builtin_recipe_validates_with_paper_defaults():
    names = list_recipes()
    assert names == ["ds-ieqa", "edithf", "editreward", "epaiqa", "re-reward", "reasonedit-sft"]
    editreward = load_recipe("editreward")
    assert editreward.optim.lr == 2e-6 and editreward.optim.warmup_ratio == 0.05
    assert editreward.optim.batch_size * editreward.optim.grad_accum == 16
    ds = load_recipe("ds-ieqa")
    assert (ds.adapter.r, ds.adapter.dropout, ds.optim.lr) == (16, 0.05, 1e-4)
    assert ds.optim.batch_size * ds.optim.grad_accum == 128 and ds.per_dimension
    assert [s.loss for s in load_recipe("edithf").stages] == ["ce", "mse", "bt"]


def test_overrides_set_nested_fields_and_list_items():
    r = load_recipe("edithf", ["optim.lr=3e-4", "stages.2.max_steps=7", "model.name=./m"])
    assert r.optim.lr == 3e-4 and r.stages[2].max_steps == 7 and r.model.name == "./m"


@pytest.mark.parametrize("override, message", [
    (["optim.lr=-1"], "optim.lr"),
    (["stages.0.loss=bt"], "does not fit objective"),
    (["stages.9.loss=bt"], "out of range"),
    (["optim.nonsense=1"], "nonsense"),
    (["lr"], "key=value"),
    (["head.kind=none"], "trains the head"),
])
def test_bad_recipes_name_the_field(override, message):
    with pytest.raises(RecipeError, match=message):
        load_recipe("edithf", override)


def test_unknown_recipe_lists_the_builtin_ones():
    with pytest.raises(RecipeError, match="edithf"):
        load_recipe("no-such-recipe")


def test_uncertainty_loss_needs_a_gaussian_head():
    with pytest.raises(RecipeError, match="gaussian"):
        load_recipe("editreward", ["head.kind=regression"])
