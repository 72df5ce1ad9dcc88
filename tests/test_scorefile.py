"""Score files: the one validating reader (ieqa.data.scorefile) behind every command that
reads them. Each newcomer failure of issue 26 is here: the same broken file gives the same
message, with the file and row, in bench, rank-editors, curate, best-of-n and dpo-pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.data.scorefile import (
    NON_SCORE_COLUMNS,
    ScoreFileError,
    iter_score_rows,
    looks_like_score_file,
)

runner = CliRunner()


def _row(ident: str, vq: float | str | None = 4.0, cp: float | None = 3.0, *, editor: str = "e1",
         group: str = "g1", error: str | None = None, **extra) -> dict:
    row = {"id": ident, "source": f"/d/{group}.png", "edited": f"/d/{ident}.png",
           "instruction": "make it red", "editor": editor, "task": "recolor", "group_id": group,
           "flags": [], "sigma": None, "unavailable": None, "explanation": None, "region": None,
           "raw": None, "error": error, "input_key": f"k-{ident}"}
    if error is None:
        row.update({"visual_quality": vq, "content_preservation": cp})
    row.update(extra)
    return row


def _rows(n_groups: int = 3) -> list[dict]:
    return [_row(f"g{g}_e{e}", 1.0 + e + g / 10, 2.0 + e, editor=f"e{e}", group=f"g{g}")
            for g in range(n_groups) for e in range(2)]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small ShapesEdit manifest: the benchmark `ieqa bench` reads the files against."""
    from ieqa.data.shapesedit import ShapesEditConfig, generate

    return generate(tmp_path_factory.mktemp("shapes"), ShapesEditConfig(n=4, k=2, seed=3, size=64),
                    progress=False)


def _commands(path: Path, out: Path, shapes: Path) -> dict[str, list[str]]:
    return {
        "bench": ["bench", "--benchmark", str(shapes.parent), "--predictions", str(path)],
        "rank-editors": ["rank-editors", str(path), "-o", str(out / "board")],
        "curate": ["curate", str(path), "-o", str(out / "cur"), "--keep", "top-k=2",
                   "--by", "mean"],
        "best-of-n": ["best-of-n", str(path), "-o", str(out / "best.jsonl"), "--by", "mean"],
        "dpo-pairs": ["dpo-pairs", str(path), "-o", str(out / "dpo"), "--by", "mean",
                      "--mode", "global"],
    }


def _message(res) -> str:  # noqa: ANN001 - typer's Result
    text = " ".join(res.output.split())
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        text += " " + str(res.exception)
    return text


READERS = ["rank-editors", "curate", "best-of-n", "dpo-pairs"]


@pytest.mark.parametrize("command", READERS)
def test_duplicate_ids_are_refused_naming_both_rows(tmp_path: Path, shapes: Path, command: str) -> None:
    rows = _rows()
    rows.append(dict(rows[0]))  # the same edit twice: dpo-pairs paired it with itself
    path = _write(tmp_path / "s.jsonl", rows)
    res = runner.invoke(app, _commands(path, tmp_path, shapes)[command])
    assert res.exit_code != 0, res.output
    text = _message(res)
    assert "duplicate id 'g0_e0'" in text and "line 7" in text and "first at line 1" in text, text


@pytest.mark.parametrize("command", READERS)
def test_a_score_that_is_not_a_number_is_refused(tmp_path: Path, shapes: Path, command: str) -> None:
    """Before: the reward came from the other dimension, and top-k kept corrupted rows."""
    rows = _rows()
    rows[2]["visual_quality"] = "abc"
    path = _write(tmp_path / "s.jsonl", rows)
    res = runner.invoke(app, _commands(path, tmp_path, shapes)[command])
    assert res.exit_code != 0, res.output
    text = _message(res)
    assert "line 3" in text and "visual_quality='abc' is not a number" in text, text


def test_bench_names_the_line_of_the_same_faults(tmp_path: Path) -> None:
    from ieqa.bench.errors import PredictionsError
    from ieqa.bench.predictions import read_predictions

    rows = _rows()
    rows[2]["visual_quality"] = "abc"
    with pytest.raises(PredictionsError, match=r"line 3: visual_quality='abc' is not a number"):
        read_predictions(_write(tmp_path / "a.jsonl", rows))
    rows = [*_rows(), _rows()[0]]
    with pytest.raises(PredictionsError, match=r"line 7: duplicate id 'g0_e0' \(first at line 1\)"):
        read_predictions(_write(tmp_path / "d.jsonl", rows))


