"""Explanation metrics against hand-worked values and the reference packages."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from ieqa.explain.metrics import (
    ExplainMetricError,
    TextEncoder,
    embedding_cosine,
    mean_std,
    meteor,
    meteor_tokens,
    meteor_variant,
    rouge1,
)

from .tiny_encoder import build_tiny_encoder

rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")

HYP = "The dogs were running in a park"
REF = "A dog runs in the green park today"


# ----------------------------------------------------------------------------- ROUGE-1


def test_rouge1_hand_worked():
    # tokens: hyp 7 (the dogs were running in a park), ref 8 (a dog runs in the green park
    # today); shared unigrams without stemming: the, in, a, park = 4
    p, r = Fraction(4, 7), Fraction(4, 8)
    f = 2 * p * r / (p + r)
    assert f == Fraction(8, 15)
    assert rouge1(HYP, REF) == pytest.approx(float(f), abs=1e-12)
    assert rouge1(HYP, REF, measure="precision") == pytest.approx(float(p), abs=1e-12)
    assert rouge1(HYP, REF, measure="recall") == pytest.approx(float(r), abs=1e-12)


@pytest.mark.parametrize("stem", [False, True])
@pytest.mark.parametrize("pred,ref", [
    (HYP, REF),
    ("The edit follows the prompt: the cat is now red.", "The cat was recoloured red as asked."),
    ("", "anything"),
    ("same words same words", "same words same words"),
])
def test_rouge1_equals_the_rouge_score_package(pred, ref, stem):
    expected = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=stem).score(ref, pred)
    assert rouge1(pred, ref, use_stemmer=stem) == expected["rouge1"].fmeasure


def test_rouge1_rejects_non_text():
    with pytest.raises(ExplainMetricError, match="prediction must be text"):
        rouge1(None, "x")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ METEOR


def _meteor_by_hand(m: int, hyp_len: int, ref_len: int, chunks: int) -> float:
    """Lavie & Agarwal (2007) with NLTK's parameters alpha=0.9, beta=3, gamma=0.5."""
    p, r = Fraction(m, hyp_len), Fraction(m, ref_len)
    fmean = p * r / (Fraction(9, 10) * p + Fraction(1, 10) * r)
    penalty = Fraction(1, 2) * Fraction(chunks, m) ** 3
    return float((1 - penalty) * fmean)


def test_meteor_exact_plus_stem_hand_worked():
    # hyp: the(0) dogs(1) were(2) running(3) in(4) a(5) park(6)
    # ref: a(0) dog(1) runs(2) in(3) the(4) green(5) park(6) today(7)
    # exact: the-4, in-3, a-0, park-6; Porter stem: dogs~dog (1-1), running~runs (3-2)
    # -> m = 6 matches; sorted by hyp position: (0,4) | (1,1) | (3,2)(4,3) | (5,0) | (6,6)
    # -> 5 chunks. P = 6/7, R = 6/8, Fmean = P R / (0.9 P + 0.1 R) = 0.759494,
    # penalty = 0.5 (5/6)^3 = 125/432, score = (1 - 125/432) Fmean = 0.539733
    expected = _meteor_by_hand(6, 7, 8, 5)
    assert expected == pytest.approx(0.539733, abs=1e-6)
    assert meteor(HYP, REF, use_wordnet=False) == pytest.approx(expected, abs=1e-12)


def test_meteor_without_stem_matches_would_be_lower():
    # the stem stage matters: with exact matches only (m=4: (0,4) (4,3) (5,0) (6,6), four
    # chunks) the hand-worked value would be 0.5 * Fmean(4/7, 4/8)
    exact_only = _meteor_by_hand(4, 7, 8, 4)
    assert exact_only == pytest.approx(0.253165, abs=1e-6)
    assert meteor(HYP, REF, use_wordnet=False) > exact_only + 0.25


def test_meteor_identity_and_no_match():
    # one contiguous chunk of m=5: penalty 0.5 (1/5)^3 = 0.004
    assert meteor("a b c d e", "a b c d e", use_wordnet=False) == pytest.approx(0.996)
    assert meteor("red square", "blue circle", use_wordnet=False) == 0.0
    assert meteor("", "blue circle", use_wordnet=False) == 0.0


