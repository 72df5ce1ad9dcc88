from __future__ import annotations

import gzip
import json

import pytest

from ieqa.bench import PredictionsError, is_predictions_file, read_predictions


def _jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_jsonl_canonicalises_and_skips_nulls(tmp_path):
    p = _jsonl(tmp_path / "p.jsonl", [
        {"id": "a", "SC": 3.5, "PQ": 4, "editor": "x", "explanation": "fine"},
        "",
        {"id": 7, "scores": {"overall": 2.0}, "content_preservation": None},
    ])
    assert read_predictions(p) == {
        "a": {"instruction_alignment": 3.5, "visual_quality": 4.0},
        "7": {"overall": 2.0},
    }


def test_csv_and_gzip(tmp_path):
    p = tmp_path / "p.csv"
    p.write_text("id,visual quality,overall\nx,1.5,2\ny,,3\n")
    assert read_predictions(p) == {"x": {"visual_quality": 1.5, "overall": 2.0}, "y": {"overall": 3.0}}
    g = tmp_path / "p.jsonl.gz"
    with gzip.open(g, "wt") as fh:
        fh.write(json.dumps({"id": "z", "overall": 1}) + "\n")
    assert read_predictions(g) == {"z": {"overall": 1.0}}


@pytest.mark.parametrize("rows, message", [
    ([{"id": "a", "overall": 1}, {"overall": 2}], r"line 2: missing 'id'"),
    ([{"id": "a", "overall": 1}, {"id": "a", "overall": 2}], r"line 2: duplicate id 'a'"),
    ([{"id": "a", "sharpness": 1}], r"line 1: unknown dimension 'sharpness'"),
    ([{"id": "a", "overall": "high"}], r"line 1: overall='high' is not a number"),
    ([{"id": "a", "overall": True}], r"line 1: overall=True is not a number"),
    ([{"id": "a", "SC": 1, "instruction_alignment": 2}], r"line 1: dimension 'instruction_alignment' given twice"),
    (["{not json"], r"line 1: not valid JSON"),
    (["[1, 2]"], r"line 1: expected a JSON object"),
    ([], r"no predictions"),
])
def test_jsonl_errors_name_the_row(tmp_path, rows, message):
    p = _jsonl(tmp_path / "p.jsonl", rows)
    with pytest.raises(PredictionsError, match=message) as info:
        read_predictions(p)
    assert "p.jsonl" in str(info.value)


@pytest.mark.parametrize("text, message", [
    ("key,overall\na,1\n", "'id' column"),
    ("id,overall\na,1\nb,lots\n", r"row 3: overall='lots' is not a number"),
    ("id,overall\n,1\n", r"row 2: missing 'id'"),
    ("id,overall\na,1,9\n", r"row 2: more cells"),
    ("id,bogus\na,1\n", r"row 2: unknown dimension 'bogus'"),
])
def test_csv_errors_name_the_row(tmp_path, text, message):
    p = tmp_path / "p.csv"
    p.write_text(text)
    with pytest.raises(PredictionsError, match=message):
        read_predictions(p)


def test_file_kind_and_detection(tmp_path, shapes_manifest):
    with pytest.raises(PredictionsError, match=r"\.jsonl, \.jsonl\.gz, \.csv or \.parquet"):
        read_predictions(tmp_path / "p.txt")
    with pytest.raises(PredictionsError, match="no such file"):
        read_predictions(tmp_path / "missing.csv")
    preds = _jsonl(tmp_path / "p.jsonl", ["", {"id": "a", "overall": 1}])
    assert is_predictions_file(preds) and is_predictions_file(tmp_path / "x.csv")
    assert not is_predictions_file(shapes_manifest)
    assert not is_predictions_file(tmp_path / "m.parquet")


def test_failed_and_nan_rows_are_not_predictions(tmp_path):
    from ieqa.bench.predictions import read_predictions

    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "a", "overall": 3}\n{"id": "b", "overall": NaN}\n'
                    '{"id": "c", "overall": null, "error": "HTTP 500"}\n')
    preds = read_predictions(path)
    assert preds == {"a": {"overall": 3.0}}
    assert preds.failed == {"b": "score 'overall' is nan",
                            "c": "failed to score: HTTP 500"}
