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


def _l1_l2(edited, reference, resample=Image.Resampling.BICUBIC):
    """MagicBrush's L1 and L2 written out: the edit resized to the reference's size, both
    RGB in [0, 1], the mean absolute and the mean squared difference."""
    e = edited.convert("RGB")
    if e.size != reference.size:
        e = e.resize(reference.size, resample)
    d = np.asarray(e, np.float64) / 255.0 - np.asarray(reference.convert("RGB"), np.float64) / 255.0
    return float(np.abs(d).mean()), float((d * d).mean())


def _cos(a, b):
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


def _direction(src, edit, text_in, text_out):
    """InstructPix2Pix's directional similarity written out: each embedding L2-normalised,
    then the cosine of the image change and the caption change."""
    def unit(v):
        v = np.ravel(v).astype(np.float64)
        return v / np.sqrt(v @ v)

    return _cos(unit(edit) - unit(src), unit(text_out) - unit(text_in))


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


def test_pixel_distances_of_textured_images_of_other_sizes():
    """A textured edit of another size than a textured reference: the edit is resized to
    the reference with Pillow's bicubic (nearest, or resizing the reference instead, give
    other numbers here), and the reference is scaled by 255 too (it is not black)."""
    edit, ref = _img(7, (23, 17)), _img(8, (12, 9))
    l1, l2 = _l1_l2(edit, ref)
    assert pixel_distance(edit, ref, "l1") == pytest.approx(l1, rel=1e-5)
    assert pixel_distance(edit, ref, "l2") == pytest.approx(l2, rel=1e-5)
    # the numbers above tell the resampling filter and the direction of the resize apart
    nearest = _l1_l2(edit, ref, Image.Resampling.NEAREST)
    other_way = _l1_l2(edit.resize((12, 9)).resize((23, 17)), ref.resize((23, 17)))
    for wrong in (nearest, other_way):
        assert abs(wrong[0] - l1) > 1e-3 and abs(wrong[1] - l2) > 1e-3
    # a two-pixel case by hand: |0.6 - 0.2| and |0.2 - 0.6| on every channel
    a = Image.fromarray(np.array([[[153] * 3, [51] * 3]], np.uint8))
    b = Image.fromarray(np.array([[[51] * 3, [153] * 3]], np.uint8))
    assert pixel_distance(a, b, "l1") == pytest.approx(0.4)
    assert pixel_distance(a, b, "l2") == pytest.approx(0.16)


def test_cosine_and_direction_by_hand():
    assert cosine([1, 0], [0, 2]) == 0.0 and cosine([1, 1], [2, 2]) == pytest.approx(1.0)
    # the image moved from x to y, the caption from x to y: the same direction
    assert clip_direction([1, 0], [0, 3], [2, 0], [0, 1]) == pytest.approx(1.0)
    assert clip_direction([1, 0], [0, 3], [0, 1], [2, 0]) == pytest.approx(-1.0)
    # normalised before the difference: lengths do not matter
    assert clip_direction([5, 0], [0, 1], [1, 0], [1, 1]) == pytest.approx(
        cosine([-1, 1], [1 / np.sqrt(2) - 1, 1 / np.sqrt(2)]))
    # an edit identical to its source has no direction: NaN, quietly (the scorers report it
    # as an error naming the sample), not numpy's "invalid value" warning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(cosine([0, 0], [1, 2]))
        assert np.isnan(clip_direction([1, 2], [1, 2], [1, 0], [0, 1]))


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
        _cos(image(edit), image(src)), abs=1e-5)
    assert got["clip-t"].scores["instruction_alignment"] == pytest.approx(
        _cos(image(edit), text("a red cat")), abs=1e-5)
    assert got["clip-dir"].scores["instruction_alignment"] == pytest.approx(
        _direction(image(src), image(edit), text("a cat"), text("a red cat")), abs=1e-5)
    dino = ViTModel.from_pretrained(dino_dir).eval()
    with torch.no_grad():
        feats = [dino(pixel_values=torch.from_numpy(dino_pixels(i)[None])).last_hidden_state[0, 0]
                 .numpy() for i in (edit, src)]
    res = create_scorer("dino", dino_model=dino_dir).score([sample])[0]
    assert res.scores["content_preservation"] == pytest.approx(_cos(*feats), abs=1e-5)
    # MagicBrush compares with the ground-truth target instead of the source
    target = tmp_path / "target.png"
    _img(4).save(target)
    res = create_scorer("l1", reference="target").score(
        [{**sample, "meta": {**meta, "target_image": str(target)}}])[0]
    assert res.scores["content_preservation"] == pytest.approx(
        _l1_l2(edit, _img(4))[0], rel=1e-5)
    assert res.scores["content_preservation"] != pytest.approx(_l1_l2(edit, src)[0], rel=1e-3)


