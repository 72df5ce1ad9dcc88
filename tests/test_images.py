"""Tests of ieqa.data.images: safe loading, mode conversion, guards and batch loading."""

from __future__ import annotations

import io
import os
import struct
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFile

from ieqa.data import images
from ieqa.data.images import (
    DEFAULT_MAX_PIXELS,
    LoadResult,
    image_size,
    iter_load_images,
    load_image,
    load_images,
    to_array,
)
from ieqa.errors import (
    ImageDecodeError,
    ImageLoadError,
    ImageNotFoundError,
    ImageTooLargeError,
)

RED, BLUE, WHITE, BLACK = (255, 0, 0), (0, 0, 255), (255, 255, 255), (0, 0, 0)


# --------------------------------------------------------------------------- helpers


def _noise(width: int = 64, height: int = 48, seed: int = 0) -> Image.Image:
    """Incompressible RGB noise, so that cutting a file really cuts pixel data."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


def _save(im: Image.Image, path: Path, **params: object) -> Path:
    im.save(path, **params)
    return path


def _encode(im: Image.Image, fmt: str = "PNG", **params: object) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **params)
    return buf.getvalue()


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _fake_png(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims ``width`` x ``height`` RGB but whose pixel data is missing."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", zlib.compress(b"\x00" * 16))
        + _png_chunk(b"IEND", b"")
    )


def _marked(size: tuple[int, int] = (40, 20)) -> Image.Image:
    """Blue image with a red 4x4 block in the top-left corner."""
    im = Image.new("RGB", size, BLUE)
    im.paste(RED, (0, 0, 4, 4))
    return im


def _with_orientation(orientation: int) -> Image.Exif:
    exif = Image.Exif()
    exif[274] = orientation
    return exif


def _close(a: tuple[int, ...], b: tuple[int, ...], tol: int = 1) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a, b, strict=True))


def _is_rgb(im: Image.Image, size: tuple[int, int]) -> bool:
    return im.mode == "RGB" and im.size == size


# --------------------------------------------------------------------------- files: errors


def test_missing_file_raises_not_found_naming_the_path(tmp_path):
    path = tmp_path / "nope" / "missing.png"
    with pytest.raises(ImageNotFoundError) as info:
        load_image(path)
    assert str(path) in str(info.value)
    assert info.value.path == str(path)
    assert isinstance(info.value, OSError) and isinstance(info.value, FileNotFoundError)


def test_missing_file_as_str(tmp_path):
    with pytest.raises(ImageNotFoundError):
        load_image(str(tmp_path / "missing.jpg"))


def test_text_file_named_png_is_a_decode_error(tmp_path):
    path = tmp_path / "notes.png"
    path.write_text("this is not an image\n")
    with pytest.raises(ImageDecodeError) as info:
        load_image(path)
    assert str(path) in str(info.value)
    assert "not an image" in str(info.value)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_truncated_file_is_a_decode_error(tmp_path, fmt):
    data = _encode(_noise(), fmt)
    path = tmp_path / f"cut.{fmt.lower()}"
    path.write_bytes(data[: int(len(data) * 0.6)])
    with pytest.raises(ImageDecodeError) as info:
        load_image(path)
    assert str(path) in str(info.value)
    assert "truncated" in str(info.value)


def test_intact_files_of_the_same_kind_load(tmp_path):
    for fmt in ("PNG", "JPEG"):
        path = _save(_noise(), tmp_path / f"ok.{fmt.lower()}", format=fmt)
        assert _is_rgb(load_image(path), (64, 48))


def test_zero_byte_file_is_a_decode_error(tmp_path):
    path = tmp_path / "empty.png"
    path.touch()
    with pytest.raises(ImageDecodeError, match="empty"):
        load_image(path)


def test_directory_is_a_decode_error(tmp_path):
    with pytest.raises(ImageDecodeError, match="(?i)is a directory|permission denied"):
        load_image(tmp_path)


def test_git_lfs_pointer_is_explained(tmp_path):
    path = tmp_path / "img.png"
    path.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n")
    with pytest.raises(ImageDecodeError, match="git lfs pull"):
        load_image(path)


def test_no_file_handle_left_open(tmp_path):
    fd_dir = Path("/proc/self/fd")
    if not fd_dir.is_dir():
        pytest.skip("needs /proc/self/fd")
    good = _save(_noise(), tmp_path / "good.png")
    bad = tmp_path / "bad.png"
    bad.write_bytes(_encode(_noise())[:500])
    before = len(os.listdir(fd_dir))
    for _ in range(20):
        load_image(good)
        image_size(good)
        with pytest.raises(ImageDecodeError):
            load_image(bad)
    assert len(os.listdir(fd_dir)) == before


# --------------------------------------------------------------------------- pixel limit


def test_pixel_limit(tmp_path):
    path = _save(_noise(300, 300), tmp_path / "big.png")
    with pytest.raises(ImageTooLargeError) as info:
        load_image(path, max_pixels=10_000)
    message = str(info.value)
    assert "300x300" in message and "10,000" in message and "max_pixels=None" in message
    assert load_image(path, max_pixels=None).size == (300, 300)
    assert load_image(path, max_pixels=90_000).size == (300, 300)


def test_pixel_limit_is_checked_before_decoding():
    # The pixel data is missing: decoding would fail, so the size error proves it came first.
    data = _fake_png(300, 300)
    with pytest.raises(ImageTooLargeError):
        load_image(data, max_pixels=10_000)
    with pytest.raises(ImageDecodeError):
        load_image(data, max_pixels=None)


def test_default_limit_rejects_a_huge_header_without_warning():
    side = 10_000  # 1e8 px: above DEFAULT_MAX_PIXELS and Pillow's warning threshold
    assert side * side > DEFAULT_MAX_PIXELS
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ImageTooLargeError, match="max_pixels"):
            load_image(_fake_png(side, side))
    assert not [w for w in caught if issubclass(w.category, Image.DecompressionBombWarning)]


@pytest.mark.parametrize("max_pixels", [DEFAULT_MAX_PIXELS, None])
def test_pillow_decompression_bomb_becomes_too_large(tmp_path, max_pixels):
    path = tmp_path / "bomb.png"
    path.write_bytes(_fake_png(100_000, 100_000))
    with pytest.raises(ImageTooLargeError, match="MAX_IMAGE_PIXELS"):
        load_image(path, max_pixels=max_pixels)
    with pytest.raises(ImageTooLargeError):
        image_size(path)


def test_pixel_limit_applies_to_memory_inputs():
    with pytest.raises(ImageTooLargeError):
        load_image(np.zeros((200, 200), np.uint8), max_pixels=1000)
    with pytest.raises(ImageTooLargeError):
        load_image(Image.new("RGB", (200, 200)), max_pixels=1000)


def test_pillow_globals_untouched(tmp_path):
    limit, truncated = Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES
    load_image(_save(_noise(), tmp_path / "a.png"), max_pixels=None)
    with pytest.raises(ImageTooLargeError):
        load_image(_fake_png(100_000, 100_000))
    assert (Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES) == (limit, truncated)


# --------------------------------------------------------------------------- EXIF orientation


@pytest.mark.parametrize(
    ("orientation", "size", "marker"),
    [
        (1, (40, 20), (1, 1)),
        (3, (40, 20), (38, 18)),  # rotated 180
        (6, (20, 40), (18, 1)),  # rotate 90 clockwise: top-left goes top-right
        (8, (20, 40), (1, 38)),  # rotate 90 counter-clockwise: top-left goes bottom-left
    ],
)
@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_exif_orientation_is_applied(tmp_path, orientation, size, marker, fmt):
    path = _save(_marked(), tmp_path / f"o{orientation}.{fmt.lower()}", format=fmt, exif=_with_orientation(orientation))
    out = load_image(path)
    assert _is_rgb(out, size)
    assert _close(out.getpixel(marker), RED, tol=40)
    assert _close(out.getpixel((size[0] // 2, size[1] // 2)), BLUE, tol=40)


def test_image_size_swaps_for_rotated_exif(tmp_path):
    rotated = _save(_marked(), tmp_path / "r.jpg", exif=_with_orientation(6))
    plain = _save(_marked(), tmp_path / "p.png")
    assert image_size(rotated) == (20, 40)
    assert image_size(str(plain)) == (40, 20)
    assert image_size(rotated.read_bytes()) == (20, 40)


def test_image_size_reads_only_the_header():
    assert image_size(_fake_png(9000, 7000)) == (9000, 7000)


def test_image_size_of_memory_inputs():
    assert image_size(np.zeros((5, 7, 3), np.uint8)) == (7, 5)
    assert image_size(Image.new("L", (3, 2))) == (3, 2)
    with pytest.raises(ImageDecodeError):
        image_size(np.zeros((5, 7, 2), np.uint8))
    with pytest.raises(ImageNotFoundError):
        image_size("/definitely/not/here.png")
    with pytest.raises(TypeError):
        image_size(3.5)


# --------------------------------------------------------------------------- modes


def test_palette_without_transparency(tmp_path):
    im = Image.new("P", (2, 1))
    im.putpalette([*RED, *BLUE])
    im.putpixel((1, 0), 1)
    out = load_image(_save(im, tmp_path / "p.png"))
    assert out.mode == "RGB"
    assert [out.getpixel((0, 0)), out.getpixel((1, 0))] == [RED, BLUE]


def test_palette_with_transparency(tmp_path):
    im = Image.new("P", (2, 1))
    im.putpalette([*RED, *BLUE])
    im.putpixel((1, 0), 1)
    path = _save(im, tmp_path / "pt.png", transparency=1)
    out = load_image(path)
    assert [out.getpixel((0, 0)), out.getpixel((1, 0))] == [RED, WHITE]
    assert load_image(path, background=(0, 255, 0)).getpixel((1, 0)) == (0, 255, 0)


def test_rgb_colour_key_transparency(tmp_path):
    im = Image.new("RGB", (2, 1), RED)
    im.putpixel((1, 0), BLUE)
    out = load_image(_save(im, tmp_path / "key.png", transparency=BLUE))
    assert [out.getpixel((0, 0)), out.getpixel((1, 0))] == [RED, WHITE]


def test_cmyk(tmp_path):
    im = Image.new("CMYK", (2, 2), (0, 255, 255, 0))
    for out in (load_image(im), load_image(_save(im, tmp_path / "c.tif"))):
        assert out.mode == "RGB" and out.getpixel((0, 0)) == RED


def test_16bit_grey_png(tmp_path):
    arr = np.array([[65535, 257 * 100, 0, 128, 129]], dtype=np.uint16)
    path = _save(Image.fromarray(arr), tmp_path / "g16.png")
    with Image.open(path) as raw:
        assert raw.mode in ("I;16", "I")
    out = to_array(load_image(path))
    assert out[0, :, 0].tolist() == [255, 100, 0, 0, 1]
    assert (out == out[..., :1]).all()  # grey replicated


def test_16bit_big_endian_memory_image():
    arr = np.array([[65535, 257 * 7]], dtype=">u2")
    im = Image.frombytes("I;16B", (2, 1), arr.tobytes())
    assert to_array(load_image(im))[0, :, 0].tolist() == [255, 7]


def test_32bit_integer_is_clipped_then_scaled():
    im = Image.fromarray(np.array([[70_000, -5, 257 * 3]], dtype=np.int32))
    assert im.mode == "I"
    assert to_array(load_image(im))[0, :, 1].tolist() == [255, 0, 3]


def test_float_mode_is_clipped_to_unit_range():
    im = Image.fromarray(np.array([[-0.5, 0.5, 2.0, np.nan, 0.2]], dtype=np.float32))
    assert im.mode == "F"
    assert to_array(load_image(im))[0, :, 2].tolist() == [0, 128, 255, 0, 51]


@pytest.mark.parametrize(("mode", "value", "expected"), [("L", 77, (77, 77, 77)), ("1", 1, WHITE)])
def test_grey_modes(mode, value, expected):
    assert load_image(Image.new(mode, (2, 2), value)).getpixel((1, 1)) == expected


@pytest.mark.parametrize("mode", ["YCbCr", "LAB", "HSV", "RGBX"])
def test_other_colour_spaces(mode):
    out = load_image(Image.new("RGB", (2, 2), (10, 200, 30)).convert(mode))
    assert out.mode == "RGB"
    assert _close(out.getpixel((0, 0)), (10, 200, 30), tol=10)


def test_unsupported_mode_is_a_decode_error(monkeypatch):
    monkeypatch.setattr(images, "_PIL_TO_RGB_MODES", images._PIL_TO_RGB_MODES - {"RGBX"})
    with pytest.raises(ImageDecodeError, match="unsupported image mode 'RGBX'"):
        load_image(Image.new("RGBX", (2, 2)))


def test_rgba_composited_over_white(tmp_path):
    im = Image.new("RGBA", (2, 1), (255, 0, 0, 128))
    im.putpixel((1, 0), (0, 0, 0, 0))
    out = load_image(_save(im, tmp_path / "a.png"))
    assert _close(out.getpixel((0, 0)), (255, 128, 128))
    assert out.getpixel((1, 0)) == WHITE


def test_background_override():
    im = Image.new("RGBA", (2, 1), (255, 0, 0, 128))
    im.putpixel((1, 0), (0, 0, 0, 0))
    out = load_image(im, background=BLACK)
    assert _close(out.getpixel((0, 0)), (128, 0, 0))
    assert out.getpixel((1, 0)) == BLACK


@pytest.mark.parametrize("mode", ["LA", "La", "PA", "RGBa"])
def test_other_alpha_modes_are_composited(mode):
    im = Image.new("RGBA", (1, 1), (0, 0, 0, 0)).convert(mode) if mode != "La" else Image.new("La", (1, 1))
    assert load_image(im).getpixel((0, 0)) == WHITE


def test_la_opaque_grey():
    assert load_image(Image.new("LA", (1, 1), (40, 255))).getpixel((0, 0)) == (40, 40, 40)


@pytest.mark.parametrize("background", [(0, 0), (0, 0, 256), [0, 0, 0]])
def test_bad_background(background):
    with pytest.raises(ValueError, match="background"):
        load_image(Image.new("RGB", (1, 1)), background=background)


# --------------------------------------------------------------------------- PIL images in memory


def test_memory_image_is_copied_not_mutated():
    im = Image.new("RGB", (3, 2), RED)
    out = load_image(im)
    assert out is not im
    out.putpixel((0, 0), BLUE)
    assert im.getpixel((0, 0)) == RED


def test_memory_palette_image_not_mutated():
    im = Image.new("P", (2, 1))
    im.putpalette([*RED, *BLUE])
    im.info["transparency"] = 1
    before = (im.mode, im.size, im.tobytes(), im.getpalette(), dict(im.info))
    load_image(im)
    assert (im.mode, im.size, im.tobytes(), im.getpalette(), dict(im.info)) == before


def test_memory_image_with_exif_orientation(tmp_path):
    path = _save(_marked(), tmp_path / "o.png", exif=_with_orientation(6))
    with Image.open(path) as im:
        out = load_image(im)
        assert im.size == (40, 20)  # the caller's image keeps its stored orientation
    assert out.size == (20, 40) and out.getpixel((18, 1)) == RED


def test_memory_errors_say_memory():
    with pytest.raises(ImageDecodeError) as info:
        load_image(np.zeros((2, 2, 5), np.uint8))
    assert info.value.path == "<memory>"


# --------------------------------------------------------------------------- numpy arrays


def test_uint8_rgb_array():
    arr = np.zeros((2, 3, 3), np.uint8)
    arr[1, 2] = (1, 2, 3)
    out = load_image(arr)
    assert _is_rgb(out, (3, 2)) and out.getpixel((2, 1)) == (1, 2, 3)
    arr[:] = 9  # the result shares no memory with the array
    assert out.getpixel((0, 0)) == BLACK


def test_grey_array():
    out = load_image(np.full((4, 5), 42, np.uint8))
    assert _is_rgb(out, (5, 4)) and out.getpixel((0, 0)) == (42, 42, 42)


def test_rgba_array_composited():
    arr = np.zeros((1, 2, 4), np.uint8)
    arr[0, 1] = (0, 0, 255, 255)
    out = load_image(arr)
    assert [out.getpixel((0, 0)), out.getpixel((1, 0))] == [WHITE, BLUE]


def test_uint16_array():
    arr = np.array([[65535, 257 * 100, 0]], np.uint16)
    assert to_array(load_image(arr))[0, :, 0].tolist() == [255, 100, 0]


def test_float_array_in_range():
    arr = np.array([[0.0, 0.5, 1.0]], np.float64)
    assert to_array(load_image(arr))[0, :, 0].tolist() == [0, 128, 255]
    assert load_image(arr.astype(np.float16)).size == (3, 1)


@pytest.mark.parametrize("value", [1.5, -0.1, 255.0, np.nan, np.inf])
def test_float_array_out_of_range(value):
    arr = np.array([[0.2, value]], np.float32)
    with pytest.raises(ImageDecodeError, match=r"\[0, 1\]"):
        load_image(arr)


def test_bool_array():
    assert to_array(load_image(np.array([[True, False]])))[0, :, 0].tolist() == [255, 0]


@pytest.mark.parametrize("shape", [(3, 4, 5), (4, 5, 1), (4, 5, 2), (2, 3, 4, 3), (5,), (0, 4), (0, 4, 3)])
def test_bad_array_shapes(shape):
    with pytest.raises(ImageDecodeError, match="HxWx3"):
        load_image(np.zeros(shape, np.uint8))


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint32, np.complex64, object])
def test_bad_array_dtypes(dtype):
    with pytest.raises(ImageDecodeError, match="dtype"):
        load_image(np.zeros((2, 2), dtype))


def test_caller_array_not_mutated():
    arr = np.array([[[0.25, 0.5, 1.0]]], np.float32)
    before = arr.copy()
    load_image(arr)
    np.testing.assert_array_equal(arr, before)


# --------------------------------------------------------------------------- bytes and types


def test_bytes_input():
    out = load_image(_encode(_marked()))
    assert _is_rgb(out, (40, 20)) and out.getpixel((1, 1)) == RED


def test_bad_bytes_report_bytes():
    with pytest.raises(ImageDecodeError) as info:
        load_image(b"garbage, not an image")
    assert info.value.path == "<bytes>"
    with pytest.raises(ImageDecodeError, match="empty"):
        load_image(b"")


@pytest.mark.parametrize("ref", [42, None, 1.5, ["a.png"]])
def test_bad_type_is_a_type_error(ref):
    with pytest.raises(TypeError, match="PIL.Image.Image"):
        load_image(ref)


def test_to_array():
    arr = to_array(Image.new("RGB", (3, 2), RED))
    assert arr.shape == (2, 3, 3) and arr.dtype == np.uint8 and arr.flags.writeable
    assert arr[0, 0].tolist() == list(RED)
    with pytest.raises(ValueError, match="load_image"):
        to_array(Image.new("L", (3, 2)))


# --------------------------------------------------------------------------- batches


@pytest.fixture
def mixed_refs(tmp_path):
    good = _save(_noise(seed=1), tmp_path / "good.png")
    corrupt = tmp_path / "corrupt.jpg"
    corrupt.write_bytes(_encode(_noise(seed=2), "JPEG")[:300])
    return [
        good,
        tmp_path / "missing.png",
        corrupt,
        42,
        _encode(_noise(seed=3)),
        np.full((3, 4), 7, np.uint8),
        str(good),
    ]


def _summary(results: list[LoadResult]) -> list[tuple[bool, type | None, bytes | None]]:
    return [(r.ok, type(r.error) if r.error else None, r.image.tobytes() if r.image else None) for r in results]


def test_load_images_records_errors_in_order(mixed_refs):
    results = load_images(mixed_refs, workers=3)
    assert [r.ref is ref for r, ref in zip(results, mixed_refs, strict=True)] == [True] * len(mixed_refs)
    assert [r.ok for r in results] == [True, False, False, False, True, True, True]
    kinds = [type(r.error) for r in results if not r.ok]
    assert kinds == [ImageNotFoundError, ImageDecodeError, ImageDecodeError]
    assert all(isinstance(r.error, ImageLoadError) and r.image is None for r in results if not r.ok)
    assert "int" in str(results[3].error)
    assert all(r.error is None and r.image.mode == "RGB" for r in results if r.ok)
    assert results[0].image.tobytes() == _noise(seed=1).tobytes()
    assert results[5].image.size == (4, 3)


def test_worker_counts_agree(mixed_refs):
    one = _summary(load_images(mixed_refs, workers=1))
    assert _summary(load_images(mixed_refs, workers=4)) == one
    assert _summary(list(iter_load_images(mixed_refs, workers=2))) == one
    assert _summary(load_images(iter(mixed_refs))) == one


def test_load_images_with_progress(mixed_refs, capsys):
    results = load_images(mixed_refs, workers=2, progress=True)
    assert [r.ok for r in results] == [True, False, False, False, True, True, True]
    assert capsys.readouterr().out == ""  # the bar goes to stderr


def test_load_images_passes_options(tmp_path):
    path = _save(_noise(100, 100), tmp_path / "n.png")
    transparent = Image.new("RGBA", (1, 1))
    results = load_images([path, transparent], max_pixels=50, background=BLACK)
    assert isinstance(results[0].error, ImageTooLargeError)
    assert results[1].image.getpixel((0, 0)) == BLACK


def test_iter_load_images_is_bounded():
    pulled = 0

    def refs():
        nonlocal pulled
        for _ in range(100):
            pulled += 1
            yield np.zeros((2, 2), np.uint8)

    stream = iter_load_images(refs(), workers=2)
    assert next(stream).ok
    assert pulled <= 2 * 2 + 1
    assert sum(1 for _ in stream) == 99
    stream.close()


def test_iter_load_images_rejects_bad_workers():
    with pytest.raises(ValueError, match="workers"):
        iter_load_images([], workers=0)


def test_empty_batch():
    assert load_images([]) == []