@pytest.mark.parametrize("command", [*READERS, "bench"])
def test_a_file_without_ids_is_refused(tmp_path: Path, shapes: Path, command: str) -> None:
    """Before: every id became the string 'None' and best-of-n 'picked 1 of 100 groups'."""
    rows = [{k: v for k, v in r.items() if k != "id"} for r in _rows()]
    path = _write(tmp_path / "s.jsonl", rows)
    res = runner.invoke(app, _commands(path, tmp_path, shapes)[command])
    assert res.exit_code != 0, res.output
    text = _message(res)
    print(command, text)
    assert "missing 'id'" in text, text


@pytest.mark.parametrize("command", [*READERS, "bench"])
def test_a_file_whose_every_row_failed_says_so(tmp_path: Path, shapes: Path, command: str) -> None:
    """Before: rank-editors said the file 'has no editor names'."""
    rows = [_row(f"g{g}_e{e}", editor=f"e{e}", group=f"g{g}", error="CUDA out of memory")
            for g in range(2) for e in range(2)]
    path = _write(tmp_path / "s.jsonl", rows)
    res = runner.invoke(app, _commands(path, tmp_path, shapes)[command])
    assert res.exit_code != 0, res.output
    text = _message(res)
    assert "all 4 rows failed to score" in text and "CUDA out of memory" in text, text
    assert "no editor names" not in text


def test_an_explain_output_is_a_score_file_for_bench_and_rank_editors(tmp_path: Path,
                                                                       shapes: Path) -> None:
    """Before: bench said "unknown dimension 'format'" and rank-editors crashed."""
    from ieqa.data.manifest import read_manifest

    rows = []
    for s in read_manifest(shapes):
        row = _row(s.id, s.scores["visual_quality"], s.scores["content_preservation"],
                   editor=s.editor, group=s.group_id, source=str(s.source), edited=str(s.edited))
        row.update({"explanation": "The edit is good.", "format": "reasonedit",
                    "parse_status": "ok", "parse_error": None,
                    "raw": {"format": "reasonedit", "parse_status": "ok"}})
        rows.append(row)
    path = _write(tmp_path / "explain.jsonl", rows)
    res = runner.invoke(app, ["bench", "--benchmark", str(shapes.parent), "--predictions",
                              str(path)])
    assert res.exit_code == 0, _message(res)
    res = runner.invoke(app, ["rank-editors", str(path), "-o", str(tmp_path / "board")])
    assert res.exit_code == 0, _message(res)
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    assert board


def test_a_score_file_written_to_the_documented_spec_is_curated(tmp_path: Path) -> None:
    """docs/reference/files.md: id, the inputs, one column per dimension. Before: curate
    refused it, because it told score files by the undocumented input_key column."""
    rows = [{"id": f"e{i}", "source": "/d/s.png", "edited": f"/d/e{i}.png",
             "instruction": "make it red", "editor": "x", "group_id": f"g{i // 2}",
             "visual_quality": float(i), "content_preservation": 5.0 - i} for i in range(4)]
    path = _write(tmp_path / "spec.jsonl", rows)
    res = runner.invoke(app, ["curate", str(path), "-o", str(tmp_path / "cur"), "--keep",
                              "top-k=1", "--by", "visual_quality"])
    assert res.exit_code == 0, _message(res)
    kept = [json.loads(line) for line in (tmp_path / "cur" / "manifest.jsonl").read_text()
            .splitlines()]
    assert [r["id"] for r in kept] == ["e3"]


def test_the_reader_rules_by_hand(tmp_path: Path) -> None:
    rows = _rows(1)
    rows[1]["visual_quality"] = float("nan")
    path = _write(tmp_path / "s.jsonl", rows)
    checked = list(iter_score_rows(path))
    assert [r.id for r in checked] == ["g0_e0", "g0_e1"]
    assert checked[0].scores == {"visual_quality": 1.0, "content_preservation": 2.0}
    assert checked[0].failed is None and checked[0].inputs["editor"] == "e0"
    assert checked[1].failed == "score 'visual_quality' is nan" and not checked[1].scores
    assert checked[0].where.endswith("s.jsonl: line 1")
    bad = _rows(1)
    bad[0]["sharpness"] = 3
    with pytest.raises(ScoreFileError, match=r"line 1: .*'sharpness'.*rename it to a dimension"):
        list(iter_score_rows(_write(tmp_path / "b.jsonl", bad)))
    bad = _rows(1)
    bad[1]["visual_quality"] = True
    with pytest.raises(ScoreFileError, match=r"line 2: visual_quality=True is not a number"):
        list(iter_score_rows(_write(tmp_path / "t.jsonl", bad)))
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(ScoreFileError, match="no predictions in the file"):
        list(iter_score_rows(tmp_path / "e.jsonl"))
    with pytest.raises(ScoreFileError, match="a score file is"):
        list(iter_score_rows(tmp_path / "x.txt"))