def test_edit_metrics_in_one_pass_compare_with_the_target(tiny, tmp_path):
    """``edit-metrics`` with ``reference=target`` (MagicBrush): L1, L2, CLIP-I and DINO
    against the ground-truth target, a textured image of another size than the edit and
    other than the source; CLIP-T against the output caption; CLIP-dir from source to edit.
    Each is computed here from the tiny models' embeddings."""
    from transformers import CLIPModel, CLIPTokenizer, ViTModel

    clip_dir, dino_dir = tiny
    src, edit, target = _img(12), _img(13, (64, 64)), _img(14, (72, 50))
    target.save(tmp_path / "target.png")
    meta = {"input_caption": "a cat on a mat", "output_caption": "a dog on a mat",
            "target_image": str(tmp_path / "target.png")}
    sample = {"id": "t", "source": src, "edited": edit, "instruction": "make it a dog",
              "meta": meta}
    res = create_scorer("edit-metrics", reference="target", clip_model=clip_dir,
                        dino_model=dino_dir).score([sample])[0]
    assert res.error is None, res.error
    got = res.raw["metrics"]
    clip = CLIPModel.from_pretrained(clip_dir).eval()
    tok = CLIPTokenizer.from_pretrained(clip_dir)
    dino = ViTModel.from_pretrained(dino_dir).eval()
    with torch.no_grad():
        img = {k: clip.get_image_features(pixel_values=torch.from_numpy(clip_pixels(i)[None]))
               for k, i in (("src", src), ("edit", edit), ("target", target))}
        img = {k: getattr(v, "pooler_output", v)[0].numpy() for k, v in img.items()}
        txt = {t: clip.get_text_features(**tok([t], return_tensors="pt"))
               for t in (meta["input_caption"], meta["output_caption"])}
        txt = {k: getattr(v, "pooler_output", v)[0].numpy() for k, v in txt.items()}
        dfe = {k: dino(pixel_values=torch.from_numpy(dino_pixels(i)[None]))
               .last_hidden_state[0, 0].numpy() for k, i in (("src", src), ("edit", edit),
                                                             ("target", target))}
    l1, l2 = _l1_l2(edit, target)
    want = {"l1": l1, "l2": l2, "clip-i": _cos(img["edit"], img["target"]),
            "dino": _cos(dfe["edit"], dfe["target"]),
            "clip-t": _cos(img["edit"], txt["a dog on a mat"]),
            "clip-dir": _direction(img["src"], img["edit"], txt["a cat on a mat"],
                                   txt["a dog on a mat"])}
    assert got == pytest.approx(want, rel=1e-4, abs=1e-5)
    assert res.scores == pytest.approx({"content_preservation": want["clip-i"],
                                        "instruction_alignment": want["clip-dir"]},
                                       rel=1e-4, abs=1e-5)
    # what a wrong reference, caption or direction would give differs from the above
    wrong = {"l1": _l1_l2(edit, src)[0], "clip-i": _cos(img["edit"], img["src"]),
             "dino": _cos(dfe["edit"], dfe["src"]),
             "clip-t": _cos(img["edit"], txt["a cat on a mat"]),
             "clip-dir": -want["clip-dir"]}
    for key, value in wrong.items():
        assert abs(value - want[key]) > 1e-4, key


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_an_undefined_metric_fails_the_sample(tiny):
    """An edit identical to its source has no direction: CLIP-dir is NaN, which fails the
    sample (``edit-metrics`` and ``clip-dir`` alike) instead of being reported."""
    clip_dir, _ = tiny
    same = _img(2)
    sample = {"id": "same", "source": same, "edited": same.copy(), "instruction": "keep it",
              "meta": {"input_caption": "a cat", "output_caption": "a red cat"}}
    res = create_scorer("edit-metrics", metrics="clip-i,clip-dir",
                        clip_model=clip_dir).score([sample])[0]
    assert res.error is not None and "clip-dir" in res.error and "NaN" in res.error
    assert not res.scores
    res = create_scorer("clip-dir", clip_model=clip_dir).score([sample])[0]
    assert res.error is not None and "NaN" in res.error


def test_a_missing_caption_or_target_is_said_not_guessed(tiny):
    clip_dir, _ = tiny
    sample = {"id": "x", "source": _img(2), "edited": _img(3), "instruction": "make it red"}
    res = create_scorer("clip-dir", clip_model=clip_dir).score([sample])[0]
    assert not res.scores and "input_caption and output_caption" in \
        res.unavailable["instruction_alignment"]
    res = create_scorer("l2", reference="target").score([sample])[0]
    assert res.error is not None and "meta['target_image']" in res.error
    assert not create_scorer("l1").info.higher_better
