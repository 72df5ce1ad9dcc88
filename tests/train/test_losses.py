"""Tests of ieqa.train.losses against values worked out by hand, scipy, and gradcheck."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from ieqa.train.losses import (
    DIGIT_WEIGHTS,
    LossInputError,
    ScoreQueue,
    aggregate_gaussian,
    bradley_terry_loss,
    bt_ties_loss,
    digit_distance_loss,
    huber_loss,
    level_ce_loss,
    mse_loss,
    pairwise_ranking_loss,
    plcc_loss,
    probit_ranking_loss,
    re_reward_loss,
    tdrl_loss,
    token_ce_loss,
    uncertainty_ranking_loss,
)

F64 = torch.float64
INF = math.inf


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # the tensors here are tiny: intra-op threads only add barrier waits (milliseconds per op
    # on a loaded machine), so run this module single-threaded and restore the setting after
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def t64(values) -> torch.Tensor:
    return torch.tensor(values, dtype=F64)


def softplus(x: float) -> float:
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


def huber(e: float, delta: float = 1.0) -> float:
    return 0.5 * e * e if abs(e) < delta else delta * (abs(e) - 0.5 * delta)


# ------------------------------------------------------------------------------------------
# token CE
# ------------------------------------------------------------------------------------------


def test_token_ce_by_hand():
    # position 0: logits (0, 0), label 1 -> -log(1/2) = log 2
    # position 1: logits (log 3, 0), label 0 -> -log(3/4) = log(4/3)
    logits = t64([[[0.0, 0.0], [math.log(3.0), 0.0]]])
    both = token_ce_loss(logits, torch.tensor([[1, 0]]))
    assert both.item() == pytest.approx((math.log(2) + math.log(4 / 3)) / 2, abs=1e-12)
    one = token_ce_loss(logits, torch.tensor([[-100, 0]]))
    assert one.item() == pytest.approx(math.log(4 / 3), abs=1e-12)


def test_token_ce_nothing_counted_is_zero_with_grad():
    logits = torch.randn(2, 3, 4, dtype=F64, requires_grad=True)
    loss = token_ce_loss(logits, torch.full((2, 3), -100))
    assert loss.item() == 0.0 and loss.requires_grad
    loss.backward()
    assert torch.equal(logits.grad, torch.zeros_like(logits))


# ------------------------------------------------------------------------------------------
# digit distance and TDRL
# ------------------------------------------------------------------------------------------


def _digit_case() -> tuple[torch.Tensor, torch.Tensor]:
    logits = torch.full((2, 3, 10), -INF, dtype=F64)
    # sample 0, digit 0: uniform, g=3 -> 0.1 * (3+2+1+0+1+2+3+4+5+6) = 2.7
    logits[0, 0] = 0.0
    # sample 0, digit 1: P(4) = P(6) = 1/2, g=5 -> 1.0, weighted 0.1
    logits[0, 1, 4] = logits[0, 1, 6] = 0.0
    # sample 0, digit 2: all mass on 7, g=7 -> 0
    logits[0, 2, 7] = 5.0
    # sample 1, digit 0: P(0) = 1/4, P(1) = 3/4, g=0 -> 0.75
    logits[1, 0, 0], logits[1, 0, 1] = 0.0, math.log(3.0)
    # sample 1, digits 1, 2: uniform, g=0 and g=9 -> 4.5 each, weighted 0.45 and 0.045
    logits[1, 1] = 0.0
    logits[1, 2] = 0.0
    targets = torch.tensor([[3, 5, 7], [0, 0, 9]])
    return logits, targets


# sample 0: 2.7 + 0.1*1.0 + 0 = 2.8; sample 1: 0.75 + 0.45 + 0.045 = 1.245
DIGIT_CASE_LOSS = (2.8 + 1.245) / 2


def test_digit_distance_by_hand():
    logits, targets = _digit_case()
    assert digit_distance_loss(logits, targets).item() == pytest.approx(DIGIT_CASE_LOSS, abs=1e-12)
    # other weights: only digit 0 counts -> (2.7 + 0.75) / 2
    only_first = digit_distance_loss(logits, targets, weights=(1.0, 0.0, 0.0))
    assert only_first.item() == pytest.approx((2.7 + 0.75) / 2, abs=1e-12)


def test_digit_distance_vocab_normalisation():
    logits, targets = _digit_case()
    # a vocabulary holding as much mass again outside the digits: every P_t(k) halves
    lse = torch.logsumexp(logits, dim=-1) + math.log(2.0)
    vocab = digit_distance_loss(logits, targets, vocab_logsumexp=lse)
    assert vocab.item() == pytest.approx(DIGIT_CASE_LOSS / 2, abs=1e-12)
    with pytest.raises(LossInputError, match="vocab_logsumexp"):
        digit_distance_loss(logits, targets, vocab_logsumexp=lse - 1.0)


V, DIGIT_IDS = 14, list(range(4, 14))  # tokens 0..3 are words, 4..13 are '0'..'9'


def _tdrl_case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 6, V, generator=gen, dtype=F64)
    # sample 0 writes "1.35" (ids 5, 7, 9) at positions 2, 4, 5; words at 1 and 3
    # sample 1 writes "9.20" (ids 13, 6, 4) at positions 3, 4, 5; a word at 2
    labels = torch.tensor([[-100, 1, 5, 2, 7, 9], [-100, -100, 0, 13, 6, 4]])
    positions = torch.tensor([[2, 4, 5], [3, 4, 5]])
    return logits, labels, positions


def _tdrl_by_loops(logits, labels, positions, normalisation):
    lg = logits.tolist()
    ce_terms = []
    for b, t in [(0, 1), (0, 3), (1, 2)]:
        row = lg[b][t]
        log_z = math.log(sum(math.exp(v) for v in row))
        ce_terms.append(log_z - row[labels[b][t].item()])
    score_terms = []
    for b in range(2):
        s = 0.0
        for t in range(3):
            row = lg[b][positions[b][t].item()]
            g = DIGIT_IDS.index(labels[b][positions[b][t]].item())
            support = DIGIT_IDS if normalisation == "digits" else range(V)
            z = sum(math.exp(row[i]) for i in support)
            s += DIGIT_WEIGHTS[t] * sum(
                math.exp(row[DIGIT_IDS[k]]) / z * abs(k - g) for k in range(10)
            )
        score_terms.append(s)
    return sum(ce_terms) / 3, sum(score_terms) / 2


@pytest.mark.parametrize("normalisation", ["digits", "vocab"])
def test_tdrl_matches_loops(normalisation):
    logits, labels, positions = _tdrl_case()
    ce, score = _tdrl_by_loops(logits, labels, positions, normalisation)
    total, parts = tdrl_loss(
        logits,
        labels,
        positions,
        DIGIT_IDS,
        score_weight=0.5,
        normalisation=normalisation,
        return_parts=True,
    )
    assert parts["ce"] == pytest.approx(ce, abs=1e-10)
    assert parts["score"] == pytest.approx(score, abs=1e-10)
    assert total.item() == pytest.approx(ce + 0.5 * score, abs=1e-10)


def test_tdrl_vocab_normalisation_rewards_mass_off_digits():
    # raising a word logit at a digit position lowers the "vocab" loss, not the "digits" one
    logits, labels, positions = _tdrl_case()
    bumped = logits.clone()
    bumped[0, 2, 0] += 5.0
    kw = {"return_parts": True}
    _, before_v = tdrl_loss(logits, labels, positions, DIGIT_IDS, normalisation="vocab", **kw)
    _, after_v = tdrl_loss(bumped, labels, positions, DIGIT_IDS, normalisation="vocab", **kw)
    _, before_d = tdrl_loss(logits, labels, positions, DIGIT_IDS, **kw)
    _, after_d = tdrl_loss(bumped, labels, positions, DIGIT_IDS, **kw)
    assert after_v["score"] < before_v["score"] - 1e-3
    assert after_d["score"] == pytest.approx(before_d["score"], abs=1e-12)


@pytest.mark.parametrize("normalisation", ["digits", "vocab"])
def test_tdrl_gradcheck(normalisation):
    logits, labels, positions = _tdrl_case()
    logits.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda x: tdrl_loss(x, labels, positions, DIGIT_IDS, normalisation=normalisation),
        (logits,),
    )


def test_tdrl_accepts_numpy_and_tensor_ids():
    logits, labels, positions = _tdrl_case()
    expected = tdrl_loss(logits, labels, positions, DIGIT_IDS).item()
    for ids in (np.arange(4, 14), torch.arange(4, 14)):
        assert tdrl_loss(logits, labels, positions, ids).item() == expected


def test_tdrl_rejects_non_digit_label_at_digit_position():
    logits, labels, positions = _tdrl_case()
    bad = positions.clone()
    bad[0, 0] = 1  # label 1 is a word
    with pytest.raises(LossInputError, match="digit_positions"):
        tdrl_loss(logits, labels, bad, DIGIT_IDS)


# ------------------------------------------------------------------------------------------
# Q-Align levels, MSE, Huber
# ------------------------------------------------------------------------------------------


def test_level_ce_by_hand():
    logits = t64([[2.0, 0.0, 0.0, 0.0, 0.0]])
    log_z = math.log(math.exp(2.0) + 4.0)
    assert level_ce_loss(logits, torch.tensor([0])).item() == pytest.approx(log_z - 2.0)
    assert level_ce_loss(logits, torch.tensor([3])).item() == pytest.approx(log_z)
    # smoothing 0.1: 0.9 * (-log p_target) + 0.1 * mean_k(-log p_k)
    expected = 0.9 * (log_z - 2.0) + 0.1 * (log_z - 2.0 / 5)
    smoothed = level_ce_loss(logits, torch.tensor([0]), label_smoothing=0.1)
    assert smoothed.item() == pytest.approx(expected, abs=1e-12)


def test_mse_by_hand():
    pred, target = t64([1.0, 2.0, 3.0]), t64([1.0, 1.0, 1.0])
    assert mse_loss(pred, target).item() == pytest.approx(5 / 3)  # (0 + 1 + 4) / 3
    weighted = mse_loss(pred, target, t64([1.0, 1.0, 2.0]))
    assert weighted.item() == pytest.approx(9 / 4)  # (0 + 1 + 2*4) / 4
    pred2 = t64([[0.0, 2.0], [1.0, 1.0]])  # per sample (0+4)/2 = 2 and (1+1)/2 = 1
    assert mse_loss(pred2, torch.zeros_like(pred2)).item() == pytest.approx(1.5)
    weighted2 = mse_loss(pred2, torch.zeros_like(pred2), t64([3.0, 1.0]))
    assert weighted2.item() == pytest.approx(7 / 4)  # (3*2 + 1*1) / 4


def test_huber_by_hand():
    pred, target = t64([0.5, 2.0]), t64([0.0, 0.0])
    # 0.5 * 0.5^2 = 0.125 ; 1 * (2 - 0.5) = 1.5
    assert huber_loss(pred, target).item() == pytest.approx((0.125 + 1.5) / 2)
    # delta 2: 0.5 * 0.25 = 0.125 ; e = 3 -> 2 * (3 - 1) = 4
    wide = huber_loss(t64([0.5, 3.0]), target, delta=2.0, weight=t64([1.0, 3.0]))
    assert wide.item() == pytest.approx((0.125 + 3 * 4.0) / 4)


# ------------------------------------------------------------------------------------------
# Bradley–Terry and ties
# ------------------------------------------------------------------------------------------


def test_bradley_terry_by_hand():
    assert bradley_terry_loss(t64([1.0]), t64([0.0])).item() == pytest.approx(
        math.log(1 + math.exp(-1.0))
    )
    # pairs d = 1 and d = -2, weights 1 and 3
    weighted = bradley_terry_loss(t64([1.0, 0.0]), t64([0.0, 2.0]), t64([1.0, 3.0]))
    expected = (math.log(1 + math.exp(-1.0)) + 3 * math.log(1 + math.exp(2.0))) / 4
    assert weighted.item() == pytest.approx(expected)


def _nll_each(s_a, s_b, **kw) -> list[float]:
    return [bt_ties_loss(t64([s_a]), t64([s_b]), torch.tensor([k]), **kw).item() for k in range(3)]


def test_rao_kupper_closed_form():
    a, b, theta = 0.7, -0.3, 2.0
    pa_, pb_ = math.exp(a), math.exp(b)
    p_a = pa_ / (pa_ + theta * pb_)
    p_b = pb_ / (pb_ + theta * pa_)
    p_tie = (theta**2 - 1) * pa_ * pb_ / ((pa_ + theta * pb_) * (pb_ + theta * pa_))
    assert p_a + p_b + p_tie == pytest.approx(1.0)
    nll = _nll_each(a, b, log_theta=math.log(theta))
    assert nll == pytest.approx([-math.log(p_a), -math.log(p_b), -math.log(p_tie)], abs=1e-12)
    mixed = bt_ties_loss(
        t64([a] * 3), t64([b] * 3), torch.tensor([0, 1, 2]), log_theta=math.log(theta)
    )
    assert mixed.item() == pytest.approx(sum(nll) / 3, abs=1e-12)


def test_davidson_closed_form():
    a, b, nu = 0.4, -0.8, 1.5
    pa_, pb_ = math.exp(a), math.exp(b)
    den = pa_ + pb_ + nu * math.sqrt(pa_ * pb_)
    expected = [
        -math.log(pa_ / den),
        -math.log(pb_ / den),
        -math.log(nu * math.sqrt(pa_ * pb_) / den),
    ]
    nll = _nll_each(a, b, log_theta=math.log(nu), model="davidson")
    assert nll == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("model", ["rao-kupper", "davidson"])
@pytest.mark.parametrize("d", [-30.0, -1.5, 0.0, 0.2, 4.0, 30.0])
def test_ties_probabilities_sum_to_one(model, d):
    nll = _nll_each(d, 0.0, log_theta=0.8, model=model)
    assert all(math.isfinite(x) for x in nll)
    assert sum(math.exp(-x) for x in nll) == pytest.approx(1.0, abs=1e-12)


def test_ties_defaults_give_one_third_tie_at_equal_scores():
    for model in ("rao-kupper", "davidson"):
        assert _nll_each(0.3, 0.3, model=model)[2] == pytest.approx(math.log(3.0))


def test_rao_kupper_stable_far_apart():
    # -log P(tie) = -log(θ²-1) + log(1 + θe^{-d}) + log(1 + θe^{d}) ≈ -log 3 + d + log 2
    nll = _nll_each(50.0, 0.0, log_theta=math.log(2.0))
    assert nll[2] == pytest.approx(50.0 + math.log(2.0) - math.log(3.0), abs=1e-9)


def test_rao_kupper_theta_one_is_bradley_terry_with_finite_grad():
    log_theta = torch.zeros((), dtype=F64, requires_grad=True)
    s_a, s_b = t64([1.0, -0.5]), t64([0.0, 0.5])
    loss = bt_ties_loss(s_a, s_b, torch.tensor([0, 1]), log_theta=log_theta)
    expected = (math.log1p(math.exp(-1.0)) + math.log1p(math.exp(-1.0))) / 2
    assert loss.item() == pytest.approx(expected)
    loss.backward()
    assert torch.isfinite(log_theta.grad)


@pytest.mark.parametrize("model", ["rao-kupper", "davidson"])
def test_ties_gradcheck(model):
    s_a = t64([0.3, -1.2, 0.5, 2.0]).requires_grad_(True)
    s_b = t64([-0.4, 0.1, 0.5, -1.0]).requires_grad_(True)
    log_theta = t64(0.7).requires_grad_(True)
    outcome = torch.tensor([0, 1, 2, 2])
    weight = t64([1.0, 2.0, 1.0, 0.5])
    assert torch.autograd.gradcheck(
        lambda a, b, lt: bt_ties_loss(a, b, outcome, log_theta=lt, model=model, weight=weight),
        (s_a, s_b, log_theta),
    )


# ------------------------------------------------------------------------------------------
# Gaussian scores
# ------------------------------------------------------------------------------------------


def test_probit_matches_scipy():
    mw, sw = np.array([0.3, -1.0, 2.0, -40.0]), np.array([1.0, 0.5, 2.0, 0.6])
    ml, sl = np.array([0.0, 0.5, -1.0, 0.0]), np.array([0.5, 1.5, 0.1, 0.8])
    expected = -stats.norm.logcdf((mw - ml) / np.sqrt(sw**2 + sl**2)).mean()
    loss = probit_ranking_loss(t64(mw), t64(np.log(sw)), t64(ml), t64(np.log(sl)))
    assert loss.item() == pytest.approx(expected, rel=1e-10)


def _gaussian_bt_forms(m: float, s: float) -> tuple[float, float]:
    """``(E[softplus(-z)], -log E[sigmoid(z)])`` for z ~ N(m, s^2) by adaptive quadrature."""
    expected_bt, _ = integrate.quad(
        lambda x: np.logaddexp(0.0, -(m + s * x)) * stats.norm.pdf(x), -np.inf, np.inf,
        epsabs=1e-13, epsrel=1e-12)
    p, _ = integrate.quad(
        lambda x: np.exp(-np.logaddexp(0.0, -(m + s * x))) * stats.norm.pdf(x), -np.inf, np.inf,
        epsabs=1e-13, epsrel=1e-12)
    return expected_bt, -math.log(p)


# The audit's case (issue 15): one pair, the same mu and sigma, 0.967 for the released form
# and 0.655 for the paper's Eq. 4. The issue gives only the two values; this pair was
# constructed to produce them: mu_w - mu_l = 0.123 and sigma_w^2 = sigma_l^2 = 1.74, so
# z ~ N(0.123, 3.48). Checked by quadrature (below) and to 30 digits with mpmath.quad:
# E[softplus(-z)] = 0.967235..., E[sigmoid(z)] = 0.519392..., -log of it = 0.655096...,
# and the probit (Thurstone) loss -log Phi(0.123 / sqrt(3.48)) = -log Phi(0.065935...)
# = -log 0.526285... = 0.641912... is a third value.
_AUDIT = {"mu_win": 0.123, "mu_lose": 0.0, "var": 1.74}


def _audit_args() -> tuple[torch.Tensor, ...]:
    log_sigma = 0.5 * math.log(_AUDIT["var"])
    return (t64([_AUDIT["mu_win"]]), t64([log_sigma]), t64([_AUDIT["mu_lose"]]), t64([log_sigma]))


def test_audit_case_gives_0967_released_and_0655_eq4():
    m, s = _AUDIT["mu_win"] - _AUDIT["mu_lose"], math.sqrt(2 * _AUDIT["var"])
    expected_bt, nll = _gaussian_bt_forms(m, s)
    assert round(expected_bt, 3) == 0.967 and round(nll, 3) == 0.655
    assert expected_bt == pytest.approx(0.967235, abs=1e-6)
    assert nll == pytest.approx(0.655096, abs=1e-6)

    def run(form: str) -> float:
        return uncertainty_ranking_loss(*_audit_args(), form=form, n_samples=1_000_000,
                                        generator=torch.Generator().manual_seed(0)).item()

    # one million draws: standard errors about 0.0009 (expected-bt) and 0.0006 (nll)
    assert run("expected-bt") == pytest.approx(0.967, abs=0.004)
    assert run("nll") == pytest.approx(0.655, abs=0.003)
    assert probit_ranking_loss(*_audit_args()).item() == pytest.approx(0.641912, abs=1e-6)


@pytest.mark.parametrize("form", ["nll", "expected-bt"])
def test_uncertainty_forms_match_numerical_integral(form):
    mw, sw, ml, sl = 0.5, 1.0, 0.0, 2.0
    expected_bt, nll = _gaussian_bt_forms(mw - ml, math.sqrt(sw**2 + sl**2))
    # 30-digit mpmath values of the same integrals: 0.908398 and 0.561693
    expected = {"expected-bt": expected_bt, "nll": nll}[form]
    loss = uncertainty_ranking_loss(
        t64([mw]),
        t64([math.log(sw)]),
        t64([ml]),
        t64([math.log(sl)]),
        form=form,
        n_samples=200_000,
        generator=torch.Generator().manual_seed(0),
    )
    assert loss.item() == pytest.approx(expected, abs=0.015)  # ~5 standard errors
    assert {"expected-bt": 0.908398, "nll": 0.561693}[form] == pytest.approx(expected, abs=1e-6)


def test_uncertainty_default_form_is_the_papers_eq4():
    gen = torch.Generator().manual_seed(5)
    default = uncertainty_ranking_loss(*_audit_args(), n_samples=64, generator=gen)
    gen = torch.Generator().manual_seed(5)
    nll = uncertainty_ranking_loss(*_audit_args(), form="nll", n_samples=64, generator=gen)
    assert default.item() == nll.item()


def test_uncertainty_forms_on_the_same_draws_obey_jensen():
    # same generator state -> the same eps: E[-log sigmoid(z)] >= -log E[sigmoid(z)] exactly
    args = (t64([0.3, -1.0, 2.0]), t64([0.1, 0.5, -0.2]), t64([0.0, 0.5, -1.0]),
            t64([0.0, 0.3, 0.4]))

    def run(form: str) -> float:
        return uncertainty_ranking_loss(*args, form=form, n_samples=32,
                                        generator=torch.Generator().manual_seed(2)).item()

    assert run("expected-bt") > run("nll")


def test_only_the_nll_form_lets_sigma_grow_on_a_wrongly_ordered_pair():
    # means in the wrong order (mu_w - mu_l = -1): more sigma makes the preference more
    # probable, so -log E[sigmoid(z)] falls; E[softplus(-z)] rises with sigma for any pair
    # (softplus is convex). Quadrature at sigma_w = sigma_l = 1 and 2:
    low_bt, low_nll = _gaussian_bt_forms(-1.0, math.sqrt(2.0))
    high_bt, high_nll = _gaussian_bt_forms(-1.0, math.sqrt(8.0))
    assert high_nll < low_nll and high_bt > low_bt
    grads = {}
    for form in ("nll", "expected-bt"):
        log_sigma = t64([0.0]).requires_grad_(True)
        uncertainty_ranking_loss(t64([-1.0]), log_sigma, t64([0.0]), t64([0.0]), form=form,
                                 n_samples=100_000,
                                 generator=torch.Generator().manual_seed(0)).backward()
        grads[form] = log_sigma.grad.item()
    assert grads["nll"] < 0 < grads["expected-bt"]


@pytest.mark.parametrize("form", ["nll", "expected-bt"])
def test_uncertainty_deterministic_and_small_sigma_limit(form):
    args = (t64([1.0, -0.5]), t64([-30.0, -30.0]), t64([0.0, 0.5]), t64([-30.0, -30.0]))

    def run(seed: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(seed)
        return uncertainty_ranking_loss(*args, form=form, n_samples=64, generator=gen)

    assert run(3).item() == run(3).item()
    # σ -> 0: both forms are Bradley–Terry on the means (d = 1 and d = -1)
    expected = (math.log1p(math.exp(-1.0)) + math.log1p(math.exp(1.0))) / 2
    assert run(3).item() == pytest.approx(expected, abs=1e-9)


def test_uncertainty_gradients_reach_sigma():
    log_sigma = t64([0.2, -0.3]).requires_grad_(True)
    loss = uncertainty_ranking_loss(
        t64([0.5, 0.1]),
        log_sigma,
        t64([0.0, 0.0]),
        t64([0.0, 0.0]),
        n_samples=256,
        generator=torch.Generator().manual_seed(0),
    )
    loss.backward()
    assert bool((log_sigma.grad != 0).all())


def test_gaussian_ranking_gradcheck():
    mw = t64([0.3, -0.2, 1.0]).requires_grad_(True)
    lsw = t64([0.1, -0.5, 0.3]).requires_grad_(True)
    ml = t64([0.0, 0.4, -1.0]).requires_grad_(True)
    lsl = t64([-0.2, 0.2, 0.0]).requires_grad_(True)
    inputs = (mw, lsw, ml, lsl)
    assert torch.autograd.gradcheck(probit_ranking_loss, inputs)
    for form in ("nll", "expected-bt"):
        assert torch.autograd.gradcheck(
            lambda *x, form=form: uncertainty_ranking_loss(
                *x, form=form, n_samples=16, generator=torch.Generator().manual_seed(1)
            ),
            inputs,
        )


def test_aggregate_gaussian_rules():
    mu = t64([[1.0, 2.0, 3.0], [4.0, -1.0, 0.0]])
    log_sigma = torch.log(t64([[1.0, 2.0, 2.0], [1.0, 1.0, 1.0]]))
    # row 0: Σσ² = 9 ; row 1: Σσ² = 3
    m, ls = aggregate_gaussian(mu, log_sigma, "sum")
    assert m.tolist() == pytest.approx([6.0, 3.0])
    assert ls.exp().tolist() == pytest.approx([3.0, math.sqrt(3.0)])
    m, ls = aggregate_gaussian(mu, log_sigma, "mean")
    assert m.tolist() == pytest.approx([2.0, 1.0])
    assert ls.exp().tolist() == pytest.approx([1.0, math.sqrt(3.0) / 3])

    mu.requires_grad_(True)
    log_sigma.requires_grad_(True)
    m, ls = aggregate_gaussian(mu, log_sigma, "min")
    assert m.tolist() == [1.0, -1.0]
    assert ls.exp().tolist() == pytest.approx([1.0, 1.0])
    (m.sum() + ls.sum()).backward()
    one_hot = t64([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert torch.equal(mu.grad, one_hot)
    assert torch.equal(log_sigma.grad, one_hot)


def test_aggregate_gaussian_sigma_options_by_hand():
    # one candidate, three dimensions: mu = (1, 2, 3), sigma = (2, 1, 4)
    mu = t64([[1.0, 2.0, 3.0]])
    log_sigma = torch.log(t64([[2.0, 1.0, 4.0]]))
    cases = {
        # mean: sqrt(4 + 1 + 16) / 3 = sqrt(21) / 3 = 1.5275... vs the geometric mean
        # (2 * 1 * 4)^(1/3) = 8^(1/3) = 2 (the mean of log sigma, EditReward's released model)
        ("mean", "independent"): (2.0, math.sqrt(21.0) / 3),
        ("mean", "elementwise"): (2.0, 2.0),
        # min: the sigma of the smallest-mu dimension (2) vs the smallest sigma (1), which
        # belongs to another dimension
        ("min", "independent"): (1.0, 2.0),
        ("min", "elementwise"): (1.0, 1.0),
        # sum: sqrt(21) either way (the released code adds variances for sum)
        ("sum", "independent"): (6.0, math.sqrt(21.0)),
        ("sum", "elementwise"): (6.0, math.sqrt(21.0)),
    }
    for (rule, sigma), (want_mu, want_sigma) in cases.items():
        m, ls = aggregate_gaussian(mu, log_sigma, rule, sigma)
        assert m.item() == pytest.approx(want_mu), (rule, sigma)
        assert ls.exp().item() == pytest.approx(want_sigma), (rule, sigma)
    assert aggregate_gaussian(mu, log_sigma, "mean")[1].exp().item() == pytest.approx(
        math.sqrt(21.0) / 3)  # the default is "independent"

    # elementwise min: each of mu and log sigma sends its gradient to its own argmin
    mu.requires_grad_(True)
    log_sigma.requires_grad_(True)
    m, ls = aggregate_gaussian(mu, log_sigma, "min", "elementwise")
    (m + ls).sum().backward()
    assert mu.grad.tolist() == [[1.0, 0.0, 0.0]]
    assert log_sigma.grad.tolist() == [[0.0, 1.0, 0.0]]


# ------------------------------------------------------------------------------------------
# RE-Reward
# ------------------------------------------------------------------------------------------


def test_plcc_matches_scipy():
    rng = np.random.default_rng(0)
    p, t = rng.normal(size=8), rng.normal(size=8)
    expected = 1 - stats.pearsonr(p, t)[0]
    assert plcc_loss(t64(p), t64(t)).item() == pytest.approx(expected, abs=1e-8)
    assert plcc_loss(t64(2 * t + 1), t64(t)).item() == pytest.approx(0.0, abs=1e-8)
    assert plcc_loss(t64(1 - 3 * t), t64(t)).item() == pytest.approx(2.0, abs=1e-8)


def test_plcc_constant_pred_is_finite():
    pred = t64([0.5, 0.5, 0.5]).requires_grad_(True)
    loss = plcc_loss(pred, t64([1.0, 2.0, 4.0]))
    assert loss.item() == pytest.approx(1.0)
    loss.backward()
    assert bool(torch.isfinite(pred.grad).all())


def test_pairwise_ranking_three_items_by_hand():
    pred, target = t64([0.5, 0.0, 1.0]), t64([3.0, 1.0, 2.0])
    # (0,1): t0 > t1 -> softplus(-(0.5 - 0)); (0,2): t0 > t2 -> softplus(-(0.5 - 1))
    # (1,2): t1 < t2 -> softplus(+(0 - 1))
    batch_terms = [softplus(-0.5), softplus(0.5), softplus(-1.0)]
    assert pairwise_ranking_loss(pred, target).item() == pytest.approx(sum(batch_terms) / 3)
    # margin 1: only |3 - 1| = 2 > 1 counts
    assert pairwise_ranking_loss(pred, target, margin=1.0).item() == pytest.approx(softplus(-0.5))
    # queue item p = 0.2, t = 2.5: (0,q) softplus(-0.3), (1,q) softplus(-0.2), (2,q) softplus(0.8)
    queue_pred = t64([0.2]).requires_grad_(True)
    loss = pairwise_ranking_loss(pred, target, queue_pred=queue_pred, queue_target=t64([2.5]))
    queue_terms = [softplus(-0.3), softplus(-0.2), softplus(0.8)]
    assert loss.item() == pytest.approx(sum(batch_terms + queue_terms) / 6)
    assert not loss.requires_grad  # queue rows are constants, pred has no grad here


def test_pairwise_ranking_no_pairs_is_zero_with_grad():
    pred = t64([0.1, 0.7]).requires_grad_(True)
    loss = pairwise_ranking_loss(pred, t64([1.0, 1.0]))
    assert loss.item() == 0.0 and loss.requires_grad
    loss.backward()
    assert pred.grad.tolist() == [0.0, 0.0]


def test_score_queue_fifo_and_state_round_trip():
    q = ScoreQueue(3)
    assert len(q) == 0 and q.tensors()[0].shape == (0, 0)
    q.push(t64([[1.0], [2.0]]).requires_grad_(True), t64([[10.0], [20.0]]))
    q.push(t64([[3.0], [4.0]]), t64([[30.0], [40.0]]))
    pred, target = q.tensors()
    assert len(q) == 3
    assert pred.flatten().tolist() == [2.0, 3.0, 4.0]
    assert target.flatten().tolist() == [20.0, 30.0, 40.0]
    assert not pred.requires_grad

    buf = io.BytesIO()
    torch.save(q.state_dict(), buf)
    buf.seek(0)
    restored = ScoreQueue(3)
    restored.load_state_dict(torch.load(buf))
    q.push(t64([[5.0]]), t64([[50.0]]))  # does not touch the restored copy
    assert restored.tensors()[0].flatten().tolist() == [2.0, 3.0, 4.0]
    assert restored.tensors()[1].flatten().tolist() == [20.0, 30.0, 40.0]

    smaller = ScoreQueue(2)
    smaller.load_state_dict(q.state_dict())
    assert smaller.tensors()[0].flatten().tolist() == [4.0, 5.0]

    off = ScoreQueue(0)
    off.push(t64([[1.0]]), t64([[1.0]]))
    assert len(off) == 0


def _re_reward_by_loops(batch_p, batch_t, rank_p, rank_t, plcc_p, plcc_t):
    """The RE-Reward terms by plain loops: ranking against the rank-queue rows, PLCC over
    the batch and the PLCC-queue rows."""
    dims = len(batch_p[0])
    hub = sum(
        huber(p - t)
        for rp, rt in zip(batch_p, batch_t, strict=True)
        for p, t in zip(rp, rt, strict=True)
    )
    hub /= len(batch_p) * dims
    ranks, plccs = [], []
    for d in range(dims):
        bp = [r[d] for r in batch_p]
        bt = [r[d] for r in batch_t]
        qp = [r[d] for r in rank_p]
        qt = [r[d] for r in rank_t]
        pairs = [(i, j) for i in range(len(bp)) for j in range(i + 1, len(bp))]
        # pairs with equal targets (e.g. 1.0 vs 1.0 in dimension 0) are not ranked
        terms = [
            softplus(-math.copysign(1, bt[i] - bt[j]) * (bp[i] - bp[j]))
            for i, j in pairs
            if bt[i] != bt[j]
        ]
        terms += [
            softplus(-math.copysign(1, bt[i] - qt[j]) * (bp[i] - qp[j]))
            for i in range(len(bp))
            for j in range(len(qp))
            if bt[i] != qt[j]
        ]
        ranks.append(sum(terms) / len(terms))
        plccs.append(1 - stats.pearsonr(bp + [r[d] for r in plcc_p],
                                        bt + [r[d] for r in plcc_t])[0])
    return hub, sum(ranks) / dims, sum(plccs) / dims


def test_re_reward_by_hand_with_separate_queues():
    p1, t1 = [[0.5, 2.0], [1.5, 0.0], [3.0, 1.0]], [[1.0, 1.5], [1.0, 0.5], [2.0, 3.0]]
    p2, t2 = [[0.0, 1.0], [2.5, 2.0]], [[0.5, 2.5], [2.0, 0.0]]
    p3, t3 = [[1.0, 0.5]], [[1.5, 1.0]]
    # the rank queue keeps 1 row, the PLCC queue 3
    rank_q, plcc_q = ScoreQueue(1), ScoreQueue(3)
    kw = {"huber_weight": 0.5, "rank_weight": 2.0, "plcc_weight": 0.3, "return_parts": True}

    def step(p, t):
        return re_reward_loss(t64(p), t64(t), rank_queue=rank_q, plcc_queue=plcc_q, **kw)

    total, parts = step(p1, t1)
    hub, rank, plcc = _re_reward_by_loops(p1, t1, [], [], [], [])
    assert parts == pytest.approx({"huber": hub, "rank": rank, "plcc": plcc}, abs=1e-8)
    assert total.item() == pytest.approx(0.5 * hub + 2.0 * rank + 0.3 * plcc, abs=1e-8)
    assert (len(rank_q), len(plcc_q)) == (1, 3)  # pushed after the loss, each to its size

    # batch 2 ranks against p1's last row only, correlates over all three rows of p1
    total, parts = step(p2, t2)
    hub, rank, plcc = _re_reward_by_loops(p2, t2, p1[2:], t1[2:], p1, t1)
    assert parts == pytest.approx({"huber": hub, "rank": rank, "plcc": plcc}, abs=1e-8)
    assert total.item() == pytest.approx(0.5 * hub + 2.0 * rank + 0.3 * plcc, abs=1e-8)
    assert rank_q.tensors()[0].tolist() == [p2[1]]
    assert plcc_q.tensors()[0].tolist() == [p1[2], *p2]

    # batch 3 (one row): rank pairs only with the queued p2[1]; PLCC over 1 + 3 rows
    total, parts = step(p3, t3)
    hub, rank, plcc = _re_reward_by_loops(p3, t3, p2[1:], t2[1:], [p1[2], *p2], [t1[2], *t2])
    assert parts == pytest.approx({"huber": hub, "rank": rank, "plcc": plcc}, abs=1e-8)
    # dimension 0: 1.5 < 2.0 -> softplus(1.0 - 2.5) ; dimension 1: 1.0 > 0.0 ->
    # softplus(-(0.5 - 2.0)); the rank term is their mean
    assert parts["rank"] == pytest.approx((softplus(-1.5) + softplus(1.5)) / 2, abs=1e-12)


def test_re_reward_one_queue_for_both_is_pushed_once():
    shared = ScoreQueue(10)
    re_reward_loss(t64([[0.0], [1.0]]), t64([[0.0], [2.0]]), rank_queue=shared,
                   plcc_queue=shared)
    assert len(shared) == 2


def test_re_reward_single_row_is_huber_only():
    loss = re_reward_loss(t64([[2.0, 0.0]]), t64([[0.0, 0.0]]))
    assert loss.item() == pytest.approx((1.5 + 0.0) / 2)


def test_re_reward_gradcheck():
    pred = t64([[0.1, 0.9], [0.7, -0.3], [1.6, 0.4], [-0.5, 1.2]]).requires_grad_(True)
    target = t64([[0.0, 1.0], [1.0, 0.0], [2.0, 0.5], [-1.0, 2.0]])
    assert torch.autograd.gradcheck(lambda p: re_reward_loss(p, target), (pred,))
    state = {
        "size": 4,
        "pred": t64([[0.2, 0.3], [1.1, 0.8]]),
        "target": t64([[0.5, 0.0], [1.5, 1.0]]),
    }

    def with_queue(p: torch.Tensor) -> torch.Tensor:
        q = ScoreQueue(4)
        q.load_state_dict(state)
        return re_reward_loss(p, target, rank_queue=q, plcc_queue=ScoreQueue(0), margin=0.1)

    assert torch.autograd.gradcheck(with_queue, (pred,))


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------

_L3 = torch.zeros(2, 4, 5)
_L2 = torch.zeros(2, 4, dtype=torch.long)
_V1 = torch.zeros(3)
_P3 = torch.tensor([[0, 1, 2], [0, 1, 2]])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: token_ce_loss(torch.zeros(2, 4), _L2), "logits"),
        (lambda: token_ce_loss(_L3, torch.zeros(2, 3, dtype=torch.long)), "labels"),
        (lambda: token_ce_loss(_L3, torch.full((2, 4), 7)), "labels"),
        (lambda: token_ce_loss(_L3, torch.zeros(2, 4)), "labels"),  # float labels
        (
            lambda: digit_distance_loss(torch.zeros(2, 3, 9), torch.zeros(2, 3).long()),
            "digit_logits",
        ),
        (lambda: digit_distance_loss(torch.zeros(2, 3, 10), torch.full((2, 3), 10)), "targets"),
        (lambda: digit_distance_loss(torch.zeros(2, 3, 10), torch.zeros(2, 2).long()), "targets"),
        (
            lambda: digit_distance_loss(
                torch.zeros(1, 3, 10), torch.zeros(1, 3).long(), weights=(1, -1, 0)
            ),
            "weights",
        ),
        (lambda: tdrl_loss(torch.zeros(2, 4, 12), _L2, _P3, range(9)), "digit_token_ids"),
        (lambda: tdrl_loss(torch.zeros(2, 4, 12), _L2, _P3, [0] * 10), "digit_token_ids"),
        (lambda: tdrl_loss(torch.zeros(2, 4, 12), _L2, _P3, [0.5] * 10), "digit_token_ids"),
        (lambda: tdrl_loss(torch.zeros(2, 4, 12), _L2, _P3, range(5, 15)), "digit_token_ids"),
        (lambda: tdrl_loss(torch.zeros(2, 4, 12), _L2, _P3[:, :2], range(10)), "digit_positions"),
        (lambda: tdrl_loss(torch.zeros(2, 4, 12), _L2, _P3 + 2, range(10)), "digit_positions"),
        (lambda: tdrl_loss(torch.zeros(2, 4, 12), _L2, _P3 * 0, range(10)), "digit_positions"),
        (
            lambda: tdrl_loss(torch.zeros(2, 4, 12), _L2, _P3, range(10), normalisation="x"),
            "normalisation",
        ),
        (
            lambda: tdrl_loss(torch.zeros(2, 4, 12), _L2, _P3, range(10), score_weight=-1),
            "score_weight",
        ),
        (lambda: level_ce_loss(torch.zeros(2, 4), torch.zeros(2).long()), "level_logits"),
        (lambda: level_ce_loss(torch.zeros(2, 5), torch.tensor([0, 5])), "targets"),
        (
            lambda: level_ce_loss(torch.zeros(2, 5), torch.zeros(2).long(), label_smoothing=1.5),
            "label_smoothing",
        ),
        (lambda: mse_loss(_V1, torch.zeros(4)), "target"),
        (lambda: mse_loss(torch.zeros(2, 2, 2), torch.zeros(2, 2, 2)), "pred"),
        (lambda: mse_loss(_V1, _V1, torch.zeros(2)), "weight"),
        (lambda: mse_loss(_V1, _V1, torch.tensor([1.0, -1.0, 1.0])), "weight"),
        (lambda: mse_loss(_V1, _V1, torch.zeros(3)), "weight"),
        (lambda: huber_loss(_V1, _V1, delta=0.0), "delta"),
        (lambda: bradley_terry_loss(_V1, torch.zeros(2)), "s_lose"),
        (lambda: bradley_terry_loss(torch.zeros(0), torch.zeros(0)), "s_win"),
        (lambda: bt_ties_loss(_V1, _V1, torch.tensor([0, 1, 3])), "outcome"),
        (lambda: bt_ties_loss(_V1, _V1, torch.tensor([0, 1])), "outcome"),
        (lambda: bt_ties_loss(_V1, _V1, torch.zeros(3).long(), log_theta=-0.1), "log_theta"),
        (lambda: bt_ties_loss(_V1, _V1, torch.zeros(3).long(), model="thurstone"), "model"),
        (
            lambda: bt_ties_loss(_V1, _V1, torch.zeros(3).long(), log_theta=torch.zeros(2)),
            "log_theta",
        ),
        (lambda: probit_ranking_loss(_V1, _V1, _V1, torch.zeros(2)), "log_sigma_lose"),
        (lambda: uncertainty_ranking_loss(_V1, _V1, _V1, _V1, n_samples=0), "n_samples"),
        (lambda: uncertainty_ranking_loss(_V1, _V1, _V1, _V1, form="probit"), "form"),
        (lambda: aggregate_gaussian(torch.zeros(2, 3), torch.zeros(2, 3), "mean", "max"),
         "sigma"),
        (lambda: aggregate_gaussian(torch.zeros(2, 3), torch.zeros(2, 3), "median"), "rule"),
        (lambda: aggregate_gaussian(torch.zeros(2, 3), torch.zeros(2, 2)), "log_sigma"),
        (lambda: plcc_loss(torch.zeros(1), torch.zeros(1)), "pred"),
        (lambda: plcc_loss(_V1, torch.zeros(2)), "target"),
        (lambda: pairwise_ranking_loss(_V1, _V1, queue_pred=torch.zeros(2)), "queue_pred"),
        (lambda: pairwise_ranking_loss(_V1, _V1, margin=-1.0), "margin"),
        (lambda: ScoreQueue(-1), "size"),
        (lambda: re_reward_loss(_V1, _V1), "pred"),
        (
            lambda: re_reward_loss(torch.zeros(2, 2), torch.zeros(2, 2), rank_weight=-1),
            "rank_weight",
        ),
    ],
)
def test_bad_input_raises_value_error_naming_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_queue_dimension_mismatch_raises():
    q = ScoreQueue(4)
    q.push(torch.zeros(2, 2), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="pred"):
        q.push(torch.zeros(2, 3), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="rank_queue"):
        re_reward_loss(torch.zeros(2, 3), torch.zeros(2, 3), rank_queue=q)
    with pytest.raises(ValueError, match="plcc_queue"):
        re_reward_loss(torch.zeros(2, 3), torch.zeros(2, 3), plcc_queue=q)
