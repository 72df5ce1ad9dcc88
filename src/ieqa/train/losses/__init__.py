"""Loss functions for training IEQA evaluators (pure torch, no model code).

Every function takes float tensors, returns a differentiable scalar tensor (the mean over the
batch unless its docstring says otherwise) and raises :class:`LossInputError` (a
``ValueError``) naming the offending argument for a wrong shape, dtype or parameter.

* Token-level (DS-IEQA): :func:`token_ce_loss`, :func:`digit_distance_loss`, :func:`tdrl_loss`
* Level words (Q-Align): :func:`level_ce_loss`
* Pointwise regression (EditHF, RE-Reward): :func:`mse_loss`, :func:`huber_loss`
* Pairwise preference: :func:`bradley_terry_loss`, :func:`bt_ties_loss`
* Gaussian scores (EditReward / HPSv3): :func:`uncertainty_ranking_loss` (two forms,
  ``"nll"`` and ``"expected-bt"``), :func:`probit_ranking_loss` (Thurstone Case V),
  :func:`aggregate_gaussian`
* RE-Reward composite (ReasonEdit): :func:`plcc_loss`, :class:`ScoreQueue`,
  :func:`pairwise_ranking_loss`, :func:`re_reward_loss` (separate rank and PLCC queues)

Optional per-sample ``weight`` arguments ([B], finite, non-negative, positive sum) turn the
batch mean into the weighted mean ``Σ w_b·l_b / Σ w_b``.
"""


from ieqa.data.combine import aggregate_gaussian
from ieqa.errors import LossInputError
from ieqa.train.losses.critique import (
    RE_REWARD_PLCC_QUEUE_SIZE,
    RE_REWARD_RANK_QUEUE_SIZE,
    ScoreQueue,
    pairwise_ranking_loss,
    plcc_loss,
    re_reward_loss,
)
from ieqa.train.losses.ranking import TiesModel, bradley_terry_loss, bt_ties_loss
from ieqa.train.losses.regression import huber_loss, mse_loss
from ieqa.train.losses.tokens import (
    DIGIT_WEIGHTS,
    Normalisation,
    digit_distance_loss,
    level_ce_loss,
    tdrl_loss,
    token_ce_loss,
)
from ieqa.train.losses.uncertainty import (
    UncertaintyForm,
    probit_ranking_loss,
    uncertainty_ranking_loss,
)

__all__ = [
    "DIGIT_WEIGHTS",
    "RE_REWARD_PLCC_QUEUE_SIZE",
    "RE_REWARD_RANK_QUEUE_SIZE",
    "LossInputError",
    "Normalisation",
    "TiesModel",
    "UncertaintyForm",
    "ScoreQueue",
    "aggregate_gaussian",
    "bradley_terry_loss",
    "bt_ties_loss",
    "digit_distance_loss",
    "huber_loss",
    "level_ce_loss",
    "mse_loss",
    "pairwise_ranking_loss",
    "plcc_loss",
    "probit_ranking_loss",
    "re_reward_loss",
    "tdrl_loss",
    "token_ce_loss",
    "uncertainty_ranking_loss",
]
