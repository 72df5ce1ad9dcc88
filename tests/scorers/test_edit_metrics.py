"""The editing papers' metrics (``l1``, ``l2``, ``clip-i``, ``clip-t``, ``clip-dir``,
``dino``): the formulas by hand, the preprocessing against transformers' own image
processor configured as the papers' transforms, and the scorers' values against the tiny
random models' embeddings computed here independently."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from ieqa import create_scorer
from ieqa.scorers.edit_metrics import (
    clip_direction,
    clip_pixels,
    cosine,
    dino_pixels,
    pixel_distance,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from ieqa.testing.tiny_embedders import build_tiny_clip, build_tiny_dino

    root = tmp_path_factory.mktemp("embedders")
    return str(build_tiny_clip(root / "clip")), str(build_tiny_dino(root / "dino"))


def _img(seed, size=(80, 60)):
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def test_pixel_distances_by_hand():
    black = Image.new("RGB", (4, 4))
    grey = Image.new("RGB", (4, 4), (51, 51, 51))  # 0.2 per channel
    assert pixel_distance(grey, black, "l1") == pytest.approx(0.2)
    assert pixel_distance(grey, black, "l2") == pytest.approx(0.04)
    half = np.zeros((2, 2, 3), np.uint8)
    half[0] = 255  # one row white: |diff| is 1 on half the values
    assert pixel_distance(Image.fromarray(half), Image.new("RGB", (2, 2)), "l1") == 0.5
    # the edit is resized to the reference's size first (a flat image stays flat)
    assert pixel_distance(Image.new("RGB", (9, 7), (51, 51, 51)), black, "l1") == \
        pytest.approx(0.2)


def test_cosine_and_direction_by_hand():
    assert cosine([1, 0], [0, 2]) == 0.0 and cosine([1, 1], [2, 2]) == pytest.approx(1.0)
    # the image moved from x to y, the caption from x to y: the same direction
    assert clip_direction([1, 0], [0, 3], [2, 0], [0, 1]) == pytest.approx(1.0)
    assert clip_direction([1, 0], [0, 3], [0, 1], [2, 0]) == pytest.approx(-1.0)
    # normalised before the difference: lengths do not matter
    assert clip_direction([5, 0], [0, 1], [1, 0], [1, 1]) == pytest.approx(
        cosine([-1, 1], [1 / np.sqrt(2) - 1, 1 / np.sqrt(2)]))


def test_preprocessing_is_the_papers_transforms():
    from transformers import CLIPImageProcessor

    img = _img(1, (97, 61))
    # OpenAI CLIP: shorter side 224 bicubic, centre crop 224, CLIP mean/std
    clip_ref = CLIPImageProcessor(size={"shortest_edge": 224}, crop_size=224)
    expected = clip_ref(images=img, return_tensors="np")["pixel_values"][0]
    assert np.allclose(clip_pixels(img), expected, atol=2e-2)
    assert np.abs(clip_pixels(img) - expected).mean() < 2e-3
    # MagicBrush's DINO: Resize(256, bicubic), CenterCrop(224), ImageNet mean/std
    dino_ref = CLIPImageProcessor(size={"shortest_edge": 256}, crop_size=224,
                                  image_mean=[0.485, 0.456, 0.406],
                                  image_std=[0.229, 0.224, 0.225])
    expected = dino_ref(images=img, return_tensors="np")["pixel_values"][0]
    # resized to 407 x 256: torchvision crops from round(183 / 2) = 92, transformers from
    # 183 // 2 = 91, so the papers' crop is transformers' shifted by one column
    assert np.abs(dino_pixels(img)[:, :, :-1] - expected[:, :, 1:]).mean() < 2e-3
    even = _img(5, (100, 64))  # even margins: the same crop either way
    expected = dino_ref(images=even, return_tensors="np")["pixel_values"][0]
    assert np.abs(dino_pixels(even) - expected).mean() < 2e-3


def test_scorers_equal_the_embeddings_computed_here(tiny, tmp_path):
    from transformers import CLIPModel, CLIPTokenizer, ViTModel

    clip_dir, dino_dir = tiny
    src, edit = _img(2), _img(3, (64, 64))
    meta = {"input_caption": "a cat", "output_caption": "a red cat"}
    sample = {"id": "x", "source": src, "edited": edit, "instruction": "make it red",
              "meta": meta}
    model = CLIPModel.from_pretrained(clip_dir).eval()
    tok = CLIPTokenizer.from_pretrained(clip_dir)

    def image(i):
        x = torch.from_numpy(clip_pixels(i)[None])
        with torch.no_grad():
            out = model.get_image_features(pixel_values=x)
        return getattr(out, "pooler_output", out)[0].numpy()

    def text(t):
        with torch.no_grad():
            out = model.get_text_features(**tok([t], return_tensors="pt"))
        return getattr(out, "pooler_output", out)[0].numpy()

    got = {m: create_scorer(m, clip_model=clip_dir).score([sample])[0] for m in
           ("clip-i", "clip-t", "clip-dir")}
    assert got["clip-i"].scores["content_preservation"] == pytest.approx(
        cosine(image(edit), image(src)), abs=1e-5)
    assert got["clip-t"].scores["instruction_alignment"] == pytest.approx(
        cosine(image(edit), text("a red cat")), abs=1e-5)
    assert got["clip-dir"].scores["instruction_alignment"] == pytest.approx(
        clip_direction(image(src), image(edit), text("a cat"), text("a red cat")), abs=1e-5)
    dino = ViTModel.from_pretrained(dino_dir).eval()
    with torch.no_grad():
        feats = [dino(pixel_values=torch.from_numpy(dino_pixels(i)[None])).last_hidden_state[0, 0]
                 .numpy() for i in (edit, src)]
    res = create_scorer("dino", dino_model=dino_dir).score([sample])[0]
    assert res.scores["content_preservation"] == pytest.approx(cosine(*feats), abs=1e-5)
    # MagicBrush compares with the ground-truth target instead of the source
    target = tmp_path / "target.png"
    _img(4).save(target)
    res = create_scorer("l1", reference="target").score(
        [{**sample, "meta": {**meta, "target_image": str(target)}}])[0]
    assert res.scores["content_preservation"] == pytest.approx(
        pixel_distance(edit, Image.open(target)))
    assert res.scores["content_preservation"] != pytest.approx(pixel_distance(edit, src))


def test_a_missing_caption_or_target_is_said_not_guessed(tiny):
    clip_dir, _ = tiny
    sample = {"id": "x", "source": _img(2), "edited": _img(3), "instruction": "make it red"}
    res = create_scorer("clip-dir", clip_model=clip_dir).score([sample])[0]
    assert not res.scores and "input_caption and output_caption" in \
        res.unavailable["instruction_alignment"]
    res = create_scorer("l2", reference="target").score([sample])[0]
    assert res.error is not None and "meta['target_image']" in res.error
    assert not create_scorer("l1").info.higher_better