def test_meteor_tokens_and_variant_label():
    assert meteor_tokens("The cat's tail, RED!") == ["the", "cat", "s", "tail", "red"]
    assert meteor_variant(False) == "exact+stem"
    assert meteor_variant(True) == "exact+stem+wordnet"
    assert meteor_variant() in ("exact+stem", "exact+stem+wordnet")


def test_meteor_wordnet_demanded_without_data():
    from ieqa.explain.metrics import wordnet_available

    if wordnet_available():
        pytest.skip("WordNet data is installed here")
    with pytest.raises(ExplainMetricError, match="nltk.downloader wordnet"):
        meteor(HYP, REF, use_wordnet=True)


@pytest.mark.parametrize("kw,msg", [({"alpha": 0}, "alpha"), ({"beta": 0}, "beta"),
                                    ({"gamma": 2}, "gamma")])
def test_meteor_parameter_ranges(kw, msg):
    with pytest.raises(ExplainMetricError, match=msg):
        meteor(HYP, REF, use_wordnet=False, **kw)


# ------------------------------------------------------------------ embedding cosine


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    """A random 2-layer BERT and a word-level tokenizer, built offline."""
    return build_tiny_encoder(tmp_path_factory.mktemp("tiny-bert"))


def test_embedding_cosine_is_mean_pooled_cosine(tiny_encoder):
    import torch

    enc = TextEncoder.load(str(tiny_encoder))
    preds = ["the cat is red", "a dog", "the edit looks natural"]
    refs = ["the cat is blue", "a dog", "the edit looks fake and the cat is red"]
    got = embedding_cosine(preds, refs, enc)
    # by hand: mean of the last hidden state over each text's own tokens, then cosine
    def vec(text):
        batch = enc.tokenizer([text], return_tensors="pt")
        with torch.no_grad():
            return enc.model(**batch).last_hidden_state[0].mean(0)
    for g, p, r in zip(got, preds, refs, strict=True):
        want = torch.nn.functional.cosine_similarity(vec(p), vec(r), dim=0).item()
        assert g == pytest.approx(want, abs=1e-5)  # padding in the batch changes nothing
    assert got[1] == pytest.approx(1.0, abs=1e-6)
    assert all(-1.0 <= g <= 1.0 for g in got)


def test_embedding_cosine_clips_float32_rounding_to_one():
    """Identical texts give cosine 1, never 1.0000001: float32 rounding of the norms puts
    some vectors' cosine with themselves above 1 (this one: the 6th draw of seed 0)."""
    import torch

    torch.manual_seed(0)
    v = [torch.randn(1, 32) for _ in range(6)][-1]

    class FixedEncoder:
        def encode(self, texts):
            return torch.cat([v] * len(texts))

    raw = torch.nn.functional.cosine_similarity(v, v.clone(), dim=-1, eps=1e-12).item()
    assert raw > 1.0  # the rounding this test is about
    assert embedding_cosine(["a", "b"], ["a", "b"], FixedEncoder()) == [1.0, 1.0]


def test_embedding_cosine_cls_pooling_and_errors(tiny_encoder):
    enc = TextEncoder.load(str(tiny_encoder), pooling="cls")
    assert embedding_cosine(["the cat"], ["the cat"], enc)[0] == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ExplainMetricError, match="one reference per prediction"):
        embedding_cosine(["a"], [], enc)
    with pytest.raises(ExplainMetricError, match="pooling"):
        TextEncoder(enc.model, enc.tokenizer, pooling="max")  # type: ignore[arg-type]
    with pytest.raises(ExplainMetricError, match="cannot load the text encoder"):
        TextEncoder.load(str(tiny_encoder / "nope"))


# --------------------------------------------------------------------- repeated runs


def test_mean_std_hand_worked():
    mean, std = mean_std([0.30, 0.34, 0.32, 0.36, 0.28])
    assert mean == pytest.approx(0.32)
    # deviations -0.02, 0.02, 0, 0.04, -0.04: squares sum 0.004, / (5-1) = 0.001
    assert std == pytest.approx(math.sqrt(0.001))
    assert mean_std([0.30, 0.34, 0.32, 0.36, 0.28], ddof=0)[1] == pytest.approx(math.sqrt(0.0008))
    m1, s1 = mean_std([0.5])
    assert m1 == 0.5 and math.isnan(s1)
    with pytest.raises(ExplainMetricError, match="at least one"):
        mean_std([])
