"""Training evaluators: the papers' losses, samplers and recipes on the Hugging Face stack.

Examples:
    >>> from ieqa.train import load_recipe, train
    >>> recipe = load_recipe("edithf", ["model.name=./tiny-vlm"])  # doctest: +SKIP
    >>> result = train(recipe)                                      # doctest: +SKIP
    >>> result.metrics["pairwise"]["after"]["pair_accuracy"]        # doctest: +SKIP

Modules: :mod:`.losses` (TDRL, level CE, MSE/Huber, Bradley-Terry with and without ties,
uncertainty ranking, RE-Reward), :mod:`.targets` (answer texts in each paper's format),
:mod:`.pairs` and :mod:`.samplers` (pair building, curriculum and stratified epochs),
:mod:`.data` (loading, batches with label masking), :mod:`.model`, :mod:`.objectives`,
:mod:`.trainer` and :mod:`.recipe` (validated YAML recipes).
"""

from ieqa.train.recipe import Recipe, RecipeError, StageConfig, list_recipes, load_recipe
from ieqa.train.trainer import TrainError, TrainResult, train

__all__ = ["Recipe", "RecipeError", "StageConfig", "TrainError", "TrainResult", "list_recipes",
           "load_recipe", "train"]
