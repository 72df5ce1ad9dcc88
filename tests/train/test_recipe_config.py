"""Recipe loading, validation and --set overrides."""

from __future__ import annotations

import pytest

from ieqa.train import RecipeError, list_recipes, load_recipe


def test_every_builtin_recipe_validates_with_paper_defaults():
    names = list_recipes()
    assert names == ["ds-ieqa", "edithf", "editreward", "epaiqa", "epaiqa-cot", "re-reward",
                     "reasonedit-sft"]
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


def test_loss_fidelity_options_and_their_defaults():
    ranking = load_recipe("editreward").stages[0]
    assert ranking.loss_args["form"] == "nll"  # EditReward Eq. 4
    assert ranking.sigma_aggregation == "independent" and ranking.aggregation == "mean"
    released = load_recipe("editreward", ["stages.0.loss_args.form=expected-bt",
                                          "stages.0.sigma_aggregation=elementwise"]).stages[0]
    assert (released.loss_args["form"], released.sigma_aggregation) == (
        "expected-bt", "elementwise")
    reward = load_recipe("re-reward").stages[0]
    assert (reward.loss_args["rank_queue_size"], reward.loss_args["plcc_queue_size"]) == (
        4096, 256)
    assert all(s.level_bins == "dimension" for s in load_recipe("edithf").stages)


@pytest.mark.parametrize("recipe, override, message", [
    ("editreward", ["stages.0.loss_args.form=probit"], "form must be nll"),
    ("editreward", ["stages.0.sigma_aggregation=geometric"], "sigma_aggregation"),
    ("edithf", ["stages.0.level_bins=pooled"], "level_bins"),
    ("re-reward", ["stages.0.loss_args.queue_size=256"], "rank_queue_size and plcc_queue_size"),
    ("re-reward", ["stages.0.loss_args.plcc_queue_size=-1"], "plcc_queue_size"),
    ("re-reward", ["stages.0.loss_args.rank_queue_size=1.5"], "rank_queue_size"),
])
def test_bad_loss_options_name_the_field(recipe, override, message):
    with pytest.raises(RecipeError, match=message):
        load_recipe(recipe, override)


def test_every_objective_and_loss_a_recipe_may_name_has_a_loss_function():
    from ieqa.train.objectives import OBJECTIVE_LOSSES
    from ieqa.train.recipe import PAIRWISE_LOSSES, POINTWISE_LOSSES, TEXT_LOSSES

    allowed = ({("text", loss) for loss in TEXT_LOSSES}
               | {("pointwise", loss) for loss in POINTWISE_LOSSES}
               | {("pairwise", loss) for loss in PAIRWISE_LOSSES} | {("dual", "ce+huber")})
    assert set(OBJECTIVE_LOSSES) == allowed
