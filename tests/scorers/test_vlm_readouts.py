"""VLM readouts on tiny offline models of the three Qwen-VL families.

Acceptance (#5): batched == unbatched (1e-4) for every readout, prefix sharing == full
recomputation, level and digit expectations equal a hand computation from the logits, V_d
equals the formula, parse failures are recorded, a saved checkpoint reloads to identical
scores.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ieqa
from ieqa.data.images import load_image
from ieqa.prompts.answers import READOUT_LEVEL_WORDS as LEVEL_WORDS
from ieqa.scorers.base import ScorerError
from ieqa.scorers.checkpoint import load_evaluator, read_evaluator_config, save_evaluator
from ieqa.scorers.vlm.base import LoadedSample
from ieqa.scorers.vlm.digits import definition_value_formula, digit_expectation
from ieqa.scorers.vlm.levels import level_expectation
from tiny_models import FAMILIES

TOL = 1e-4
FORWARD_READOUTS = {
    "vlm-levels": {},
    "vlm-digits": {"dimensions": ["content_preservation"]},  # three passes per prompt
    "vlm-head": {"hidden_features": 16},
    "vlm-gaussian": {"hidden_features": 16, "aggregation": "min"},
    "vlm-dual": {"hidden_features": 16, "score_only": True},
}


def build(name, model, **kwargs):
    return ieqa.create_scorer(name, model=str(model), device="cpu", **kwargs)


def scores_of(results):
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    return [r.scores for r in results]


def assert_close(a, b, tol=TOL):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys()
        for k in x:
            assert abs(x[k] - y[k]) <= tol, (k, x[k], y[k])


def loaded(sample):
    return LoadedSample(sample, load_image(sample.source), load_image(sample.edited))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("readout", sorted(FORWARD_READOUTS))
def test_batched_unbatched_and_prefix_sharing_agree(tiny_models, edit_samples, family, readout):
    kw = FORWARD_READOUTS[readout]
    model = tiny_models[family]
    batched = build(readout, model, batch_size=8, **kw)
    assert batched.backend.share_prefix  # Qwen families support it
    reference = scores_of(batched.score(edit_samples))
    one_by_one = scores_of(build(readout, model, batch_size=1, **kw).score(edit_samples))
    full = scores_of(build(readout, model, batch_size=8, backend_options={"share_prefix": False},
                           **kw).score(edit_samples))
    assert_close(reference, one_by_one)
    assert_close(reference, full)
    # the numbers vary between edits (a constant readout would pass the checks above)
    first_dim = batched.dimensions[0]
    values = [s[first_dim] for s in reference]
    assert max(values) - min(values) > 1e-3
    # results come back in input order with every declared dimension
    assert set(reference[0]) == set(batched.dimensions)


@pytest.mark.parametrize("family", FAMILIES)
def test_generation_readouts_agree_batched_and_unbatched(tiny_models, edit_samples, family):
    """vlm-dual (critique), vlm-judge and vlm-pairwise generate the same text batched and
    one by one (greedy), so their results agree too."""
    model = tiny_models[family]
    runs = []
    for batch_size in (8, 1):
        dual = build("vlm-dual", model, batch_size=batch_size, hidden_features=16,
                     max_new_tokens=6)
        judge = build("vlm-judge", model, batch_size=batch_size, max_new_tokens=6)
        pairwise = build("vlm-pairwise", model, batch_size=batch_size, max_new_tokens=6,
                         order="both")
        pairs = [(edit_samples[i], edit_samples[j]) for i, j in ((0, 1), (1, 2), (4, 5))]
        runs.append((dual.score(edit_samples), judge.score(edit_samples), pairwise.compare(pairs)))
    (dual_a, judge_a, pair_a), (dual_b, judge_b, pair_b) = runs
    for a, b in zip(dual_a, dual_b, strict=True):
        assert a.explanation == b.explanation and a.explanation is not None
        assert_close([a.scores], [b.scores])
        assert a.raw["untrained_head"] is True
    for a, b in zip(judge_a, judge_b, strict=True):
        assert [p["text"] for p in a.raw["passes"]] == [p["text"] for p in b.raw["passes"]]
        assert a.error == b.error
    for a, b in zip(pair_a, pair_b, strict=True):
        assert [r["text"] for r in a.shown] == [r["text"] for r in b.shown]
        assert len(a.shown) == 2 and a.verdict == b.verdict


@pytest.mark.parametrize("family", FAMILIES)
def test_levels_expectation_equals_hand_computation(tiny_models, edit_samples, family):
    scorer = build("vlm-levels", tiny_models[family], dimensions=["visual_quality"])
    sample = edit_samples[0]
    result = scorer.score([sample])[0]
    # independent path: the processor and the model, no ieqa batching or gathering
    prompt = scorer.render(loaded(sample), "visual_quality")
    backend = scorer.backend
    enc = backend.processor(text=[backend.render(prompt)], images=prompt.images,
                            return_tensors="pt")
    with torch.no_grad():
        logits = backend.model(**enc).logits[0, -1].double().numpy()
    ids = [backend.tokenizer.encode(" " + w, add_special_tokens=False)[0] for w in LEVEL_WORDS]
    chosen = logits[ids]
    probs = np.exp(chosen - chosen.max())
    probs /= probs.sum()
    expected = float(np.dot(probs, [5, 4, 3, 2, 1]))
    assert abs(result.scores["visual_quality"] - expected) < TOL
    assert 1.0 <= expected <= 5.0
    got = result.raw["visual_quality"]["probs"]
    assert [got[w] for w in LEVEL_WORDS] == pytest.approx(probs.tolist(), abs=1e-5)


def test_level_expectation_by_hand():
    value, probs = level_expectation([0.0, 0.0, 0.0, 0.0, 0.0])
    assert value == pytest.approx(3.0) and probs == pytest.approx([0.2] * 5)
    value, _ = level_expectation([math.log(3), 0.0, -math.inf, -math.inf, math.log(1)])
    # probabilities 3/5, 1/5, 0, 0, 1/5 -> 5*0.6 + 4*0.2 + 1*0.2
    assert value == pytest.approx(4.0)


def _raw_next_logits(backend, prompt, suffix: str):
    text = backend.render(prompt) + suffix
    enc = backend.processor(text=[text], images=prompt.images, return_tensors="pt")
    with torch.no_grad():
        return backend.model(**enc).logits[0, -1].double()


@pytest.mark.parametrize("family", ["qwen2-vl", "qwen3-vl"])
def test_digit_expectation_and_definition_value_by_hand(tiny_models, edit_samples, family):
    scorer = build("vlm-digits", tiny_models[family], dimensions=["instruction_alignment"])
    backend = scorer.backend
    sample = edit_samples[2]
    prompt = scorer.render(loaded(sample), "instruction_alignment")
    assert prompt.answer_prefix.endswith("score: ")
    digits = [backend.tokenizer.encode(str(d), add_special_tokens=False)[0] for d in range(10)]

    # expected value: greedy digits chosen position by position
    rows, prefix = [], ""
    for step in range(3):
        logits = _raw_next_logits(backend, prompt, prefix)[digits]
        rows.append(logits)
        best = str(int(logits.argmax()))
        prefix += best + "." if step == 0 else best
    probs = [torch.softmax(r, -1).numpy() for r in rows]
    expected = sum(10.0 ** -t * float(np.dot(p, np.arange(10))) for t, p in enumerate(probs))
    result = scorer.score([sample])[0]
    assert abs(result.scores["instruction_alignment"] - expected) < TOL
    assert result.raw["instruction_alignment"]["greedy"] == prefix

    # V_d for ground truth 3.25: P(3), P(2 | "3."), P(5 | "3.2") over the whole vocabulary
    p = [float(torch.softmax(_raw_next_logits(backend, prompt, pre), -1)[digits[d]])
         for pre, d in (("", 3), ("3.", 2), ("3.2", 5))]
    vd = scorer.definition_value([sample], {sample.id: {"instruction_alignment": 3.25}})
    assert vd.per_sample[sample.id]["instruction_alignment"] == pytest.approx(
        p[0] + 0.1 * p[1] + 0.01 * p[2], abs=1e-6)
    assert vd.mean == pytest.approx(vd.per_sample[sample.id]["instruction_alignment"])


def test_digit_formulas_by_hand():
    assert definition_value_formula([1.0, 1.0, 1.0]) == pytest.approx(1.11)
    assert definition_value_formula([0.5, 0.2, 0.1]) == pytest.approx(0.521)
    logits = torch.full((3, 10), -1e9)
    logits[0, 4], logits[1, 2], logits[2, 5] = 0.0, 0.0, 0.0
    value, _ = digit_expectation(logits.tolist())
    assert value == pytest.approx(4.25)
    logits = torch.zeros(3, 10)  # uniform: E = 4.5 at each position
    assert digit_expectation(logits.tolist())[0] == pytest.approx(4.5 * 1.11)


def test_definition_value_uses_sample_scores_and_rejects_missing(tiny_models, edit_samples):
    scorer = build("vlm-digits", tiny_models["qwen2-vl"], dimensions=["visual_quality"])
    vd = scorer.definition_value(edit_samples[:3])
    assert set(vd.per_sample) == {s.id for s in edit_samples[:3]}
    assert all(0.0 <= v["visual_quality"] <= 1.11 for v in vd.per_sample.values())
    bare = edit_samples[0].model_copy(update={"scores": {}})
    with pytest.raises(ScorerError, match="no ground truth"):
        scorer.definition_value([bare])


@pytest.mark.parametrize("readout", ["vlm-head", "vlm-gaussian", "vlm-dual", "vlm-levels"])
def test_checkpoint_reloads_to_identical_scores(tiny_models, edit_samples, tmp_path, readout):
    model = tiny_models["qwen2-vl"]
    kw = {**FORWARD_READOUTS[readout], "seed": 3} if readout != "vlm-levels" else {}
    scorer = build(readout, model, batch_size=4, **kw)
    before = scores_of(scorer.score(edit_samples))
    folder = save_evaluator(scorer, tmp_path / "evaluator")
    record = read_evaluator_config(folder)
    assert record["scorer"] == readout and record["base_model"] == str(model)
    reloaded = ieqa.create_scorer(readout, checkpoint=folder, device="cpu")
    assert_close(before, scores_of(reloaded.score(edit_samples)), tol=1e-6)
    assert reloaded.template.to_dict() == scorer.template.to_dict()
    if readout != "vlm-levels":
        assert (folder / "head" / "head.safetensors").exists()
        # a differently initialised head gives other scores: the reload is not vacuous
        other = build(readout, model, **{**kw, "seed": 4})
        assert scores_of(other.score(edit_samples[:1])) != before[:1]
        assert not any("untrained_head" in r.raw for r in reloaded.score(edit_samples[:1]))


def test_checkpoint_errors(tiny_models, tmp_path):
    scorer = build("vlm-head", tiny_models["qwen2-vl"], hidden_features=8)
    folder = save_evaluator(scorer, tmp_path / "ev")
    with pytest.raises(ScorerError, match="already holds"):
        save_evaluator(scorer, folder)
    with pytest.raises(ScorerError, match="holds a 'vlm-head' evaluator, not 'vlm-gaussian'"):
        ieqa.create_scorer("vlm-gaussian", checkpoint=folder)
    with pytest.raises(ScorerError, match="not an ieqa evaluator"):
        load_evaluator(tmp_path)
    with pytest.raises(ScorerError, match="maps"):  # a head for another hidden size
        build("vlm-gaussian", tiny_models["qwen2-vl"], head=folder / "head")


def test_gaussian_sigma_and_aggregation(tiny_models, edit_samples):
    model = tiny_models["qwen2-vl"]
    results = {}
    for rule in ("min", "mean", "sum"):
        results[rule] = build("vlm-gaussian", model, hidden_features=16, aggregation=rule
                              ).score(edit_samples[:2])
    for k in range(2):
        mu = {d: v for d, v in results["mean"][k].scores.items() if d != "overall"}
        sigma = results["mean"][k].sigma
        assert all(s > 0 for s in sigma.values())
        assert results["min"][k].scores["overall"] == pytest.approx(min(mu.values()))
        assert results["mean"][k].scores["overall"] == pytest.approx(sum(mu.values()) / 3)
        assert results["sum"][k].scores["overall"] == pytest.approx(sum(mu.values()))
        dims = [d for d in mu]
        assert sigma["overall"] == pytest.approx(
            math.sqrt(sum(sigma[d] ** 2 for d in dims)) / 3)
    # sigma_aggregation="elementwise" (EditReward's released model): the overall sigma of
    # "mean" is the geometric mean of the dimensions' sigma, of "min" the smallest sigma
    for rule, combine in (("mean", lambda s: math.prod(s) ** (1 / 3)), ("min", min)):
        released = build("vlm-gaussian", model, hidden_features=16, aggregation=rule,
                         sigma_aggregation="elementwise").score(edit_samples[:2])
        for k in range(2):
            assert released[k].scores == pytest.approx(results[rule][k].scores)
            sigma = {d: v for d, v in released[k].sigma.items() if d != "overall"}
            assert released[k].sigma["overall"] == pytest.approx(combine(list(sigma.values())))


def test_dual_overall_and_critique(tiny_models, edit_samples):
    scorer = build("vlm-dual", tiny_models["qwen3-vl"], hidden_features=16, max_new_tokens=5)
    result = scorer.score(edit_samples[:1])[0]
    s = result.scores
    assert s["overall"] == pytest.approx(0.3 * s["visual_quality"] + 0.4 * s["instruction_alignment"]
                                         + 0.3 * s["content_preservation"])
    assert isinstance(result.explanation, str)
    assert result.raw.get("critique_truncated") is True  # 5 tokens cannot finish a critique


def test_judge_on_tiny_model_records_parse_failures(tiny_models, edit_samples):
    scorer = build("vlm-judge", tiny_models["qwen2-vl"], max_new_tokens=8, batch_size=3)
    results = scorer.score(edit_samples[:3])
    for r in results:
        assert not r.ok and "no parsable answer" in r.error
        assert r.scores == {}
        assert len(r.raw["passes"]) == 1 and "error" in r.raw["passes"][0]


def test_anchor_validation_and_errors(tiny_models):
    model = tiny_models["qwen2-vl"]
    with pytest.raises(Exception, match="exactly one token"):
        build("vlm-head", model, anchor="token:two tokens")
    with pytest.raises(Exception, match="unknown anchor"):
        build("vlm-head", model, anchor="first")
    with pytest.raises(ScorerError, match="takes no argument"):
        build("vlm-levels", model, bogus=1)
    with pytest.raises(Exception, match="needs a model"):
        ieqa.create_scorer("vlm-levels")


def test_token_and_mean_anchors_batched_equal(tiny_models, edit_samples):
    model = tiny_models["qwen2-vl"]
    for anchor in ("mean", "token:<|vision_end|>"):
        a = build("vlm-head", model, anchor=anchor, hidden_features=8, batch_size=8)
        b = build("vlm-head", model, anchor=anchor, hidden_features=8, batch_size=1,
                  backend_options={"share_prefix": False})
        assert_close(scores_of(a.score(edit_samples)), scores_of(b.score(edit_samples)))


def test_image_load_failure_is_recorded_per_sample(tiny_models, edit_samples, tmp_path):
    broken = edit_samples[0].model_copy(update={"id": "broken", "edited": tmp_path / "none.png"})
    results = build("vlm-levels", tiny_models["qwen2-vl"]).score([broken, edit_samples[1]])
    assert not results[0].ok and results[1].ok


def test_the_dimensions_of_one_edit_share_both_images(tiny_models, edit_samples):
    """vlm-levels asks its dimensions after both images: the dimension prompts of one edit
    share a prefix holding both images, so the vision tower runs once per edit (the
    backend's FLOP count), and the scores equal full recomputation (1e-5)."""
    model = tiny_models["qwen2.5-vl"]
    shared = build("vlm-levels", model, batch_size=1)
    full = build("vlm-levels", model, batch_size=1, backend_options={"share_prefix": False})
    assert len(shared.dimensions) == 3
    sample = edit_samples[:1]
    before = [s.backend.flops_done for s in (shared, full)]
    assert_close(scores_of(shared.score(sample)), scores_of(full.score(sample)), tol=1e-5)
    got, ref = (s.backend.flops_done + b * -1 for s, b in zip((shared, full), before, strict=True))
    assert got.vision == pytest.approx(ref.vision / 3, rel=1e-12)  # both images once, not 3x
    # the text before the question is computed once too (an exact count from the token
    # counts, the same on any machine: 0.59 of the unshared text here)
    assert got.text < 0.65 * ref.text
    # a template that asks the dimension before the images shares per candidate group instead
    early = {"name": "dimension-first", "description": "test", "reference": "tests",
             "system": None, "scale": [1, 5], "images": ["source", "edited"], "output": "text",
             "user": "Rate the {dimension}. <image:source><image:edited>{instruction}",
             "answer_prefix": "The {dimension} is"}
    scorer = build("vlm-levels", model, batch_size=1, template=early)
    item = loaded(edit_samples[0])
    prompts = scorer.render_dimensions(item, scorer.dimensions)
    assert [p.share_key for p in prompts] == [scorer.render(item, d).share_key
                                             for d in scorer.dimensions]
    assert len({p.share_key for p in prompts}) == 3


def test_batches_are_bucketed_by_length(tiny_models):
    """Samples of three image sizes, interleaved (5, 4 and 3 of them): ordered by estimated
    length before batching, the batches pad less (the backend's padding count) and every
    score equals the unbucketed run's (1e-5), in input order."""
    from PIL import Image as PILImage

    rng = np.random.default_rng(0)
    sizes = [(56, 56)] * 5 + [(224, 168)] * 3 + [(112, 112)] * 4
    order = rng.permutation(len(sizes))
    samples = []
    for i in order:
        w, h = sizes[i]
        img = [PILImage.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for _ in range(2)]
        samples.append(ieqa.EditSample(id=f"s{i}", source=img[0], edited=img[1],
                                       instruction="make it brighter"))
    runs = {}
    for buckets in (True, False):
        scorer = build("vlm-levels", tiny_models["qwen2-vl"], batch_size=4,
                       dimensions=["visual_quality"])
        scorer.length_buckets = buckets
        results = scorer.score(samples)
        assert [r.id for r in results] == [s.id for s in samples]
        pad, total = scorer.backend.padding_done
        runs[buckets] = (scores_of(results), pad / total)
    assert_close(runs[True][0], runs[False][0], tol=1e-5)
    # exact token counts, the same on any machine: 2.3 % of the positions padding bucketed,
    # 16.0 % not
    assert runs[True][1] < 0.05 < 0.10 < runs[False][1], runs


def test_judge_passes_seeded_per_pass_do_not_depend_on_their_batch(tiny_models, edit_samples):
    """vlm-judge with two sampled passes and seed_per_pass: every pass's answer is the same
    in a batch of 4 as alone (the transformers backend's seeded batch)."""
    runs = []
    for batch_size in (4, 1):
        judge = build("vlm-judge", tiny_models["qwen2.5-vl"], batch_size=batch_size,
                      num_samples=2, temperature=1.0, max_new_tokens=6, seed_per_pass=True,
                      dimensions=["visual_quality"])
        assert judge.config()["seed_per_pass"] is True
        runs.append([[p["text"] for p in r.raw["passes"]] for r in judge.score(edit_samples[:4])])
    assert runs[0] == runs[1]
    assert any(len(set(passes)) > 1 for passes in runs[0])  # the two passes differ
