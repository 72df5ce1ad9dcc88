"""Tests of ieqa.data.manifest: JSONL/Parquet round trips, images, errors, streaming memory.

This file doubles as the worker script of the streaming test
(``python tests/test_manifest.py write|read PATH N``), so that writing and reading run in
fresh processes whose memory can be measured.
"""

from __future__ import annotations

import gc
import hashlib
import io
import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from ieqa.data.manifest import (
    SAMPLE_SCHEMA,
    ImageStore,
    ManifestWriter,
    iter_manifest,
    read_manifest,
    read_preferences,
    sample_to_row,
    write_manifest,
    write_preferences,
)
from ieqa.data.schema import BBox, EditSample, InstructionKind, Preference, Rating
from ieqa.errors import ManifestError

FORMATS = ["jsonl", "parquet"]


def _raw_rows(path: Path) -> list[dict]:
    """The rows exactly as stored on disk (no ieqa code involved)."""
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _full_sample(sub: Path) -> EditSample:
    return EditSample(
        id="full-1",
        source=sub / "images" / "src.png",
        edited=sub / "images" / "x.png",
        instruction="a red sky over a lake",
        instruction_kind=InstructionKind.DESCRIPTION,
        task="recolor",
        editor="sim-editor",
        group_id="g1",
        bbox=BBox(x=0.5, y=0.25, w=0.1, h=1 / 3),
        mask=sub / "images" / "mask.png",
        scores={"SC": 0.1 + 0.2, "visual_quality": 1 / 3, "content_preservation": 1e-300},
        ratings=[
            Rating(rater="r1", dimension="PQ", value=4.5),
            Rating(rater="r2", dimension="semantic consistency", value=2 / 3),
        ],
        meta={"nested": {"list": [1, 2.5, "x", None, {"deep": True}]}, "note": "héllo"},
    )


def _samples(tmp_path: Path) -> list[EditSample]:
    sub = tmp_path / "sub"
    return [
        _full_sample(sub),
        EditSample(id="minimal", edited=sub / "images" / "y.png"),  # every optional field None
        EditSample(id="outside", source=tmp_path / "elsewhere" / "o.png", edited=sub / "images" / "x.png"),
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_every_field(tmp_path: Path, fmt: str) -> None:
    samples = _samples(tmp_path)
    path = tmp_path / "sub" / f"m.{fmt}"
    assert write_manifest(samples, path) == path

    raw = _raw_rows(path)
    assert [r["edited"] for r in raw] == ["images/x.png", "images/y.png", "images/x.png"]
    assert raw[0]["source"] == "images/src.png" and raw[0]["mask"] == "images/mask.png"
    assert raw[2]["source"] == str(tmp_path / "elsewhere" / "o.png")  # outside: absolute
    assert raw[0]["instruction_kind"] == "description"
    if fmt == "parquet":
        assert json.loads(raw[0]["meta_json"]) == samples[0].meta
        assert raw[1]["meta_json"] is None
        assert dict(raw[0]["scores"])["instruction_alignment"] == 0.1 + 0.2
    else:
        assert raw[0]["scores"]["instruction_alignment"] == 0.1 + 0.2  # alias "SC" canonicalised
        assert raw[1]["scores"] == {} and raw[1]["bbox"] is None

    back = read_manifest(path)
    assert [s.model_dump() for s in back] == [s.model_dump() for s in samples]
    assert back[0].scores["instruction_alignment"] == 0.30000000000000004  # exact float
    assert back[0].bbox.h == 1 / 3 and back[0].ratings[1].value == 2 / 3
    assert back[0].ratings[0].dimension == "visual_quality"


@pytest.mark.parametrize("fmt", FORMATS)
def test_moved_folder_still_resolves_images(tmp_path: Path, fmt: str) -> None:
    sub = tmp_path / "sub"
    (sub / "images").mkdir(parents=True)
    for name in ("src.png", "x.png", "mask.png"):
        Image.new("RGB", (4, 4), "red").save(sub / "images" / name)
    write_manifest([_full_sample(sub)], sub / f"m.{fmt}")

    moved = tmp_path / "moved" / "dataset"
    shutil.move(str(sub), str(moved))
    (s,) = read_manifest(moved / f"m.{fmt}")
    assert s.image_paths() == {
        "source": moved / "images" / "src.png",
        "edited": moved / "images" / "x.png",
        "mask": moved / "images" / "mask.png",
    }
    assert all(p.is_file() for p in s.image_paths().values())


@pytest.mark.parametrize("fmt", FORMATS)
def test_in_memory_images_are_saved_once_and_reload_identically(tmp_path: Path, fmt: str) -> None:
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)
    pil = Image.fromarray(rng.integers(0, 256, (7, 4, 4), dtype=np.uint8), "RGBA")
    mask = rng.random((6, 5)) > 0.5
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="JPEG")
    jpeg = buf.getvalue()
    samples = [
        EditSample(id="a", source=arr, edited=pil, mask=mask),
        EditSample(id="b", source=arr.copy(), edited=arr.copy()),  # same content: stored once
        EditSample(id="c", edited=jpeg),
    ]
    path = tmp_path / "sub" / f"m.{fmt}"
    write_manifest(samples, path)

    image_dir = tmp_path / "sub" / "m_images"  # default: <stem>_images next to the manifest
    files = sorted(p.name for p in image_dir.iterdir())
    assert len(files) == 4, files  # arr, pil, mask, jpeg
    for p in image_dir.iterdir():  # named by the sha1 of the stored bytes
        assert p.stem == hashlib.sha1(p.read_bytes()).hexdigest()
    raw = _raw_rows(path)
    assert raw[0]["source"] == raw[1]["source"] == raw[1]["edited"]
    assert raw[0]["source"].startswith("m_images/") and raw[0]["source"].endswith(".png")
    assert raw[2]["edited"].endswith(".jpg")

    a, _, c = read_manifest(path)
    assert np.array_equal(np.asarray(Image.open(a.source)), arr)
    assert np.array_equal(np.asarray(Image.open(a.edited)), np.asarray(pil))
    assert np.array_equal(np.asarray(Image.open(a.mask)), mask)
    assert c.edited.read_bytes() == jpeg


