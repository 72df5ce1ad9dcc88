"""Group rankings -> win counts (ieqa.human.rankings) and `ieqa rank-editors --rankings`.

The hand-worked file (editors A, B, C; groups g1, g2; best first, inner list = tie):

g1 visual_quality, two raters: r1 A>B>C (ranks 1,2,3), r2 B>A>C (2,1,3) -> mean ranks
   A 1.5, B 1.5, C 3 -> pairs A=B, A>C, B>C -> wins A 1.5, B 1.5, C 0.
g1 instruction_alignment: C > [A, B] -> ranks C 1, A 2.5, B 2.5 -> wins C 2, A 0.5, B 0.5.
g1 content_preservation: A>B>C -> wins A 2, B 1, C 0.
g2 visual_quality ("PQ"): C>B>A -> wins C 2, B 1, A 0.
g2 instruction_alignment ("SC"): A>B>C -> wins A 2, B 1, C 0.
g2 content_preservation: [A, B, C] all tied -> 1 each.

Per editor (mean over g1, g2):     VQ    IA    CP    overall 0.3 VQ + 0.4 IA + 0.3 CP
  A                               0.75  1.25  1.50  0.225 + 0.500 + 0.450 = 1.175
  B                               1.25  0.75  1.00  0.375 + 0.300 + 0.300 = 0.975
  C                               1.00  1.00  0.50  0.300 + 0.400 + 0.150 = 0.850
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from ieqa.commands.rank_editors import NAME, command
from ieqa.data.manifest import write_manifest
from ieqa.data.schema import EditSample
from ieqa.human import ranking_win_counts, read_rankings
from ieqa.metrics import MetricInputError

LINES = [
    {"group_id": "g1", "dimension": "visual_quality", "ranking": ["A", "B", "C"], "rater": "r1"},
    {"group_id": "g1", "dimension": "visual_quality", "ranking": ["B", "A", "C"], "rater": "r2"},
    {"group_id": "g1", "dimension": "instruction_alignment", "ranking": ["C", ["A", "B"]]},
    {"group_id": "g1", "dimension": "content_preservation", "ranking": ["A", "B", "C"]},
    {"group_id": "g2", "dimension": "PQ", "ranking": ["C", "B", "A"]},
    {"group_id": "g2", "dimension": "SC", "ranking": ["A", "B", "C"]},
    {"group_id": "g2", "dimension": "content_preservation", "ranking": [["A", "B", "C"]]},
]
EXPECTED = {  # editor -> (VQ, IA, CP, overall)
    "A": (0.75, 1.25, 1.5, 1.175), "B": (1.25, 0.75, 1.0, 0.975), "C": (1.0, 1.0, 0.5, 0.85),
}


def _write(path, lines):
    path.write_text("".join((json.dumps(x) if not isinstance(x, str) else x) + "\n" for x in lines))
    return path


@pytest.fixture
def rankings_file(tmp_path):
    return _write(tmp_path / "rankings.jsonl", LINES)


def test_win_counts_per_edit_by_hand(rankings_file):
    wins = ranking_win_counts(read_rankings(rankings_file))
    got = {(g, e): (wins.wins["visual_quality"][k], wins.wins["instruction_alignment"][k],
                    wins.wins["content_preservation"][k])
           for k, (g, e) in enumerate(zip(wins.group.tolist(), wins.editor.tolist(), strict=True))}
    assert got == {
        ("g1", "A"): (1.5, 0.5, 2.0), ("g1", "B"): (1.5, 0.5, 1.0), ("g1", "C"): (0.0, 2.0, 0.0),
        ("g2", "C"): (2.0, 0.0, 1.0), ("g2", "B"): (1.0, 1.0, 1.0), ("g2", "A"): (0.0, 2.0, 1.0),
    }
    assert wins.mean_rank["visual_quality"][:3].tolist() == [1.5, 1.5, 3.0]
    assert wins.mean_rank["instruction_alignment"][:3].tolist() == [2.5, 2.5, 1.0]
    assert wins.n_raters["visual_quality"].tolist() == [2, 2, 2, 1, 1, 1]
    assert wins.n_pairs == {"visual_quality": 6, "instruction_alignment": 6, "content_preservation": 6}
    assert wins.ids.tolist()[:2] == ["g1/A", "g1/B"]
    rates = ranking_win_counts(read_rankings(rankings_file), normalize=True)
    np.testing.assert_allclose(rates.wins["visual_quality"], wins.wins["visual_quality"] / 2)


def test_editor_scores_and_weighted_overall_by_hand(rankings_file):
    from ieqa.bench.leaderboard import editor_leaderboard, score_table

    lb = editor_leaderboard(score_table(ranking_win_counts(read_rankings(rankings_file)).columns()))
    assert lb.editors == ["A", "B", "C"]
    assert lb.columns == ["visual_quality", "instruction_alignment", "content_preservation", "overall"]
    for i, e in enumerate(lb.editors):
        np.testing.assert_allclose(lb.mean[i], EXPECTED[e], rtol=0, atol=1e-12)


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "not valid JSON"),
    ('["A", "B"]', "must be a JSON object"),
    ({"group_id": "g", "dimension": "overall", "rankings": ["A", "B"]}, "unknown key(s) ['rankings']"),
    ({"group_id": "g", "ranking": ["A", "B"]}, "missing dimension"),
    ({"group_id": "g", "dimension": "sharpness", "ranking": ["A", "B"]}, "unknown dimension 'sharpness'"),
    ({"group_id": "g", "dimension": "overall", "ranking": "A>B"}, "must be a list of editors, best first"),
    ({"group_id": "g", "dimension": "overall", "ranking": ["A", []]}, "empty tie"),
    ({"group_id": "g", "dimension": "overall", "ranking": ["A", ["B", ["C"]]]}, "a tie inside a tie"),
    ({"group_id": "g", "dimension": "overall", "ranking": ["A", "B", "A"]}, "['A'] appear more than once"),
    ({"group_id": "g", "dimension": "overall", "ranking": ["A"]}, "at least two editors"),
    ({"group_id": "g", "dimension": "overall", "ranking": ["A", 3.5]}, "an editor must be a non-empty string"),
])
def test_bad_lines_name_the_line_and_say_what_to_write(tmp_path, line, message):
    path = _write(tmp_path / "r.jsonl", [LINES[0], line])
    with pytest.raises(MetricInputError) as err:
        read_rankings(path)
    assert f"{path}: line 2:" in str(err.value) and message in str(err.value)


@pytest.mark.parametrize(("extra", "message"), [
    ({"group_id": "g1", "dimension": "visual_quality", "ranking": ["C", "B", "A"], "rater": "r1"},
     "rater 'r1' ranks group 'g1' on visual_quality a second time"),
    ({"group_id": "g2", "dimension": "PQ", "ranking": ["C", "A"], "rater": "r9"}, "every rater of a group ranks "
     "the same editors"),
    ({"group_id": "g2", "dimension": "overall", "ranking": ["C", "A", "B"], "task": "recolor"}, "one task"),
])
def test_inconsistent_rankings_are_errors(tmp_path, extra, message):
    path = _write(tmp_path / "r.jsonl", [*LINES, extra])
    with pytest.raises(MetricInputError, match=message.replace("(", r"\(")):
        ranking_win_counts(read_rankings(path))


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(MetricInputError, match="holds no ranking"):
        read_rankings(_write(tmp_path / "e.jsonl", [""]))
    with pytest.raises(MetricInputError, match="does not exist"):
        read_rankings(tmp_path / "nope.jsonl")


# --------------------------------------------------------------------------- command

runner = CliRunner()
app = typer.Typer()
app.command(NAME)(command)  # a one-command app: invoked without the command name


def _invoke(*args):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


def _flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


def test_rank_editors_from_rankings(rankings_file, tmp_path):
    out = tmp_path / "board"
    res = _invoke("--rankings", rankings_file, "-o", out)
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    assert "6 edits, 3 editors, 2 groups; overall = 0.3·visual_quality + 0.4·instruction_alignment" in text
    assert "1 A 2 0.750 1.250 1.500 1.175" in text and "3 C 2 1.000 1.000 0.500 0.850" in text
    assert "win count (1 per win, 0.5 per tie)" in text
    with (out / "leaderboard.csv").open() as fh:
        rows = {r["editor"]: r for r in csv.DictReader(fh)}
    for editor, values in EXPECTED.items():
        got = [float(rows[editor][c]) for c in ("visual_quality", "instruction_alignment", "content_preservation",
                                                 "overall")]
        assert all(math.isclose(a, b) for a, b in zip(got, values, strict=True)), (editor, got)
    assert json.loads((out / "leaderboard.json").read_text())["rankings"] == str(rankings_file)


def test_predicted_scores_compared_with_human_rankings(rankings_file, tmp_path):
    samples = [EditSample(id=f"{g}-{e}", source="s.png", edited=f"{g}{e}.png", instruction="x", editor=e,
                          group_id=g, scores={"visual_quality": s, "instruction_alignment": s,
                                              "content_preservation": s})
               for g in ("g1", "g2") for e, s in (("A", 3.0), ("B", 2.0), ("C", 1.0))]
    manifest = write_manifest(samples, tmp_path / "pred.jsonl")
    res = _invoke(manifest, "--rankings", rankings_file)
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    assert "predicted vs human editor ranking" in text
    assert "overall 3 1.000 1.000" in text  # A > B > C on both sides


def test_ragged_groups_are_noted_and_win_rate(tmp_path):
    path = _write(tmp_path / "r.jsonl", [*LINES, {"group_id": "g3", "dimension": "visual_quality",
                                                   "ranking": ["A", "C"]}])
    res = _invoke("--rankings", path)
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    assert "visual_quality: groups rank 2 to 3 editors" in text and "--win-rate" in text
    assert "2 of 8 ranked edits have no instruction_alignment ranking" in text
    res = _invoke("--rankings", path, "--win-rate")
    assert res.exit_code == 0 and "groups rank 2 to 3" not in _flat(res.output)


@pytest.mark.parametrize(("args", "message"), [
    ((), "give a SCORES file, or human group rankings with --rankings FILE"),
    (("--win-rate",), "add --rankings FILE"),
])
def test_usage_errors(args, message):
    res = _invoke(*args)
    assert res.exit_code == 2 and message in _flat(res.output), res.output


def test_bad_rankings_file_and_two_human_sides(rankings_file, tmp_path):
    bad = _write(tmp_path / "bad.jsonl", [{"group_id": "g", "dimension": "overall", "ranking": ["A"]}])
    res = _invoke("--rankings", bad)
    assert res.exit_code == 2 and "at least two editors" in _flat(res.output)
    manifest = write_manifest([EditSample(id="x", source="s.png", edited="e.png", instruction="i", editor="A",
                                          scores={"overall": 1.0})], tmp_path / "m.jsonl")
    res = _invoke(manifest, "--rankings", rankings_file, "--human", manifest)
    assert res.exit_code == 2 and "give one of them" in _flat(res.output)


def test_a_bare_predictions_file_with_rankings_is_refused(rankings_file, tmp_path):
    preds = _write(tmp_path / "preds.jsonl", [{"id": "g1-A", "visual_quality": 1.0}])
    res = _invoke(preds, "--rankings", rankings_file)
    assert res.exit_code == 2 and "must name each edit's editor" in _flat(res.output), res.output
