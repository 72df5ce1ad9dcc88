"""BatchBuilder: text targets are labelled exactly at their own tokens (prompt and padding
masked), digit positions point at the score's digits, head and pair batches carry the right
targets, and the processed-input cache changes nothing but speed."""

from __future__ import annotations

import pytest
import torch
from tests.train.conftest import SHORT_DIGITS, SHORT_HEAD, SHORT_LEVELS

from ieqa.backends.transformers_vlm import TransformersVLM
from ieqa.scorers.vlm.base import resolve_template
from ieqa.train.data import BatchBuilder, load_training_data
from ieqa.train.pairs import build_pairs
from ieqa.train.recipe import DataConfig, StageConfig


@pytest.fixture(scope="module")
def vlm(tiny_train_vlm):
    return TransformersVLM(tiny_train_vlm, device="cpu")


@pytest.fixture(scope="module")
def data():
    return load_training_data(DataConfig(train={"shapesedit": {
        "n": 24, "k": 4, "seed": 3, "size": 64, "photo_fraction": 0.0}}), 0)


def _builder(vlm, data, template, cache_mb=0.0, **stage):
    cfg = StageConfig(**{"name": "s", "template": template, **stage})
    return BatchBuilder(vlm, cfg, resolve_template(template), data.scale, cache_mb=cache_mb,
                        ranges=data.ranges)


def _decoded_labels(vlm, batch, row):
    ids = batch["input_ids"][row]
    index, labels = batch["label_index"][row], batch["labels"][row]
    keep = labels != -100
    # the logits at label_index predict the token right after it
    assert torch.equal(ids[index[keep] + 1], labels[keep])
    return vlm.tokenizer.decode(labels[keep])


def test_digit_targets_are_labelled_at_their_tokens_only(vlm, data):
    builder = _builder(vlm, data, SHORT_DIGITS, objective="text", target="digits", loss="tdrl",
                       dimensions=["visual_quality", "overall"])
    samples = data.train[:3]
    batch = builder.text_batch(samples)
    assert batch["input_ids"].shape[0] == 6  # one prompt per (sample, dimension)
    for row, (sample, dim) in enumerate((s, d) for s in samples for d in builder.dimensions):
        text = builder.target_text(sample, dim)
        assert _decoded_labels(vlm, batch, row) == text + "<|im_end|>"
        # the three digit positions hold the digits of "X.XX"
        digits = batch["labels"][row, batch["digit_positions"][row]]
        assert vlm.tokenizer.decode(digits) == text.replace(".", "")
    # the prompt is never labelled: every label index lies after the last prompt token
    assert bool((batch["label_index"] >= batch["prompt_end"][:, None]).all())


def test_level_targets_and_padding(vlm, data):
    builder = _builder(vlm, data, SHORT_LEVELS, objective="text", target="level", loss="ce",
                       dimensions=["visual_quality"])
    batch = builder.text_batch(data.train[:4])
    for row, sample in enumerate(data.train[:4]):
        word = _decoded_labels(vlm, batch, row).removesuffix("<|im_end|>")
        assert word.strip() == builder.target_text(sample, "visual_quality").strip()
        pad = batch["attention_mask"][row] == 0
        assert bool((batch["input_ids"][row][pad] == vlm.tokenizer.pad_token_id).all())


def test_head_and_pair_batches(vlm, data):
    builder = _builder(vlm, data, SHORT_HEAD, objective="pointwise", loss="mse",
                       dimensions=["visual_quality", "overall"])
    samples = data.train[:5]
    batch = builder.head_batch(samples)
    assert "labels" not in batch
    expected = [[s.scores["visual_quality"], s.scores["overall"]] for s in samples]
    assert torch.allclose(batch["targets"], torch.tensor(expected))
    width = batch["input_ids"].shape[1]
    assert batch["prompt_end"].tolist() == [width - 1] * 5  # left padding: prompts end last

    pairs = build_pairs(data.train, "overall")[:3]
    pb = _builder(vlm, data, SHORT_HEAD, objective="pairwise", loss="bt",
                  dimensions=["overall"]).pair_batch(data.train, pairs)
    assert pb["input_ids"].shape[0] == 6
    assert pb["outcome"].tolist() == [{"a>b": 0, "b>a": 1, "tie": 2}[p.label] for p in pairs]
    single = builder.head_batch([data.train[pairs[1].b]])
    row = pb["input_ids"][3 + 1]  # rows: a of every pair, then b of every pair
    assert torch.equal(row[-single["input_ids"].shape[1]:], single["input_ids"][0])


def test_cache_gives_identical_batches_and_skips_the_processor(vlm, data, monkeypatch):
    plain = _builder(vlm, data, SHORT_DIGITS, objective="text", target="digits", loss="tdrl",
                     dimensions=["visual_quality"])
    cached = _builder(vlm, data, SHORT_DIGITS, 64.0, objective="text", target="digits",
                      loss="tdrl", dimensions=["visual_quality"])
    samples = data.train[:4]
    first = cached.text_batch(samples)
    calls = []
    original = vlm.encode_one
    monkeypatch.setattr(vlm, "encode_one", lambda p: calls.append(p) or original(p))
    again = cached.text_batch(samples)
    assert calls == []  # every prompt came from the cache
    reference = plain.text_batch(samples)
    assert len(calls) == 4
    for key in reference:
        assert torch.equal(first[key], reference[key]) and torch.equal(again[key], reference[key])
    # a budget too small for one prompt caches nothing
    tiny = _builder(vlm, data, SHORT_HEAD, 1e-6, objective="pointwise", loss="mse",
                    dimensions=["overall"])
    tiny.head_batch(samples)
    assert tiny._cache == {}