def test_explicit_image_dir_and_unstorable_images(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "m.jsonl"
    arr = np.zeros((3, 3), dtype=np.uint8)
    write_manifest([EditSample(id="a", edited=arr)], path, image_dir=tmp_path / "sub" / "images")
    assert _raw_rows(path)[0]["edited"].startswith("images/")

    with pytest.raises(ManifestError, match="uint8"):
        write_manifest([EditSample(id="f", edited=np.zeros((3, 3), np.float32))], path)
    with pytest.raises(ManifestError, match="not an image"):
        write_manifest([EditSample(id="b", edited=b"not an image")], path)
    with pytest.raises(ManifestError, match="in-memory image"):
        sample_to_row(EditSample(id="m", edited=arr), tmp_path)
    assert ImageStore(tmp_path / "x")(arr).parent == tmp_path / "x"


def test_parquet_row_groups_with_empty_then_filled_fields(tmp_path: Path) -> None:
    base = tmp_path / "imgs"
    samples = [EditSample(id="empty", edited=base / "0.png")]  # empty scores/ratings/meta
    samples += [
        EditSample(
            id=f"s{i}", edited=base / f"{i}.png", bbox=BBox(x=0.5, y=0.5, w=0.2, h=0.2),
            scores={"overall": i / 7}, ratings=[Rating(rater=f"r{i}", dimension="O", value=i)],
            meta={"i": i, "tags": ["x"] * i},
        )
        for i in range(1, 5)
    ]
    samples.append(EditSample(id="empty-again", edited=base / "5.png"))
    path = tmp_path / "m.parquet"
    with ManifestWriter(path, row_group_size=2) as w:
        assert w.write_many(samples) == 6

    pf = pq.ParquetFile(path)
    assert pf.metadata.num_row_groups == 3
    assert pf.schema_arrow.equals(SAMPLE_SCHEMA)
    for batch_size in (1, 4096):
        back = read_manifest(path, batch_size=batch_size)
        assert [s.model_dump() for s in back] == [s.model_dump() for s in samples]


@pytest.mark.parametrize("name", ["m.jsonl", "m.parquet", "m.jsonl.gz"])
def test_empty_manifest_and_gzip(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    write_manifest([], path)
    assert read_manifest(path) == []
    s = EditSample(id="x", edited=tmp_path / "x.png", scores={"PQ": 0.25})
    write_manifest([s], path)
    assert [b.model_dump() for b in read_manifest(path)] == [s.model_dump()]


_BAD_JSONL = "\n".join([
    '{"id": "ok1", "edited": "a.png"}',
    "",
    '{"id": "broken", "edited": ',                                   # line 3: not JSON
    '{"id": "no-edited"}',                                           # line 4: missing edited
    '{"id": "ok2", "edited": "b.png", "scores": {"SC": 1}}',
    '{"id": "bad-box", "edited": "c.png", "bbox": {"x": 2, "y": 0, "w": 0, "h": 0}}',  # 6
    '{"id": "typo", "edited": "d.png", "score": {}}',                # line 7: unknown field
    '{"id": "dim", "edited": "e.png", "scores": {"nonsense": 1}}',   # line 8: unknown dimension
    "[1, 2]",                                                        # line 9: not an object
])


def test_malformed_jsonl_rows(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(_BAD_JSONL + "\n", encoding="utf-8")
    with pytest.raises(ManifestError, match=r"bad\.jsonl, line 3: not valid JSON.*strict=False"):
        read_manifest(path)

    with caplog.at_level(logging.WARNING, logger="ieqa"):
        ok = read_manifest(path, strict=False)
    assert [s.id for s in ok] == ["ok1", "ok2"]
    assert ok[0].edited == tmp_path / "a.png"
    assert ok[1].scores == {"instruction_alignment": 1.0}
    messages = [r.getMessage() for r in caplog.records]
    expected = {3: "not valid JSON", 4: "['edited'] missing", 6: "bbox.x", 7: "unknown field",
                8: "unknown dimension", 9: "must be an object"}
    assert len(messages) == len(expected)
    for (line, text), message in zip(expected.items(), messages, strict=True):
        assert f"line {line}:" in message and text in message, message


@pytest.mark.parametrize("line", [4, 6, 7, 8])
def test_each_kind_of_bad_row_raises_with_its_line(tmp_path: Path, line: int) -> None:
    rows = _BAD_JSONL.split("\n")
    path = tmp_path / "one.jsonl"
    path.write_text(rows[0] + "\n" + "\n" * (line - 2) + rows[line - 1] + "\n", encoding="utf-8")
    with pytest.raises(ManifestError, match=f"one.jsonl, line {line}: "):
        read_manifest(path)


def test_malformed_parquet_row_names_row_number(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist([  # a foreign file: other column types, fewer columns
        {"id": "ok", "edited": "a.png", "scores": {"SC": 0.5}, "bbox": None},
        {"id": "bad", "edited": "b.png", "scores": {"SC": 0.5}, "bbox": {"x": 3.0, "y": 0.0, "w": 0.0, "h": 0.0}},
    ]), path)
    with pytest.raises(ManifestError, match=r"bad\.parquet, row 2: bbox\.x"):
        read_manifest(path)
    (only,) = read_manifest(path, strict=False)
    assert only.scores == {"instruction_alignment": 0.5} and only.edited == tmp_path / "a.png"

    (tmp_path / "notparquet.parquet").write_text("hello")
    with pytest.raises(ManifestError, match="cannot read as Parquet"):
        read_manifest(tmp_path / "notparquet.parquet")


def test_format_selection(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"\.jsonl, \.jsonl\.gz, \.parquet, \.csv"):
        iter_manifest(tmp_path / "m.tsv")
    with pytest.raises(ManifestError, match="reads CSV manifests but writes JSONL or Parquet"):
        ManifestWriter(tmp_path / "m.csv")
    with pytest.raises(ManifestError, match="format must be"):
        ManifestWriter(tmp_path / "m.jsonl", format="xml")
    assert not list(tmp_path.iterdir())  # nothing created by the failed writers
    with pytest.raises(FileNotFoundError):
        iter_manifest(tmp_path / "missing.jsonl")

    s = EditSample(id="x", edited=tmp_path / "x.png")
    write_manifest([s], tmp_path / "data.txt", format="parquet")
    assert pq.read_table(tmp_path / "data.txt").num_rows == 1
    assert read_manifest(tmp_path / "data.txt", format="parquet")[0].model_dump() == s.model_dump()


@pytest.mark.parametrize("fmt", FORMATS)
def test_exception_inside_writer_leaves_no_file(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"m.{fmt}"
    s = EditSample(id="x", edited=tmp_path / "x.png")
    with pytest.raises(RuntimeError, match="boom"):
        with ManifestWriter(path, row_group_size=1) as w:
            w.write(s)
            w.write(s)
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []  # neither the manifest nor a temporary file

    write_manifest([s], path)  # an existing manifest survives a failed rewrite
    before = path.read_bytes()
    with pytest.raises(RuntimeError):
        with ManifestWriter(path) as w:
            w.write(EditSample(id="y", edited=tmp_path / "y.png"))
            raise RuntimeError("boom")
    assert path.read_bytes() == before and len(list(tmp_path.iterdir())) == 1

    w = ManifestWriter(path)
    w.close()
    with pytest.raises(ManifestError, match="closed"):
        w.write(s)


def test_meta_that_is_not_json_is_rejected(tmp_path: Path) -> None:
    s = EditSample(id="x", edited=tmp_path / "x.png", meta={"obj": object()})
    for fmt in FORMATS:
        with pytest.raises(ManifestError, match="sample 'x': meta is not JSON-serialisable"):
            write_manifest([s], tmp_path / f"m.{fmt}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_preferences_round_trip(tmp_path: Path, fmt: str) -> None:
    sub = tmp_path / "sub"
    full = _full_sample(sub)
    other = EditSample(id="other", source=full.source, edited=sub / "images" / "z.png")
    prefs = [
        Preference(a=full, b=other, label="a", dimension="SC", rater="ann", meta={"t": [1, 2]}),
        Preference(a=other, b=full, label="tie"),
    ]
    path = sub / f"p.{fmt}"
    write_preferences(prefs, path)
    raw = _raw_rows(path)
    assert raw[0]["a"]["edited"] == "images/x.png" and raw[0]["label"] == "a>b"
    back = read_preferences(path)
    assert [p.model_dump() for p in back] == [p.model_dump() for p in prefs]
    assert back[0].dimension == "instruction_alignment"


# --------------------------------------------------------------------------- streaming rows

#: rows of the streaming test: enough that a list of them would take about 4x the growth
#: bound (1M took two minutes of both cores in CI, 500k about 45 s; the bound does not
#: depend on the count)
STREAM_ROWS = 250_000
MAX_GROWTH_MIB = 150


def _checksum(sample: EditSample, crc: int) -> int:
    key = f"{sample.id}|{sample.scores['visual_quality']!r}|{sample.scores['instruction_alignment']!r}"
    return zlib.crc32(key.encode(), crc)


def _write_big(path: Path, n: int) -> dict:
    """Write ``n`` rows through ManifestWriter; returns the checksum of what was written.

    Samples are clones of one validated template (``model_copy``, no re-validation) so
    that generating them stays cheap; every row still goes through ``ManifestWriter`` and
    ``sample_to_row``, the one row code path.
    """
    root = path.parent
    template = EditSample(id="t", edited=root / "ed" / "t.png", instruction="make the sky red",
                          task="recolor", editor="sim")
    sources = [root / "src" / f"{k}.png" for k in range(100)]
    crc = 0
    with ManifestWriter(path) as writer:
        for i in range(n):
            sample = template.model_copy(update={
                "id": f"s{i:07d}", "source": sources[i % 100], "edited": root / "ed" / f"{i}.png",
                "scores": {"visual_quality": i / n, "instruction_alignment": (i % 7) / 7,
                           "content_preservation": 0.5},
            })
            writer.write(sample)
            crc = _checksum(sample, crc)
    return {"count": n, "crc": crc, "bytes": path.stat().st_size}


def _memory_kib() -> dict[str, int]:
    """Current (VmRSS) and peak (VmHWM) resident memory of this process, in KiB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return {k: int(fields[k].split()[0]) for k in ("VmRSS", "VmHWM")}


def _read_big(path: Path, n_materialise: int = 20_000) -> dict:
    """Stream the manifest, measuring peak RSS growth; then estimate a full list's size."""
    import resource

    gc.collect()
    try:  # reset VmHWM to the current RSS so the peak measured is the iteration's own
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # without the reset the growth is over-estimated, never hidden
    before = _memory_kib()
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    count, crc, last = 0, 0, None
    for sample in iter_manifest(path):
        count += 1
        crc = _checksum(sample, crc)
        last = sample
    seconds = time.perf_counter() - t0
    after = _memory_kib()
    maxrss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    gc.collect()
    rss0 = _memory_kib()["VmRSS"]
    head = list(itertools.islice(iter_manifest(path), n_materialise))
    per_sample = (_memory_kib()["VmRSS"] - rss0) * 1024 / len(head)
    return {
        "count": count, "crc": crc, "read_s": round(seconds, 1),
        "rss_before_mib": before["VmRSS"] / 1024, "peak_mib": after["VmHWM"] / 1024,
        "growth_mib": (after["VmHWM"] - before["VmRSS"]) / 1024,
        "ru_maxrss_before_mib": maxrss_before / 1024, "ru_maxrss_after_mib": maxrss_after / 1024,
        "full_list_estimate_mib": per_sample * count / 2**20,
        "last_edited": str(last.edited) if last else None,
        "last_source": str(last.source) if last else None,
    }


def _run_worker(*args: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _write_then_read(path: Path, n: int) -> tuple[dict, dict, float]:
    t0 = time.perf_counter()
    written = _run_worker("write", str(path), str(n))
    write_s = time.perf_counter() - t0
    return written, _run_worker("read", str(path), str(n)), write_s


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="measures memory via /proc")
def test_streaming_a_quarter_million_rows_in_bounded_memory(tmp_path: Path) -> None:
    """Iterating 250k rows must not grow the reader's memory by more than ~150 MiB, where
    a list of them would take over 500 MiB (2-2.8 GiB for 1M rows).

    Memory is read from /proc/self/status (VmRSS, VmHWM) in a fresh reader process:
    ``ru_maxrss`` is printed too but not asserted on, because Linux carries the parent's
    peak RSS over into a child's ``ru_maxrss`` across fork+exec, which would hide growth.
    The two formats run as two parallel write->read pipelines (one per core).

    Measured on the 2-core dev machine (other jobs running), 1M rows, ~43 s for the test:
      JSONL   (315 MiB): write 22 s, read 20 s; peak RSS growth  3 MiB (89 -> 91 MiB)
      Parquet  (25 MiB): write 20 s, read 21 s; peak RSS growth 46 MiB (89 -> 135 MiB;
                         about one decoded row group, flat after the first few groups)
      a list of all 1M samples would take ~2.0-2.8 GiB (extrapolated from 20k samples).
    Materialising instead of streaming (``iter(list(...))``) measured 2434 MiB growth.
    At 250k rows (2026-11-30, two spread runs of recipe_spread.py on the other core):
    JSONL 79 MiB, growth 2.8 MiB; Parquet 6 MiB, growth 52.6 MiB; a full list ~640-700
    MiB; the test ~19 s.
    """
    paths = [tmp_path / "jsonl" / "big.jsonl", tmp_path / "parquet" / "big.parquet"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda p: _write_then_read(p, STREAM_ROWS), paths))
    for path, (written, read, write_s) in zip(paths, results, strict=True):
        print(f"\n{path.name}: wrote {STREAM_ROWS} rows ({written['bytes'] / 2**20:.0f} MiB) "
              f"in {write_s:.1f} s; read in {read['read_s']} s; RSS before "
              f"{read['rss_before_mib']:.0f} MiB, peak {read['peak_mib']:.0f} MiB, growth "
              f"{read['growth_mib']:.1f} MiB (ru_maxrss {read['ru_maxrss_before_mib']:.0f} -> "
              f"{read['ru_maxrss_after_mib']:.0f} MiB); a full list would take "
              f"~{read['full_list_estimate_mib']:.0f} MiB")
        assert read["count"] == written["count"] == STREAM_ROWS
        assert read["crc"] == written["crc"]
        assert read["last_edited"] == str(path.parent / "ed" / f"{STREAM_ROWS - 1}.png")
        assert read["last_source"] == str(path.parent / "src" / "99.png")
        assert read["growth_mib"] < MAX_GROWTH_MIB
        # a list of the rows would break the bound: 0.5-0.7 GiB at 250k rows
        assert read["full_list_estimate_mib"] > 3 * MAX_GROWTH_MIB
        path.unlink()  # ~80 MiB of JSONL; do not leave it to pytest's tmp retention


if __name__ == "__main__":  # worker of the streaming test: write|read PATH N
    mode, target, rows = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    result = _write_big(target, rows) if mode == "write" else _read_big(target)
    print(json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # skip freeing a million objects at exit