def test_detection_by_the_spec() -> None:
    assert looks_like_score_file({"id", "edited", "visual_quality"})
    assert looks_like_score_file({"id", "SC"})  # an alias
    assert looks_like_score_file({"id", "edited", "error"})
    assert not looks_like_score_file({"id", "edited", "instruction", "scores"})  # a manifest
    assert not looks_like_score_file({"id", "edited", "instruction"})
    assert looks_like_score_file({"edited", "visual_quality"})  # no id: the reader says so


def test_the_writer_and_the_reader_share_the_column_list() -> None:
    from ieqa.scorers.run import output_schema

    written = set(output_schema(("visual_quality",)).names)
    assert written - {"visual_quality"} <= NON_SCORE_COLUMNS


def test_infinite_scores_and_errors_fail_their_row_and_are_counted(tmp_path: Path) -> None:
    """The module docstring: "a NaN or infinite score" makes the row failed: +inf and
    -inf as well as NaN, and a row whose error is set even if it carries scores. Failed rows
    are still read (each command counts them), with no scores left."""
    rows = _rows(2)  # g0_e0 (1.0, 2.0), g0_e1 (2.0, 3.0), g1_e0 (1.1, 2.0), g1_e1 (2.1, 3.0)
    rows[0]["visual_quality"] = float("inf")  # written as Infinity, read back as inf
    rows[1]["content_preservation"] = float("-inf")
    rows[2]["error"] = "timeout"  # an error next to scores: still not a prediction
    path = _write(tmp_path / "s.jsonl", rows)
    assert "Infinity" in path.read_text() and "-Infinity" in path.read_text()
    checked = list(iter_score_rows(path))
    assert [r.id for r in checked] == ["g0_e0", "g0_e1", "g1_e0", "g1_e1"]
    assert checked[0].failed == "score 'visual_quality' is inf" and checked[0].scores == {}
    assert checked[1].failed == "score 'content_preservation' is -inf" and checked[1].scores == {}
    assert checked[2].failed == "failed to score: timeout" and checked[2].scores == {}
    assert checked[3].failed is None
    assert checked[3].scores == {"visual_quality": 2.1, "content_preservation": 3.0}
    # the same through bench's reader: three failed rows, one prediction
    from ieqa.bench.predictions import read_predictions

    preds = read_predictions(path)
    assert dict(preds) == {"g1_e1": {"visual_quality": 2.1, "content_preservation": 3.0}}
    assert sorted(preds.failed) == ["g0_e0", "g0_e1", "g1_e0"]


def test_a_score_file_with_only_infinite_scores_has_nothing_to_read(tmp_path: Path) -> None:
    rows = _rows(1)
    rows[0]["visual_quality"] = float("-inf")
    rows[1]["content_preservation"] = float("inf")
    with pytest.raises(ScoreFileError, match=r"all 2 rows failed to score.*first: .*line 1: "
                                             r"score 'visual_quality' is -inf"):
        list(iter_score_rows(_write(tmp_path / "inf.jsonl", rows)))


def test_no_score_and_no_sigma_stay_unknown(tmp_path: Path) -> None:
    """An empty score (null) is no score, not 0; a row without sigma has no sigma (None),
    not 0, while a row with one keeps it; row_to_result gives the same."""
    from ieqa.scorers.run import row_to_result

    rows = _rows(2)
    rows[0]["visual_quality"] = None  # no score for this dimension
    rows[1]["sigma"] = {"visual_quality": 0.5, "content_preservation": 0.25}
    rows[3]["sigma"] = {"visual_quality": 2.0}
    checked = list(iter_score_rows(_write(tmp_path / "s.jsonl", rows)))
    assert checked[0].failed is None and checked[0].scores == {"content_preservation": 2.0}
    assert [r.columns["sigma"] for r in checked] == [
        None, {"visual_quality": 0.5, "content_preservation": 0.25}, None, {"visual_quality": 2.0}]
    results = [row_to_result(r) for r in checked]
    assert [r.sigma for r in results] == [
        {}, {"visual_quality": 0.5, "content_preservation": 0.25}, {}, {"visual_quality": 2.0}]
    assert results[0].scores == {"content_preservation": 2.0}


