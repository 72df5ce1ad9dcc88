"""score_to_file: streaming output, per-row errors, resuming after an interruption."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from ieqa.bench.predictions import is_predictions_file, read_predictions
from ieqa.data.schema import BBox, EditSample
from ieqa.scorers.base import Scorer, ScorerError, ScoreResult, ScorerInfo
from ieqa.scorers.run import read_scores, score_to_file

INFO = ScorerInfo("brightness", "mean grey level of the edited image", "no-reference",
                  ("visual_quality", "instruction_alignment"), higher_better=True,
                  needs_source=False, factory="tests:none", score_range=(0, 255))


class Brightness(Scorer):
    """Mean brightness of the edited image; alignment always unavailable; ``meta.fail``
    makes a sample raise."""

    info = INFO

    def __init__(self, stop_after: int | None = None) -> None:
        self.calls = 0
        self.stop_after = stop_after

    def score(self, samples):  # count batches, optionally "get killed"
        self.calls += 1
        if self.stop_after is not None and self.calls > self.stop_after:
            raise KeyboardInterrupt
        return super().score(samples)

    def score_sample(self, sample: EditSample) -> ScoreResult:
        if sample.meta.get("fail"):
            raise ValueError("asked to fail")
        assert isinstance(sample.edited, Image.Image), "the runner passes decoded images"
        value = float(np.asarray(sample.edited, dtype=float).mean())
        return ScoreResult(sample.id, scores={"visual_quality": value},
                           unavailable={"instruction_alignment": "needs a VLM"},
                           region=BBox(x=0.5, y=0.5, w=0.2, h=0.2), raw={"n": 1})


def _samples(tmp_path: Path, n: int = 11) -> list[EditSample]:
    out = []
    for i in range(n):
        p = tmp_path / "img" / f"{i}.png"
        p.parent.mkdir(exist_ok=True)
        Image.new("RGB", (8, 8), (i * 20, i * 10, 5)).save(p)
        meta = {"fail": True} if i == 4 else {}
        out.append(EditSample(id=f"s{i}", edited=p, meta=meta))
    out.append(EditSample(id="missing", edited=tmp_path / "img" / "nope.png"))
    return out


def test_rows_in_order_with_errors_recorded(tmp_path: Path) -> None:
    samples = _samples(tmp_path)
    out = tmp_path / "scores.parquet"
    summary = score_to_file(Brightness(), samples, out, input_id="x", batch_size=3, progress=False)
    assert summary.n_rows == 12 and summary.n_scored == 12 and summary.n_errors == 2
    rows = read_scores(out)
    assert [r["id"] for r in rows] == [s.id for s in samples]
    for i in range(11):
        if i == 4:
            assert rows[i]["error"] == "ValueError: asked to fail" and rows[i]["visual_quality"] is None
            continue
        expected = (i * 20 + i * 10 + 5) / 3
        assert rows[i]["visual_quality"] == pytest.approx(expected)
        assert rows[i]["instruction_alignment"] is None
        assert rows[i]["unavailable"] == {"instruction_alignment": "needs a VLM"}
        assert rows[i]["region"] == {"x": 0.5, "y": 0.5, "w": 0.2, "h": 0.2}
    assert rows[11]["error"].startswith("ImageNotFoundError") and "nope.png" in rows[11]["error"]
    assert not out.with_name("scores.parquet.parts").exists()
    meta = pq.read_schema(out).metadata
    assert b"ieqa.scorer" in meta and b"ieqa.run" in meta
    # the output is a predictions file for ieqa bench
    assert is_predictions_file(out)
    preds = read_predictions(out)  # failed rows are not predictions: a benchmark counts them missing
    assert set(preds) == {s.id for s in samples} - {"s4", "missing"}
    assert set(preds.failed) == {"s4", "missing"} and "asked to fail" in preds.failed["s4"]
    assert preds["s1"] == {"visual_quality": pytest.approx(35 / 3 * 1)}
    assert rows[0]["edited"].endswith("0.png") and rows[0]["input_key"]
    assert rows[0]["flags"] == ["blank", "tiny"]  # 8x8 grey squares


def test_interrupted_run_resumes_to_the_same_output(tmp_path: Path) -> None:
    samples = _samples(tmp_path)
    clean = tmp_path / "clean.parquet"
    score_to_file(Brightness(), samples, clean, input_id="x", batch_size=2, progress=False)

    out = tmp_path / "resumed.parquet"
    with pytest.raises(KeyboardInterrupt):
        score_to_file(Brightness(stop_after=3), samples, out, input_id="x", batch_size=2,
                      progress=False)
    parts = out.with_name("resumed.parquet.parts")
    assert len(list(parts.glob("part-*.parquet"))) == 3 and not out.exists()
    scorer = Brightness()
    summary = score_to_file(scorer, samples, out, input_id="x", batch_size=2, progress=False)
    # s4 errored in the interrupted run: it is retried with the six rows never scored
    assert summary.n_resumed == 5 and summary.n_scored == 7 and summary.n_retried == 1
    assert scorer.calls == 3  # (s4, s6), (s7, s8), (s9, s10); the missing image never loads
    assert pq.read_table(out).equals(pq.read_table(clean))
    assert not parts.exists()
    # a finished run is not redone, except its errored rows
    again = score_to_file(Brightness(), samples, out, input_id="x", progress=False)
    assert again.n_scored == 2 and again.n_resumed == 10 and again.n_rows == 12
    kept = score_to_file(Brightness(stop_after=0), samples, out, retry_errors=False, progress=False)
    assert kept.n_scored == 0 and kept.n_resumed == 12 and kept.n_errors == 2


class Darkness(Brightness):
    """The same scorer under another configuration."""

    def config(self):
        return {"invert": True}


def test_rows_are_kept_by_content_and_another_configuration_needs_overwrite(tmp_path: Path) -> None:
    samples = _samples(tmp_path)
    out = tmp_path / "s.parquet"
    with pytest.raises(KeyboardInterrupt):
        score_to_file(Brightness(stop_after=1), samples, out, batch_size=2, progress=False)
    # reordered and one row changed: the two rows done are kept wherever they are now
    changed = [*samples[::-1]]
    changed[0] = changed[0].model_copy(update={"instruction": "now with an instruction"})
    summary = score_to_file(Brightness(), changed, out, batch_size=2, progress=False)
    assert summary.n_resumed == 2 and summary.n_scored == 10
    assert [r["id"] for r in read_scores(out)] == [s.id for s in changed]
    with pytest.raises(ScorerError, match="another scorer configuration.*--overwrite"):
        score_to_file(Darkness(), samples, out, progress=False)
    summary = score_to_file(Darkness(), samples, out, overwrite=True, progress=False)
    assert summary.n_scored == 12
    (tmp_path / "foreign.parquet").write_bytes(b"not a score file")
    with pytest.raises(ScorerError, match="not an ieqa score file.*--overwrite"):
        score_to_file(Brightness(), samples, tmp_path / "foreign.parquet", progress=False)


def test_duplicate_ids_and_bad_arguments(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 3)
    with pytest.raises(ScorerError, match="twice"):
        score_to_file(Brightness(), [*samples, samples[0]], tmp_path / "d.parquet", input_id="x",
                      progress=False)
    with pytest.raises(ScorerError, match=".parquet or .jsonl"):
        score_to_file(Brightness(), samples, tmp_path / "d.csv", input_id="x", progress=False)
    with pytest.raises(ScorerError, match="batch_size"):
        score_to_file(Brightness(), samples, tmp_path / "d.parquet", input_id="x", batch_size=0)


def test_fail_fast(tmp_path: Path) -> None:
    with pytest.raises(ScorerError, match="asked to fail"):
        score_to_file(Brightness(), _samples(tmp_path), tmp_path / "f.parquet", input_id="x",
                      fail_fast=True, progress=False)


def test_jsonl_output(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 3)
    out = tmp_path / "s.jsonl"
    score_to_file(Brightness(), samples, out, input_id="x", progress=False)
    rows = read_scores(out)
    assert rows[0]["unavailable"] == {"instruction_alignment": "needs a VLM"}
    assert read_predictions(out)["s2"]["visual_quality"] == pytest.approx(np.mean([40, 20, 5]))


def test_nan_scores_are_rejected() -> None:
    with pytest.raises(ScorerError, match="unavailable"):
        ScoreResult("a", scores={"visual_quality": float("nan")})


class Served(Brightness):
    """Brightness with the configuration of a served judge: its model and how long its
    requests wait."""

    def __init__(self, model: str, timeout_s: float) -> None:
        super().__init__()
        self.model, self.timeout_s = model, timeout_s

    def config(self):
        return {"model": self.model, "backend": {"base_url": "http://127.0.0.1:9/v1",
                                                 "timeout_s": self.timeout_s,
                                                 "max_retries": 3}}


def test_resume_after_a_timeout_change_and_a_model_change_names_model(tmp_path: Path) -> None:
    """How long requests wait is not part of a run's identity: a re-run with a longer
    timeout resumes (nothing scored twice); another model is refused with one line per
    differing setting and the alternative to --overwrite."""
    samples = _samples(tmp_path)
    out = tmp_path / "s.parquet"
    score_to_file(Served("judge-a", 30), samples, out, progress=False)
    again = score_to_file(Served("judge-a", 300), samples, out, retry_errors=False,
                          progress=False)
    assert again.n_scored == 0 and again.n_resumed == len(samples)
    with pytest.raises(ScorerError) as got:
        score_to_file(Served("judge-b", 300), samples, out, progress=False)
    message = str(got.value)
    assert "1 setting differs: model: 'judge-a' -> 'judge-b'" in message
    assert "timeout_s" not in message  # the changed timeout is not named
    assert "another output with -o" in message and "--overwrite" in message


def test_a_setting_set_to_none_differs_from_one_not_set():
    from ieqa.scorers.run import _identity_changes, _same_scorer

    a = {"scorer": "s", "config": {"model": "m", "backend": {"timeout_s": 5}}, "dimensions": ["o"]}
    b = {"scorer": "s", "config": {"model": "m", "seed": None, "backend": {"timeout_s": 50}},
         "dimensions": ["o"]}
    assert _identity_changes(a, b) == ["seed: (not set) -> None"]
    assert not _same_scorer(a, b)
    assert _same_scorer(a, {**a, "config": {**a["config"], "provenance": "elsewhere"}})


def test_this_machines_names_for_a_server_are_one_host():
    """A resume that writes the judge's address as localhost instead of 127.0.0.1 (or with
    a trailing slash) is the same run; another port or host is not."""
    from ieqa.scorers.run import _identity_changes

    def state(url):
        return {"scorer": "s", "config": {"backend": {"base_url": url}}, "dimensions": ["o"]}

    base = state("http://127.0.0.1:8000/v1")
    for same in ("http://localhost:8000/v1", "http://localhost:8000/v1/", "http://[::1]:8000/v1",
                 "http://0.0.0.0:8000/v1"):
        assert _identity_changes(base, state(same)) == [], same
    for other in ("http://127.0.0.1:8001/v1", "http://judge.example:8000/v1",
                  "http://localhost.example:8000/v1", "https://127.0.0.1:8000/v1"):
        assert _identity_changes(base, state(other)), other

