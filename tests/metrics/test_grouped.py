from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from ieqa.metrics import (
    MetricInputError,
    fisher_z_mean,
    full_ranking_accuracy,
    grouped_pair_accuracy,
    grouped_pair_counts,
    grouped_srcc,
    multiway_accuracy,
    multiway_accuracy_by_k,
)
from ieqa.metrics import grouped as grouped_mod


def _random_groups(seed: int, n_groups: int = 150, max_size: int = 14):
    """Variable-size groups (1..max_size, incl. constant targets) with many ties,
    item order shuffled so groups are not contiguous; string ids."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, n_groups)
    gid = np.repeat(np.array([f"g{i:03d}" for i in range(n_groups)]), sizes)
    target = rng.integers(0, 5, gid.size).astype(float)
    target[gid == "g000"] = 2.0  # a constant group
    pred = np.round(target + rng.normal(0, 1.5, gid.size))
    perm = rng.permutation(gid.size)
    return pred[perm], target[perm], gid[perm]


def _naive_srcc(pred, target, gid, min_size=2):
    out = {}
    for g in np.unique(gid):
        m = gid == g
        p, t = pred[m], target[m]
        if m.sum() < min_size or np.ptp(p) == 0 or np.ptp(t) == 0:
            out[g] = np.nan
        else:
            out[g] = stats.spearmanr(p, t).statistic
    return out


def _naive_pairs(pred, target, gid):
    out = {}
    for g in np.unique(gid):
        idx = np.flatnonzero(gid == g)
        conc = tied = valid = 0
        for i, j in itertools.combinations(idx, 2):
            if target[i] == target[j]:
                continue
            valid += 1
            if pred[i] == pred[j]:
                tied += 1
            elif (pred[i] > pred[j]) == (target[i] > target[j]):
                conc += 1
        out[g] = (conc, tied, valid)
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("min_size", [2, 4])
def test_grouped_srcc_equals_per_group_scipy(seed, min_size):
    pred, target, gid = _random_groups(seed)
    res = grouped_srcc(pred, target, gid, min_size=min_size)
    naive = _naive_srcc(pred, target, gid, min_size)
    expected = np.array([naive[g] for g in res.group_ids])
    np.testing.assert_allclose(res.per_group, expected, atol=1e-12, equal_nan=True)
    ok = ~np.isnan(expected)
    assert res.n_groups == ok.sum() and res.n_skipped == (~ok).sum() > 0
    assert res.value == pytest.approx(expected[ok].mean(), abs=1e-12)
    assert float(res) == res.value
    fz = grouped_srcc(pred, target, gid, min_size=min_size, average="fisher_z")
    assert fz.value == pytest.approx(fisher_z_mean(expected[ok]), abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_grouped_pair_accuracy_equals_combinations_loop(seed):
    pred, target, gid = _random_groups(seed)
    naive = _naive_pairs(pred, target, gid)
    conc, tied, valid = (np.array(v) for v in zip(*naive.values(), strict=True))
    res = grouped_pair_accuracy(pred, target, gid)
    assert res.value == pytest.approx(conc.sum() / valid.sum(), abs=1e-12)
    half = grouped_pair_accuracy(pred, target, gid, pred_ties="half")
    assert half.value == pytest.approx((conc.sum() + 0.5 * tied.sum()) / valid.sum(), abs=1e-12)
    by_group = grouped_pair_accuracy(pred, target, gid, average="groups")
    ok = valid > 0
    assert by_group.value == pytest.approx(np.mean(conc[ok] / valid[ok]), abs=1e-12)
    assert by_group.n_skipped == (~ok).sum() == res.n_skipped
    counts = grouped_pair_counts(pred, target, gid)
    assert counts["untied"] == valid.sum() and counts["concordant"] == conc.sum()
    assert counts["pred_tied"] == tied.sum()
    sizes = np.unique(gid, return_counts=True)[1]
    assert counts["pairs"] == (sizes * (sizes - 1) // 2).sum()


def test_large_group_and_chunked_paths_agree(monkeypatch):
    pred, target, gid = _random_groups(11, n_groups=60, max_size=30)
    reference_acc = grouped_pair_accuracy(pred, target, gid, average="groups")
    reference_srcc = grouped_srcc(pred, target, gid)
    monkeypatch.setattr(grouped_mod, "_BROADCAST_MAX_SIZE", 9)  # Kendall path for k > 9
    monkeypatch.setattr(grouped_mod, "_MAX_CELLS", 50)  # tiny broadcast chunks
    res = grouped_pair_accuracy(pred, target, gid, average="groups")
    np.testing.assert_allclose(res.per_group, reference_acc.per_group, equal_nan=True)
    half = grouped_pair_accuracy(pred, target, gid, pred_ties="half")
    naive = _naive_pairs(pred, target, gid)
    conc, tied, valid = (np.array(v) for v in zip(*naive.values(), strict=True))
    assert half.value == pytest.approx((conc.sum() + 0.5 * tied.sum()) / valid.sum())
    assert grouped_srcc(pred, target, gid).value == pytest.approx(reference_srcc.value)


def test_float64_fallback_for_many_distinct_values():
    pred, target, gid = _random_groups(3)
    p = grouped_mod._dense_ranks(pred)
    t = grouped_mod._dense_ranks(target)
    big, _ = grouped_mod._pair_counts(p + 2**25, t + 2**26, gid)  # not exact in float32
    np.testing.assert_array_equal(big, grouped_mod._pair_counts(p, t, gid)[0])


@pytest.mark.parametrize(
    "to_ids",
    [
        lambda codes: codes.astype(np.int8) - 60,  # small dtype, negative ids
        lambda codes: codes * 7 + 3,  # a dense-enough range with unused codes
        lambda codes: codes.astype(np.int64) * 10**12 - 5,  # sparse: numbered by np.unique
        lambda codes: codes.astype(np.uint64) + np.uint64(2**63 + 11),  # beyond int64
    ],
    ids=["int8", "strided", "sparse", "uint64"],
)
def test_integer_group_ids_match_string_ids(to_ids):
    pred, target, gid = _random_groups(7)
    distinct, codes = np.unique(gid, return_inverse=True)
    ids = to_ids(codes)
    ref_acc = grouped_pair_accuracy(pred, target, gid, pred_ties="half")
    ref_srcc = grouped_srcc(pred, target, gid)
    acc = grouped_pair_accuracy(pred, target, ids, pred_ties="half")
    srcc = grouped_srcc(pred, target, ids)
    expected_ids = to_ids(np.arange(len(distinct)))
    for res, ref in ((acc, ref_acc), (srcc, ref_srcc)):
        np.testing.assert_array_equal(res.group_ids, expected_ids)
        assert res.group_ids.dtype == ids.dtype
        np.testing.assert_array_equal(res.per_group, ref.per_group)
        assert (res.value, res.n_groups, res.n_skipped) == (ref.value, ref.n_groups, ref.n_skipped)


def test_lexsort_fallback_when_keys_do_not_pack(monkeypatch):
    pred, target, gid = _random_groups(8)
    p, t = grouped_mod._dense_ranks(pred), grouped_mod._dense_ranks(target)
    packed, grp = grouped_mod._pair_counts(p, t, gid)
    # codes too wide to pack (group, t, p) into one int64: np.lexsort path
    wide, grp_wide = grouped_mod._pair_counts(p + 2**40, t + 2**41, gid)
    np.testing.assert_array_equal(wide, packed)
    np.testing.assert_array_equal(grp_wide.ids, grp.ids)
    ref = grouped_srcc(pred, target, gid)
    monkeypatch.setattr(grouped_mod, "_argsort_bounded",
                        lambda key, bound: (np.argsort(key, kind="stable"),
                                            np.sort(key, kind="stable")))
    np.testing.assert_allclose(grouped_srcc(pred, target, gid).per_group, ref.per_group,
                               atol=1e-12, equal_nan=True)


def test_kendall_path_handles_constant_pred():
    p = np.zeros(5, dtype=np.int64)
    t = np.array([0, 1, 2, 2, 3])
    assert grouped_mod._pair_counts_kendall(p, t) == (0, 9, 9)
    assert grouped_mod._pair_counts_kendall(t, np.zeros(5)) == (0, 0, 0)


def test_grouped_lower_is_better_and_nan():
    pred, target, gid = _random_groups(5)
    a = grouped_pair_accuracy(pred, target, gid).value
    assert grouped_pair_accuracy(-pred, target, gid, higher_better=False).value == a
    s = grouped_srcc(pred, target, gid).value
    assert grouped_srcc(-pred, target, gid, higher_better=False).value == pytest.approx(s)
    pred = pred.copy()
    pred[[0, 7]] = np.nan
    with pytest.raises(MetricInputError, match="pred has 2 NaN"):
        grouped_srcc(pred, target, gid)
    keep = ~np.isnan(pred)
    omitted = grouped_pair_accuracy(pred, target, gid, nan_policy="omit")
    assert omitted.value == grouped_pair_accuracy(pred[keep], target[keep], gid[keep]).value


def test_grouped_hand_example():
    # group a: perfect order; group b: one swapped pair of 3, one target tie ignored
    pred = [1, 2, 3, 3, 1, 2, 5]
    target = [1, 2, 3, 1, 2, 3, 3]
    gid = ["a", "a", "a", "b", "b", "b", "b"]
    # b pairs with distinct targets: (3,1|1,2) wrong, (3,1|2,3) wrong, (3,1|5,3) right,
    # (1,2|2,3) right, (1,2|5,3) right -> 3/5 ; pooled (3 + 3) / (3 + 5)
    res = grouped_pair_accuracy(pred, target, gid)
    assert res.value == pytest.approx(6 / 8)
    np.testing.assert_allclose(res.per_group, [1.0, 3 / 5])
    assert grouped_pair_accuracy(pred, target, gid, average="groups").value == pytest.approx(0.8)


def test_grouped_errors():
    with pytest.raises(MetricInputError, match="no group"):
        grouped_srcc([1, 2, 3], [1, 2, 3], [0, 1, 2])
    with pytest.raises(MetricInputError, match="distinct targets"):
        grouped_pair_accuracy([1, 2], [1, 1], [0, 0])
    with pytest.raises(MetricInputError, match="length mismatch"):
        grouped_srcc([1, 2], [1, 2], [0])
    with pytest.raises(MetricInputError, match="min_size"):
        grouped_srcc([1, 2], [1, 2], [0, 0], min_size=1)
    with pytest.raises(MetricInputError, match="average"):
        grouped_srcc([1, 2], [1, 2], [0, 0], average="median")


# ----------------------------------------------------------------------- multi-way


def test_multiway_k3_hand_examples():
    scores = [0.9, 0.5, 0.1, 0.9, 0.1, 0.5, 0.7, 0.7, 0.2, 0.7, 0.69, 0.2]
    ranks = [1, 2, 3, 1, 2, 3, 1, 1, 2, 1, 1, 2]
    gid = np.repeat(["A", "B", "C", "D"], 3)
    # A all right; B swaps 2nd/3rd; C predicts the human tie exactly; D misses the tie by .01
    res = multiway_accuracy(scores, gid, ranks)
    np.testing.assert_array_equal(res.per_group, [1, 0, 1, 0])
    assert res.value == 0.5
    loose = multiway_accuracy(scores, gid, ranks, eps=0.05)
    np.testing.assert_array_equal(loose.per_group, [1, 0, 1, 1])
    # full ranking: human ties free -> D right as well
    np.testing.assert_array_equal(full_ranking_accuracy(scores, gid, ranks).per_group, [1, 0, 1, 1])


def test_multiway_k4_and_by_k():
    scores = [3, 4, 1, 2, 3, 4, 2, 1, 0.8, 0.3]
    ranks = [2, 1, 4, 3, 2, 1, 4, 3, 1, 2]
    gid = [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    # group 0 fully right (6 pairs); group 1 swaps the two worst; group 2 (K=2) right
    res = multiway_accuracy(scores, gid, ranks)
    np.testing.assert_array_equal(res.per_group, [1, 0, 1])
    assert multiway_accuracy_by_k(scores, gid, ranks) == {2: 1.0, 4: 0.5}
    assert (
        multiway_accuracy([-s for s in scores], gid, ranks, higher_better=False).value == res.value
    )


def test_multiway_eps_makes_close_decisive_pairs_wrong():
    # B beats C by 0.03 < eps: the model calls a tie, humans do not -> wrong
    assert multiway_accuracy([0.9, 0.53, 0.5], [0, 0, 0], [1, 2, 3], eps=0.05).value == 0.0
    assert multiway_accuracy([0.9, 0.53, 0.5], [0, 0, 0], [1, 2, 3]).value == 1.0


def test_multiway_equals_naive_on_random_groups():
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 5, 300)
    gid = np.repeat(np.arange(300), sizes)
    ranks = rng.integers(1, 4, gid.size).astype(float)
    scores = np.round(-ranks + rng.normal(0, 0.6, gid.size), 1)
    for eps in (0.0, 0.2):
        res = multiway_accuracy(scores, gid, ranks, eps=eps)
        full = full_ranking_accuracy(scores, gid, ranks)
        for g, k in enumerate(sizes):
            idx = np.flatnonzero(gid == g)
            if k < 2:
                assert np.isnan(res.per_group[g])
                continue
            right = full_right = True
            for i, j in itertools.combinations(idx, 2):
                d = scores[i] - scores[j]
                if ranks[i] == ranks[j]:
                    right &= abs(d) <= eps
                else:
                    sign = 1 if ranks[i] < ranks[j] else -1
                    right &= sign * d > eps
                    full_right &= sign * d > 0
            assert res.per_group[g] == right
            assert full.per_group[g] == full_right
        assert res.n_skipped == (sizes < 2).sum()


def test_multiway_nan_policy():
    scores = [1.0, np.nan, 0.5, 0.2]
    with pytest.raises(MetricInputError, match="scores has 1 NaN"):
        multiway_accuracy(scores, [0, 0, 1, 1], [1, 2, 1, 2])
    res = multiway_accuracy(scores, [0, 0, 1, 1], [1, 2, 1, 2], nan_policy="wrong")
    np.testing.assert_array_equal(res.per_group, [0, 1])
    with pytest.raises(MetricInputError, match="eps"):
        multiway_accuracy([1, 2], [0, 0], [1, 2], eps=-1)