def test_curate_max_sigma_drops_rows_whose_sigma_is_unknown(tmp_path: Path) -> None:
    """--max-sigma keeps a row only when its sigma is known and at most the limit: of four
    rows (sigma 0.5, none, 2.0, none) only the first is eligible, whatever its score."""
    rows = _rows(2)
    rows[0]["sigma"] = {"visual_quality": 0.5}
    rows[2]["sigma"] = {"visual_quality": 2.0}
    path = _write(tmp_path / "s.jsonl", rows)
    res = runner.invoke(app, ["curate", str(path), "-o", str(tmp_path / "cur"), "--keep",
                              "top-k=4", "--by", "visual_quality", "--max-sigma", "1"])
    assert res.exit_code == 0, _message(res)
    report = json.loads((tmp_path / "cur" / "report.json").read_text())
    assert report["counts"]["dropped_sigma"] == 3, report["counts"]
    assert report["counts"]["kept"] == 1
    kept = [json.loads(line)["id"] for line in
            (tmp_path / "cur" / "manifest.jsonl").read_text().splitlines()]
    assert kept == ["g0_e0"]


def test_csv_cells_rows_and_sigma_text(tmp_path: Path) -> None:
    """CSV: an empty cell is no score (not 0), sigma is JSON text decoded to an object (an
    empty sigma cell: unknown), and rows are numbered with the header as row 1."""
    path = tmp_path / "s.csv"
    path.write_text('id,visual_quality,content_preservation,sigma,error\n'
                    'a,4.0,,"{""visual_quality"": 0.5}",\n'
                    'b,3.0,2.0,,\n')
    a, b = list(iter_score_rows(path))
    assert a.where.endswith("s.csv: row 2") and b.where.endswith("s.csv: row 3")
    assert a.scores == {"visual_quality": 4.0} and a.failed is None
    assert a.columns["sigma"] == {"visual_quality": 0.5}
    assert b.scores == {"visual_quality": 3.0, "content_preservation": 2.0}
    assert b.columns["sigma"] is None
    path.write_text("id,visual_quality\na,4.0\nb,abc\n")
    with pytest.raises(ScoreFileError, match=r"s\.csv: row 3: visual_quality='abc'"):
        list(iter_score_rows(path))


def test_parquet_sigma_text_is_decoded(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "visual_quality": [4.0, 3.0],
                             "sigma": ['{"visual_quality": 0.5}', None]}), path)
    a, b = list(iter_score_rows(path))
    assert a.columns["sigma"] == {"visual_quality": 0.5} and b.columns["sigma"] is None
    assert a.where.endswith("s.parquet: row 1") and b.where.endswith("s.parquet: row 2")


def test_jsonl_line_numbers_count_blank_lines(tmp_path: Path) -> None:
    rows = _rows(1)
    rows[1]["visual_quality"] = "abc"
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n")
    with pytest.raises(ScoreFileError, match=r"s\.jsonl: line 3: visual_quality='abc'"):
        list(iter_score_rows(path))


def test_the_released_reading_of_a_score_file(tmp_path):
    """``read_predictions(reading="released")``: each row's ``raw["released"]["scores"]``
    (a row ieqa failed may have one); a row without one is failed, with the reason."""
    from ieqa.bench.errors import PredictionsError
    from ieqa.bench.predictions import read_predictions

    path = _write(tmp_path / "s.jsonl", [
        {"id": "a", "overall": 4.0, "raw": {"released": {"status": "read", "scores": {
            "overall": 5.0, "sc_min": 5.0, "visual_quality": 5.0}}}},
        {"id": "b", "error": "expected 2 scores, found 1", "raw": {"released": {
            "status": "read", "scores": {"overall": 3.0}}}},
        {"id": "c", "overall": 2.0, "raw": {"released": {"status": "unread",
                                                          "reason": "SC: no score"}}},
        {"id": "d", "overall": 1.0},
    ])
    mine = read_predictions(path)
    assert mine == {"a": {"overall": 4.0}, "c": {"overall": 2.0}, "d": {"overall": 1.0}}
    assert list(mine.failed) == ["b"]
    released = read_predictions(path, reading="released")
    assert released == {"a": {"overall": 5.0, "sc_min": 5.0, "visual_quality": 5.0},
                        "b": {"overall": 3.0}}
    assert released.failed["c"] == "the released code reads no score: SC: no score"
    assert released.failed["d"].startswith("no released reading recorded")
    with pytest.raises(PredictionsError, match="one of ieqa, released"):
        read_predictions(path, reading="official")
