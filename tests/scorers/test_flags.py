"""Degenerate-output flags (ieqa.scorers.flags) on hand-made images, on every scorer's
results, and the tuple/dict inputs of Scorer.score."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from ieqa.data.images import load_image
from ieqa.scorers import ScorerError, create_scorer
from ieqa.scorers.flags import detect_flags


def _photo(size: int = 160, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    img = np.stack([0.3 + 0.5 * x, 0.6 - 0.3 * y, 0.5 + 0.2 * np.sin(8 * x * y)], axis=2)
    img[30:70, 40:90] = (0.9, 0.2, 0.1)
    img += rng.normal(0, 0.02, img.shape)
    return Image.fromarray(np.clip(np.round(img * 255), 0, 255).astype(np.uint8))


def _jpeg(image: Image.Image, quality: int = 75) -> Image.Image:
    buf = io.BytesIO()  # 4:4:4: 4:2:0 chroma subsampling moves saturated edges by > 16 levels
    image.save(buf, "JPEG", quality=quality, subsampling=0)
    return load_image(buf.getvalue())


def test_intrinsic_flags() -> None:
    src = _photo()
    assert detect_flags(src, Image.new("RGB", (160, 160))) == ["blank"]
    near = np.full((160, 160, 3), 200, np.uint8) + np.random.default_rng(1).integers(0, 4, (160, 160, 3)).astype(np.uint8)
    assert detect_flags(None, Image.fromarray(near)) == ["blank"]
    assert "tiny" in detect_flags(src, _photo(20))
    rgba = np.zeros((160, 160, 4), np.uint8)
    rgba[..., :3] = np.asarray(src)
    rgba[:40, :, 3] = 255  # 75 % transparent
    assert "transparent" in detect_flags(src, load_image(Image.fromarray(rgba, "RGBA")))
    rgba[:100, :, 3] = 255  # 37.5 % transparent: still an image
    assert "transparent" not in detect_flags(src, load_image(Image.fromarray(rgba, "RGBA")))


def test_no_op_and_unrelated() -> None:
    src = _photo()
    assert detect_flags(src, src) == ["no_op"]
    assert detect_flags(src, _jpeg(src, quality=90)) == ["no_op"]
    edited = np.asarray(src).copy()
    edited[100:120, 100:120] = (20, 200, 20)  # a small real edit (1.6 % of the image)
    assert detect_flags(src, Image.fromarray(edited)) == []
    assert detect_flags(src, src.convert("L").convert("RGB")) == []  # a global restyle keeps structure
    noise = np.random.default_rng(3).integers(0, 256, (160, 160, 3), dtype=np.uint8)
    assert detect_flags(src, Image.fromarray(noise)) == ["unrelated"]
    assert detect_flags(None, Image.fromarray(noise)) == []  # needs the source


def test_every_scorer_result_carries_flags_and_classic_floors() -> None:
    src = _photo()
    black = Image.new("RGB", (160, 160))
    for name in ("psnr", "classic", "niqe"):
        scorer = create_scorer(name)
        result = scorer(None if name == "niqe" else src, black, "make the box green")
        assert "blank" in result.flags, name
    classic = create_scorer("classic")
    floored = classic(src, black, "make the box green")
    assert floored.scores == {"visual_quality": 1.0, "content_preservation": 1.0}
    assert floored.raw["floored"] == ["blank"]
    same = classic(src, src, "make the box green")
    assert same.flags == ["no_op"] and same.scores["content_preservation"] == 5.0


def test_score_takes_tuples_and_dicts() -> None:
    src, edt = _photo(), _photo(seed=1)
    results = create_scorer("psnr").score([(src, edt, "x"), (src, edt), {"source": src, "edited": edt},
                                           {"id": "mine", "source": src, "edited": edt}])
    assert [r.id for r in results] == ["0", "1", "2", "mine"]
    assert len({round(r.scores["content_preservation"], 9) for r in results}) == 1
    with pytest.raises(ScorerError, match="item 0"):
        create_scorer("psnr").score([(src,)])


def test_the_median_and_channel_max_equal_scipys_and_numpys():
    """``no_op``'s 3x3 median (a sorting network) and largest channel difference give
    exactly what ``scipy.ndimage.median_filter(a, 3)`` and ``a.max(axis=-1)`` give: ties,
    reflected borders, one-pixel and thin arrays."""
    from scipy import ndimage as ndi

    from ieqa.data.images import channel_max
    from ieqa.scorers.flags import _median3

    rng = np.random.default_rng(3)
    for shape in [(1, 1), (1, 5), (2, 2), (3, 7), (17, 3), (128, 128)]:
        for a in (rng.integers(0, 4, shape).astype(np.float64), rng.normal(size=shape),
                  rng.uniform(0, 255, shape)):
            assert np.array_equal(_median3(a), ndi.median_filter(a, 3)), shape
    b = rng.integers(0, 3, (64, 48, 3)).astype(np.float64)
    assert np.array_equal(channel_max(b), b.max(axis=-1))
    # any channel count, float32, a NaN (it wins in both), and the input left as it was
    for c in (1, 2, 4):
        f = rng.normal(size=(5, 7, c)).astype(np.float32)
        f[2, 3, c - 1] = np.nan
        kept = f.copy()
        assert np.array_equal(channel_max(f), f.max(axis=-1), equal_nan=True), c
        assert np.array_equal(f, kept, equal_nan=True)
