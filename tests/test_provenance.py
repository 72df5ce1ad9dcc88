"""Score files that know where they came from (issue 41): every row of an ``ieqa score``
output names its scorer configuration, the run record holds the scales and the inputs, the
one reader refuses a file that mixes scorers unless told which to read, and every join by id
checks that both files describe the same edits.

The hostile files are built here from real ``ieqa score`` outputs on two ShapesEdit sets:
an SSIM file with PSNR rows appended (another scale: dB), the same with the appended rows
stripped of their scorer (another tool's rows), and the SSIM scores of a second ShapesEdit
set whose ids coincide with the first's (a foreign dataset)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.data.scorefile import (
    JoinCheck,
    ScoreFileError,
    check_join,
    iter_score_rows,
    read_provenance,
    same_image_ref,
)
from ieqa.scorers.run import scorer_id

runner = CliRunner()


def _message(res) -> str:  # noqa: ANN001 - typer's Result
    text = " ".join(res.output.split())
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        text += " " + " ".join(str(res.exception).split())
    return text


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two ShapesEdit sets (8 edits in 4 groups each, the same ids, other images and editors)
    and their SSIM and PSNR scores."""
    from ieqa.data.shapesedit import ShapesEditConfig, generate

    root = tmp_path_factory.mktemp("prov")
    out: dict[str, Path] = {}
    out["shapes"] = generate(root / "a", ShapesEditConfig(n=8, k=2, seed=3, size=64), progress=False)
    out["foreign_manifest"] = generate(root / "b", ShapesEditConfig(n=8, k=2, seed=4, size=64),
                                       progress=False)
    for name, manifest, scorer in (("ssim", out["shapes"], "ssim"), ("psnr", out["shapes"], "psnr"),
                                   ("foreign", out["foreign_manifest"], "ssim")):
        path = root / f"{name}.jsonl"
        res = runner.invoke(app, ["score", str(manifest), "-o", str(path), "--scorer", scorer])
        assert res.exit_code == 0, _message(res)
        out[name] = path
    out["root"] = root
    return out


# --------------------------------------------------------------------------- provenance


def test_every_row_names_its_scorer_and_the_run_record_holds_scales_and_inputs(
        data: dict[str, Path]) -> None:
    rows = _lines(data["ssim"])
    prov = read_provenance(data["ssim"])
    assert re.fullmatch(r"ssim@[0-9a-f]{12}", prov["scorer_id"]), prov
    assert {r["scorer"] for r in rows} == {prov["scorer_id"]}
    assert prov["scorer_id"] == scorer_id(prov)  # the id is the hash of the record's identity
    assert prov["scales"] == {"content_preservation": {"range": [-1.0, 1.0], "units": "",
                                                       "higher_better": True}}
    assert prov["inputs"]["n"] == len(rows) == 8
    assert prov["inputs"]["description"] == f"manifest:{data['shapes']}"
    keys = "\n".join(r["input_key"] for r in rows)
    assert prov["inputs"]["sha256"] == hashlib.sha256(keys.encode()).hexdigest()
    # PSNR in dB is another scorer with another scale
    psnr = read_provenance(data["psnr"])
    assert psnr["scorer_id"].startswith("psnr@") and psnr["scales"]["content_preservation"]["units"] == "dB"
    assert read_provenance(data["root"] / "nothing.jsonl") == {}


def test_the_same_configuration_has_the_same_id_in_parquet_and_after_resume(
        data: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "ssim.parquet"
    res = runner.invoke(app, ["score", str(data["shapes"]), "-o", str(out), "--scorer", "ssim"])
    assert res.exit_code == 0, _message(res)
    assert read_provenance(out)["scorer_id"] == read_provenance(data["ssim"])["scorer_id"]
    assert {r.scorer for r in iter_score_rows(out)} == {read_provenance(out)["scorer_id"]}
    # an output of an ieqa without the column is resumed and every row gets the column
    old = tmp_path / "old.jsonl"
    _write(old, [{k: v for k, v in r.items() if k != "scorer"} for r in _lines(data["ssim"])])
    shutil.copy(data["ssim"].with_name("ssim.jsonl.run.json"), tmp_path / "old.jsonl.run.json")
    res = runner.invoke(app, ["score", str(data["shapes"]), "-o", str(old), "--scorer", "ssim"])
    assert res.exit_code == 0, _message(res)
    assert "8 kept" in _message(res) or "resumed" in _message(res).lower(), _message(res)
    assert {r["scorer"] for r in _lines(old)} == {read_provenance(data["ssim"])["scorer_id"]}


def test_the_scorer_id_ignores_how_long_requests_wait_but_not_the_model() -> None:
    base = {"scorer": "vlm-judge", "dimensions": ["overall"],
            "config": {"model": "m1", "backend": {"base_url": "http://localhost:8000/v1",
                                                  "timeout_s": 60}}}
    patient = json.loads(json.dumps(base))
    patient["config"]["backend"].update(timeout_s=600, base_url="http://127.0.0.1:8000/v1/")
    other = json.loads(json.dumps(base))
    other["config"]["model"] = "m2"
    assert scorer_id(base) == scorer_id(patient)
    assert scorer_id(base) != scorer_id(other)
    assert scorer_id(base).startswith("vlm-judge@")


# --------------------------------------------------------------------------- mixed scorers


def _mixed(data: dict[str, Path], tmp_path: Path, strip: bool = False) -> Path:
    """The SSIM rows with the PSNR rows appended (ids made unique), as a user's `cat` makes
    it; ``strip``: the appended rows without a scorer (another tool's)."""
    extra = []
    for r in _lines(data["psnr"]):
        r = {**r, "id": r["id"] + "_psnr"}
        if strip:
            r.pop("scorer")
        extra.append(r)
    return _write(tmp_path / "mixed.jsonl", _lines(data["ssim"]) + extra)


def _commands(path: Path, out: Path, data: dict[str, Path]) -> dict[str, list[str]]:
    return {
        "bench": ["bench", "--benchmark", str(data["shapes"].parent), "--predictions", str(path),
                  "--missing", "drop", "-o", str(out / "bench")],
        "rank-editors": ["rank-editors", str(path), "-o", str(out / "board")],
        "curate": ["curate", str(path), "-o", str(out / "cur"), "--keep", "top-k=4",
                   "--by", "content_preservation"],
        "best-of-n": ["best-of-n", str(path), "-o", str(out / "best.jsonl"),
                      "--by", "content_preservation"],
        "dpo-pairs": ["dpo-pairs", str(path), "-o", str(out / "dpo"), "--by",
                      "content_preservation", "--mode", "global"],
        "baseline": ["baseline", "subscore-rf", str(path), "--truth", str(data["shapes"]),
                     "--features", "content_preservation", "--target", "overall",
                     "--n-estimators", "5", "--test-fraction", "0.5"],
    }


CONSUMERS = ["bench", "rank-editors", "curate", "best-of-n", "dpo-pairs", "baseline"]


@pytest.mark.parametrize("strip", [False, True], ids=["psnr-rows", "rows-without-scorer"])
@pytest.mark.parametrize("command", CONSUMERS)
def test_a_file_that_mixes_scorers_is_refused_by_every_consumer(
        data: dict[str, Path], tmp_path: Path, command: str, strip: bool) -> None:
    """Before: curate --keep top-k kept only the appended PSNR-like rows ("lowest kept
    reward 35")."""
    path = _mixed(data, tmp_path, strip)
    res = runner.invoke(app, _commands(path, tmp_path, data)[command])
    text = _message(res)
    assert res.exit_code == 1, text
    ssim = read_provenance(data["ssim"])["scorer_id"]
    other = "none" if strip else read_provenance(data["psnr"])["scorer_id"]
    assert "rows of two scorers in one file" in text and "line 9" in text, text
    assert f"{other!r} here, {ssim!r} from line 1 on" in text, text
    assert f"--from-scorer {ssim}" in text, text


@pytest.mark.parametrize("command", CONSUMERS)
def test_from_scorer_reads_that_scorer_s_rows_and_counts_the_others(
        data: dict[str, Path], tmp_path: Path, command: str) -> None:
    path = _mixed(data, tmp_path, strip=True)
    res = runner.invoke(app, [*_commands(path, tmp_path, data)[command], "--from-scorer", "ssim"])
    text = _message(res)
    assert res.exit_code == 0, text
    if command in ("bench", "rank-editors", "curate", "best-of-n", "dpo-pairs"):
        assert "8 rows of other scorers" in text, text
    if command == "curate":
        kept = _lines(tmp_path / "cur" / "manifest.jsonl")
        assert len(kept) == 4 and not any(r["id"].endswith("_psnr") for r in kept)
        report = json.loads((tmp_path / "cur" / "report.json").read_text())
        assert report["counts"]["rows"] == 8 and report["counts"]["other_scorer_rows"] == 8
        assert report["scorer"] == "ssim"
        # the kept rows are the 4 best SSIM rows of the file
        best = sorted(_lines(data["ssim"]), key=lambda r: -r["content_preservation"])[:4]
        assert sorted(r["id"] for r in kept) == sorted(r["id"] for r in best)
    if command == "best-of-n":
        report = json.loads((tmp_path / "best.jsonl.report.json").read_text())
        assert report["rows"] == 8 and report["other_scorer_rows"] == 8
        assert not any(r["id"].endswith("_psnr") for r in _lines(tmp_path / "best.jsonl"))
    if command == "dpo-pairs":
        stats = json.loads((tmp_path / "dpo" / "stats.json").read_text())
        assert stats["rows"] == 8 and stats["other_scorer_rows"] == 8
    # the rows without a scorer are read with --from-scorer none
    if command == "curate":
        res = runner.invoke(app, [*_commands(path, tmp_path / "n", data)[command],
                                  "--from-scorer", "none"])
        assert res.exit_code == 0, _message(res)
        kept = _lines(tmp_path / "n" / "cur" / "manifest.jsonl")
        assert len(kept) == 4 and all(r["id"].endswith("_psnr") for r in kept)


def test_from_scorer_that_matches_no_row_or_two_configurations_says_which_there_are(
        data: dict[str, Path], tmp_path: Path) -> None:
    path = _mixed(data, tmp_path)
    with pytest.raises(ScoreFileError, match=r"no row of scorer 'clip-i'; the file holds "
                                             r"psnr@[0-9a-f]{12} \(8 rows\), ssim@[0-9a-f]{12} \(8 rows\)"):
        list(iter_score_rows(path, scorer="clip-i"))
    rows = _lines(data["ssim"])
    for r in rows[4:]:
        r["scorer"] = "ssim@000000000000"
    two = _write(tmp_path / "two.jsonl", rows)
    with pytest.raises(ScoreFileError, match=r"line 5: --from-scorer ssim matches more than one"):
        list(iter_score_rows(two, scorer="ssim"))
    assert len(list(iter_score_rows(two, scorer="ssim@000000000000"))) == 4
    with pytest.raises(ScoreFileError, match="line 5: rows of two scorers"):
        list(iter_score_rows(two))


def test_a_manifest_has_nothing_to_choose(data: dict[str, Path], tmp_path: Path) -> None:
    res = runner.invoke(app, ["curate", str(data["shapes"]), "-o", str(tmp_path / "c"), "--keep",
                              "top-k=2", "--from-scorer", "ssim"])
    assert res.exit_code == 1 and "is a manifest" in _message(res), _message(res)


# --------------------------------------------------------------------------- joins


def test_image_references_match_across_folders_but_not_across_datasets() -> None:
    assert same_image_ref("/data/shapes/images/g1.png", "/mnt/x/shapes/images/g1.png")
    assert same_image_ref("images/g1.png", "/mnt/x/shapes/images/g1.png")
    assert same_image_ref("C:\\x\\shapes\\images\\g1.png", "/y/shapes/images/g1.png")
    assert not same_image_ref("/t/a/images/g1.png", "/t/b/images/g1.png")
    assert not same_image_ref("/t/a/images/g1.png", "/t/a/images/g2.png")
    assert same_image_ref(None, "/t/a.png") is None and same_image_ref("", "/t/a.png") is None


def test_check_join_counts_compares_and_refuses_above_the_share() -> None:
    left = {f"e{i}": {"edited": f"/a/img/e{i}.png", "editor": "x"} for i in range(5)}
    right = {f"e{i}": {"edited": f"/b/a/img/e{i}.png", "editor": "x", "source": "s.png"}
             for i in range(4)}
    right["e3"]["editor"] = "y"  # 1 of the 4 joined differs
    right["e9"] = {"edited": "/a/img/e9.png"}  # in one file only: not joined
    left["e2"] = {"instruction": "only"}  # nothing comparable: joined, not compared
    with pytest.raises(ScoreFileError, match=r"1 of 3 edits joined by id between L and R are not "
                                             r"the same edit \(33.3%, more than --max-mismatch 0"
                                             r"\): id 'e3': editor 'x' vs 'y'"):
        check_join(left, right, sides=("L", "R"))
    with pytest.raises(ScoreFileError, match=r"more than --max-mismatch 0.33"):
        check_join(left, right, sides=("L", "R"), max_mismatch=0.33)
    ok = check_join(left, right, sides=("L", "R"), max_mismatch=1 / 3)  # the boundary is accepted
    assert isinstance(ok, JoinCheck)
    assert (ok.n_joined, ok.n_compared, list(ok.mismatched)) == (4, 3, ["e3"])
    assert ok.note() is not None and "1 of 3 edits" in ok.note()
    blind = check_join({"e1": {}}, {"e1": {"editor": "x"}}, sides=("L", "R"))
    assert blind.n_compared == 0 and "is not checked" in blind.note()
    with pytest.raises(ScoreFileError, match=r"must be a share in \[0, 1\], got nan"):
        check_join(left, right, sides=("L", "R"), max_mismatch=float("nan"))


JOINS = {
    "bench": lambda d, scores, out: ["bench", "--benchmark", str(d["shapes"].parent),
                                     "--predictions", str(scores), "-o", str(out / "b")],
    "rank-editors": lambda d, scores, out: ["rank-editors", str(scores), "--human",
                                            str(d["shapes"]), "-o", str(out / "r")],
    "dpo-pairs": lambda d, scores, out: ["dpo-pairs", str(d["ssim"]), "-o", str(out / "p"),
                                         "--by", "content_preservation", "--mode", "global",
                                         "--reference", str(scores)],
    "baseline": lambda d, scores, out: ["baseline", "subscore-rf", str(scores), "--truth",
                                        str(d["shapes"]), "--features", "content_preservation",
                                        "--target", "overall", "--n-estimators", "5",
                                        "--test-fraction", "0.5"],
}


@pytest.mark.parametrize("command", list(JOINS))
def test_a_join_with_another_dataset_whose_ids_coincide_is_refused(
        data: dict[str, Path], tmp_path: Path, command: str) -> None:
    """Before: rank-editors --human and bench --predictions joined 32 rows by id with 32
    image paths and 27 editors different, and printed rankings and SRCC anyway."""
    foreign = data["foreign_manifest"] if command == "dpo-pairs" else data["foreign"]
    res = runner.invoke(app, JOINS[command](data, foreign, tmp_path))
    text = _message(res)
    assert res.exit_code == 1, text
    n = 6 if command == "dpo-pairs" else 8  # dpo-pairs joins the 6 edits of its 3 pairs
    assert f"{n} of {n} edits joined by id between" in text and "are not the same edit" in text, text
    # the first mismatched id, with its paths on both sides (the scored set is a/, the
    # foreign one b/; dpo-pairs' first pair starts at group 1)
    first = "g000001_c0" if command == "dpo-pairs" else "g000000_c0"
    group = first.split("_")[0]
    a, b = ("a", "b") if command == "dpo-pairs" else ("b", "a")  # the scores' side first
    assert re.search(rf"id '{first}': source '[^']*/{a}/images/{group}_src.png' vs "
                     rf"'[^']*/{b}/images/{group}_src.png', edited '[^']*/{a}/images/{first}.png'",
                     text), text
    assert "--max-mismatch SHARE" in text, text
    # the same files join when they describe the same edits
    same = data["shapes"] if command == "dpo-pairs" else data["ssim"]
    res = runner.invoke(app, JOINS[command](data, same, tmp_path / "same"))
    assert res.exit_code == 0, _message(res)
    # and the user can accept the mismatch, which is then reported
    res = runner.invoke(app, [*JOINS[command](data, foreign, tmp_path / "acc"), "--max-mismatch", "1"])
    assert res.exit_code == 0, _message(res)
    if command != "baseline":
        assert f"{n} of {n} edits joined by id" in _message(res) and "accepted by --max-mismatch" \
            in _message(res), _message(res)


def test_bench_refuses_above_the_share_and_accepts_at_it(data: dict[str, Path],
                                                         tmp_path: Path) -> None:
    rows = _lines(data["ssim"])
    rows[1]["editor"] = rows[6]["editor"] = "someone-else"  # 2 of 8: 25 %
    path = _write(tmp_path / "two-off.jsonl", rows)
    res = runner.invoke(app, [*JOINS["bench"](data, path, tmp_path), "--max-mismatch", "0.2"])
    assert res.exit_code == 1 and "2 of 8 edits" in _message(res) and "(25.0%" in _message(res)
    assert f"id {rows[1]['id']!r}: editor" in _message(res), _message(res)
    res = runner.invoke(app, [*JOINS["bench"](data, path, tmp_path), "--max-mismatch", "0.25"])
    assert res.exit_code == 0, _message(res)
    results = json.loads((tmp_path / "b" / "results.json").read_text())
    assert any("2 of 8 edits joined by id" in n for n in results["notes"]), results["notes"]


@pytest.mark.parametrize("command", ["bench", "rank-editors", "dpo-pairs", "baseline"])
def test_max_mismatch_takes_a_share(data: dict[str, Path], tmp_path: Path, command: str) -> None:
    for bad in ("nan", "-0.1", "1.5"):
        res = runner.invoke(app, [*JOINS[command](data, data["ssim"], tmp_path), "--max-mismatch", bad])
        assert res.exit_code == 2 and "a share in [0, 1]" in _message(res), _message(res)
