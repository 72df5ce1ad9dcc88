"""``ieqa bench``: benchmark metric sets from predictions and GenAI-Bench judge results."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest
import typer
from scipy import stats
from typer.testing import CliRunner

from ieqa.bench.errors import BenchError
from ieqa.bench.genai_judge import load_judge_results
from ieqa.bench.protocols import PROTOCOLS, protocol_for, protocol_markdown, protocol_table
from ieqa.bench.run import evaluate_judge_results, evaluate_predictions, write_bench_outputs
from ieqa.commands.bench import command
from ieqa.data.loaders import load_benchmark
from ieqa.data.shapesedit import ShapesEditConfig, generate

pytest.importorskip("matplotlib")

runner = CliRunner()
app = typer.Typer()
app.command("bench")(command)  # a one-command app: invoked without the command name


def _invoke(*args):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "240"})


# --------------------------------------------------------------------------- GenAI-Bench judge

# (count, human_vote, response, model_vote as GenAI-Bench's parse_response writes it,
#  official correct, re-parsed correct)
_JUDGE_ROWS = [
    (7, "leftvote", "A follows the instruction. [[A>B]]", "[[A>B]]", True, True),
    (3, "leftvote", "Much better: [[A>>B]]", "[[A>>B]]", True, True),
    (6, "rightvote", "Final verdict: [[B>A]]", "[[B>A]]", True, True),
    (2, "rightvote", "[[B>>A]]", "[[B>>A]]", True, True),
    (3, "tievote", "Both fine. [[A=B=Good]]", "[[A=B=Good]]", True, True),
    (2, "tievote", "Equal: [[A=B]]", "[[A=B]]", True, True),  # [[A=B]] vs tievote: right
    (2, "bothbad_vote", "[[A=B=Bad]]", "[[A=B=Bad]]", True, True),
    (1, "bothbad_vote", "Equal: [[A=B]]", "[[A=B]]", True, True),  # [[A=B]] vs bothbad: right
    # the official verdict is right, the last bracketed verdict (on another line) is not
    (1, "rightvote", "Final verdict: [[B>A]]\n(had the sky been kept: [[A>B]])", "[[B>A]]",
     True, False),
    (2, "bothbad_vote", "[[A=B=Good]]", "[[A=B=Good]]", False, False),  # Good is not Bad
    (2, "tievote", "[[A=B=Bad]]", "[[A=B=Bad]]", False, False),
    (2, "leftvote", "Model A is clearly better.", None, False, False),  # null: wrong
    (1, "leftvote", "Hmm [[B>A]]", "[[B>A]]", False, False),
    (2, "rightvote", "[[A>B]]", "[[A>B]]", False, False),
    # official regex takes the first match on a line; ieqa reads the last verdict
    (1, "rightvote", "At first [[A>B]]\nFinal verdict: [[B>A]]", "[[A>B]]", False, True),
    # greedy official match spans two verdicts: not an official string
    (1, "leftvote", "[[B>A]] or rather [[A>B]]", "[[B>A]] or rather [[A>B]]", False, True),
    (1, "leftvote", "Verdict: [[a>b]]", "[[a>b]]", False, True),  # case: official exact match fails
    (1, "tievote", "Verdict: [[A = B = Good]]", "[[A = B = Good]]", False, True),
]
N_JUDGE = 40
OFFICIAL_CORRECT = 27  # 67.50 %
REPARSED_CORRECT = 30  # 75.00 %
N_DIFFER = 5


def _judge_file(path, with_correct=True):
    rows = [r for count, *r in _JUDGE_ROWS for _ in range(count)]
    assert len(rows) == N_JUDGE
    assert sum(r[3] for r in rows) == OFFICIAL_CORRECT
    assert sum(r[4] for r in rows) == REPARSED_CORRECT
    order = np.random.default_rng(3).permutation(len(rows))
    with open(path, "w") as fh:
        for idx, k in enumerate(order):
            human, response, vote, correct, _ = rows[k]
            rec = {"idx": idx, "instruct_prompt": f"edit {idx}", "response": response,
                   "model_vote": vote, "human_vote": human}
            if with_correct:
                rec["correct"] = correct
            fh.write(json.dumps(rec) + "\n")
    return path


def test_genai_judge_results_official_and_reparsed_accuracy(tmp_path):
    results = load_judge_results(_judge_file(tmp_path / "pairwise.jsonl"))
    res = evaluate_predictions(None, results)
    assert res.benchmark == "genai-bench" and res.protocol == "judge"
    assert res.value("accuracy_official") * 100 == pytest.approx(67.50, abs=0.01)
    assert res.value("accuracy_official") == pytest.approx(OFFICIAL_CORRECT / N_JUDGE, abs=1e-12)
    assert res.value("accuracy_reparsed") == pytest.approx(REPARSED_CORRECT / N_JUDGE, abs=1e-12)
    assert res.value("verdicts_differ") == N_DIFFER
    assert res.row("accuracy_official").n == N_JUDGE
    # per human vote: the 4 bothbad/[[A=B]]-style rules
    assert res.value("accuracy_official", subset="bothbad_vote") == pytest.approx(3 / 5)
    assert res.value("accuracy_official", subset="tievote") == pytest.approx(5 / 8)
    assert any("agree with the official rule on every item" in n for n in res.notes)
    assert any("3 model_vote values are not one of the official strings" in n for n in res.notes)
    # the loader's lenient normalisation of model_vote would accept those three
    assert results.accuracy() == pytest.approx((OFFICIAL_CORRECT + 3) / N_JUDGE)


def test_genai_judge_bootstrap_is_seeded(tmp_path):
    results = load_judge_results(_judge_file(tmp_path / "pairwise.jsonl", with_correct=False))
    a = evaluate_judge_results(results, n_boot=200, seed=4).row("accuracy_official")
    b = evaluate_judge_results(results, n_boot=200, seed=4).row("accuracy_official")
    assert a.ci_low == b.ci_low and a.ci_high == b.ci_high
    assert a.ci_low < a.value < a.ci_high


def test_genai_judge_results_through_the_cli(tmp_path):
    path = _judge_file(tmp_path / "pairwise.jsonl")
    out = tmp_path / "out"
    res = _invoke("--benchmark", "genai-bench", "--predictions", path, "--out", out)
    assert res.exit_code == 0, res.output
    assert "67.50%" in res.output and "75.00%" in res.output
    data = json.loads((out / "results.json").read_text())
    rows = {(r["metric"], r["subset"]): r for r in data["rows"]}
    assert rows[("accuracy_official", "all")]["value"] * 100 == pytest.approx(67.50, abs=0.01)
    assert rows[("accuracy_reparsed", "all")]["value"] * 100 == pytest.approx(75.00, abs=0.01)
    assert rows[("verdicts_differ", "all")]["value"] == N_DIFFER
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html  # accuracy per human vote
    assert "http://" not in html and "https://" not in html
    csv_rows = list(csv.DictReader((out / "results.csv").open()))
    assert {r["metric"] for r in csv_rows} >= {"accuracy_official", "accuracy_reparsed"}


def test_genai_judge_results_checked_against_the_items(tmp_path):
    path = _judge_file(tmp_path / "pairwise.jsonl")
    votes = {r["idx"]: r["human_vote"] for r in map(json.loads, path.read_text().splitlines())}
    items = tmp_path / "items.jsonl"
    with open(items, "w") as fh:
        for idx in range(N_JUDGE + 2):  # two items were never judged
            vote = votes.get(idx, "leftvote")
            if idx == 0:  # a results file from another split would disagree on votes
                vote = "rightvote" if vote != "rightvote" else "leftvote"
            fh.write(json.dumps({"instruct_prompt": "edit", "source_image": "s.png",
                                 "left_output_image": f"{idx}l.png",
                                 "right_output_image": f"{idx}r.png", "vote_type": vote}) + "\n")
    res = _invoke("--benchmark", "genai-bench", "--root", items, "--predictions", path)
    assert res.exit_code == 0, res.output
    assert "40 of 42 items have predictions" in res.output
    assert "2 of 42 GenAI-Bench items have no judge result" in res.output
    assert "1 judge results carry a human_vote that differs" in res.output
    assert "67.50%" in res.output


def test_cli_judge_results_with_another_benchmark_is_refused(tmp_path):
    path = _judge_file(tmp_path / "pairwise.jsonl")
    res = _invoke("--benchmark", "ebench", "--predictions", path)
    assert res.exit_code != 0
    assert "--benchmark genai-bench" in res.output


# --------------------------------------------------------------------------- pointwise


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    root = tmp_path_factory.mktemp("shapes")
    generate(root, ShapesEditConfig(n=48, k=4, size=96))
    return root


def _truth(bench):
    return {s.id: dict(s.scores) for s in bench.samples}


def test_pointwise_ground_truth_is_perfect(shapes):
    bench = load_benchmark(shapes)
    res = evaluate_predictions(bench, _truth(bench))
    assert res.protocol == "pointwise"
    assert set(res.pairs) == set(bench.dimensions) == {
        "visual_quality", "instruction_alignment", "content_preservation", "overall"}
    for dim in bench.dimensions:
        assert res.value("srcc", dim) == pytest.approx(1.0)
        assert res.value("plcc", dim) == pytest.approx(1.0)
        assert res.value("plcc_logistic4", dim) == pytest.approx(1.0, abs=1e-6)
        assert res.value("group_srcc", dim) == pytest.approx(1.0)
    assert res.coverage.n_items == res.coverage.n_predicted == 48


def test_pointwise_noise_matches_scipy(shapes):
    bench = load_benchmark(shapes)
    rng = np.random.default_rng(0)
    preds = {s.id: {d: v + rng.normal(0, 0.7) for d, v in s.scores.items()} for s in bench.samples}
    res = evaluate_predictions(bench, preds)
    for dim in bench.dimensions:
        p = [preds[s.id][dim] for s in bench.samples]
        t = [s.scores[dim] for s in bench.samples]
        assert res.value("srcc", dim) == pytest.approx(stats.spearmanr(p, t).statistic, abs=1e-12)
        assert res.value("plcc", dim) == pytest.approx(stats.pearsonr(p, t).statistic, abs=1e-12)
        assert res.value("krcc", dim) == pytest.approx(stats.kendalltau(p, t).statistic, abs=1e-12)
        assert res.value("srcc", dim) < 1.0 and res.value("plcc", dim) < 1.0
        assert res.row("rmse_logistic4", dim).value > 0
    flipped = {i: {d: -v for d, v in row.items()} for i, row in preds.items()}
    lower = evaluate_predictions(bench, flipped, higher_better=False)
    assert lower.value("srcc", "overall") == pytest.approx(res.value("srcc", "overall"))
    assert lower.value("group_srcc", "overall") == pytest.approx(res.value("group_srcc", "overall"))


def test_pointwise_missing_predictions(shapes):
    bench = load_benchmark(shapes)
    preds = _truth(bench)
    gone = [s.id for s in bench.samples[:5]]
    for i in gone:
        del preds[i]
    preds["not-a-sample"] = {"overall": 3.0}
    with pytest.raises(BenchError, match=re.escape(repr(gone[0]))):
        evaluate_predictions(bench, preds)
    res = evaluate_predictions(bench, preds, missing="drop")
    cov = res.coverage
    assert (cov.n_items, cov.n_predicted, cov.n_missing, cov.n_unused) == (48, 43, 5, 1)
    assert cov.missing_ids == gone
    assert res.row("srcc", "overall").n == 43 and res.value("srcc", "overall") == pytest.approx(1.0)


def test_pointwise_no_shared_dimension_or_id_is_explained(shapes):
    bench = load_benchmark(shapes)
    with pytest.raises(BenchError, match="no dimension in common"):
        evaluate_predictions(bench, {s.id: {"harmony": 1.0} for s in bench.samples})
    with pytest.raises(BenchError, match="no prediction id matches"):
        evaluate_predictions(bench, {"x": {"overall": 1.0}})


def test_pointwise_through_the_cli_writes_outputs(shapes, tmp_path):
    bench = load_benchmark(shapes)
    rng = np.random.default_rng(1)
    path = tmp_path / "pred.jsonl"
    with open(path, "w") as fh:
        for s in bench.samples:
            noisy = {d: v + rng.normal(0, 0.5) for d, v in s.scores.items()}
            fh.write(json.dumps({"id": s.id, **noisy}) + "\n")
    out = tmp_path / "out"
    res = _invoke("-b", shapes, "-p", path, "-o", out, "--bootstrap", "20")
    assert res.exit_code == 0, res.output
    assert "plcc_logistic4" in res.output and "group_srcc" in res.output
    for name in ("results.json", "results.csv", "report.html"):
        assert (out / name).is_file()
    html = (out / "report.html").read_text()
    assert len(re.findall(r"data:image/png;base64,", html)) == 4  # one scatter per dimension
    assert "http://" not in html and "https://" not in html
    data = json.loads((out / "results.json").read_text())
    srcc_rows = [r for r in data["rows"] if r["metric"] == "srcc"]
    assert len(srcc_rows) == 4 and all(r["ci_low"] <= r["value"] <= r["ci_high"] for r in srcc_rows)


def test_cli_registered_name_needs_root(tmp_path):
    path = tmp_path / "pred.csv"
    path.write_text("id,overall\na,1\n")
    res = _invoke("--benchmark", "ebench", "--predictions", path)
    assert res.exit_code != 0 and "--root" in res.output


def _ntire_table(tmp_path, n=40, seed=0):
    rng = np.random.default_rng(seed)
    path = tmp_path / "mos.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "edited", "split", "visual_quality", "editing_fidelity"])
        for i in range(n):
            w.writerow([f"e{i}", f"img/{i}.png", "in" if i < 28 else "out",
                        *np.round(rng.uniform(0, 100, 2), 3)])
    return path


def test_ntire_final_score(tmp_path):
    bench = load_benchmark("ntire-xaigc", root=_ntire_table(tmp_path))
    rng = np.random.default_rng(2)
    preds = {s.id: {d: v + rng.normal(0, 20) for d, v in s.scores.items()} for s in bench.samples}
    res = evaluate_predictions(bench, preds)

    def s_of(split):
        vals = []
        for dim in bench.dimensions:
            kept = [s for s in bench.samples if s.meta["split"] == split]
            p = [preds[s.id][dim] for s in kept]
            t = [s.scores[dim] for s in kept]
            vals.append((stats.spearmanr(p, t).statistic + stats.pearsonr(p, t).statistic) / 2)
        return float(np.mean(vals))

    s_in, s_out = s_of("in"), s_of("out")
    assert res.value("ntire_s_in", "all", subset="in") == pytest.approx(s_in, abs=1e-12)
    assert res.value("ntire_s_out", "all", subset="out") == pytest.approx(s_out, abs=1e-12)
    assert res.value("ntire_final", "all") == pytest.approx(0.7 * s_in + 0.3 * s_out, abs=1e-12)


# --------------------------------------------------------------------------- multi-way


def _editreward_groups(tmp_path):
    """EditReward-Bench group records (as eval_bench.py reads them): 4 groups of K=3,
    2 of K=4, 3 of K=2 (one a human tie)."""
    groups = [
        ("C>A>B", [2, 1, 3]),      # right
        ("A>B>C", [3, 1, 2]),      # wrong: B below C
        ("B>C>A", [0, 5, 4]),      # right
        ("A>C>B", [1, 1, 1]),      # wrong: all tied
        ("D>C>B>A", [1, 2, 3, 4]),  # right
        ("A>B>C>D", [4, 3, 1, 2]),  # wrong: C below D
        ("A>B", [2, 1]),           # right
        ("A=B=Good", [1, 1]),      # right at eps=0 (exact tie)
        ("B>A", [2, 1]),           # wrong
    ]
    records, preds = [], {}
    for g, (ranking, scores) in enumerate(groups):
        paths = [f"g{g}/{chr(65 + i)}.png" for i in range(len(scores))]
        records.append({"prompt": f"edit {g}", "path_src": f"g{g}/src.png",
                        "paths_generated": paths, "human_vote": {"ranking": ranking}})
        for i, s in enumerate(scores):
            preds[f"g{g}_{chr(65 + i)}"] = {"overall": float(s)}
    path = tmp_path / "editreward.json"
    path.write_text(json.dumps(records))
    return path, preds


def test_multiway_group_accuracy(tmp_path):
    path, preds = _editreward_groups(tmp_path)
    bench = load_benchmark(path)
    assert bench.name == "editreward-bench" and bench.protocol == "multiway"
    res = evaluate_predictions(bench, preds)
    assert res.value("group_accuracy", "overall") == pytest.approx(5 / 9)
    assert res.value("group_accuracy", "overall", subset="K=2") == pytest.approx(2 / 3)
    assert res.value("group_accuracy", "overall", subset="K=3") == pytest.approx(2 / 4)
    assert res.value("group_accuracy", "overall", subset="K=4") == pytest.approx(1 / 2)
    assert res.row("group_accuracy", subset="K=3").n == 4
    # 26 decided pairs, 20 ordered right; the human tie is left out
    assert res.value("accuracy_without_ties") == pytest.approx(20 / 26)
    cal = res.row("tie_calibrated_accuracy")
    assert 0 <= cal.value <= 1 and "seeded 50/50 split of groups" in cal.note
    assert res.row("tie_calibrated_accuracy_optimistic").note.startswith("optimistic")


def test_multiway_missing_candidate_drops_its_group(tmp_path):
    path, preds = _editreward_groups(tmp_path)
    bench = load_benchmark(path)
    del preds["g1_B"]  # g1 was wrong anyway
    with pytest.raises(BenchError, match="'g1_B'"):
        evaluate_predictions(bench, preds)
    res = evaluate_predictions(bench, preds, missing="drop")
    assert res.value("group_accuracy", "overall") == pytest.approx(5 / 8)
    assert res.coverage.missing_ids == ["g1_B"]
    assert any("left out whole" in n for n in res.notes)


def test_multiway_eps_makes_close_scores_ties(tmp_path):
    path, preds = _editreward_groups(tmp_path)
    preds["g7_B"] = {"overall": 1.05}  # the human tie, now 0.05 apart
    bench = load_benchmark(path)
    exact = evaluate_predictions(bench, preds)
    assert exact.value("group_accuracy", subset="K=2") == pytest.approx(1 / 3)
    banded = evaluate_predictions(bench, preds, eps=0.1)
    assert banded.value("group_accuracy", subset="K=2") == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- pairwise


def test_editscore_strict_accuracy_macro_over_tasks(tmp_path):
    rows = [  # preferred output first
        ("color_alter", ["c1", "c2"], 3.0, 1.0),    # right
        ("color_alter", ["c3", "c4"], 1.0, 2.0),    # wrong
        ("subject-add", ["s1", "s2"], 5.0, 4.0),    # right
        ("subject-add", ["s3", "s4"], 2.0, 2.0),    # tie: wrong
        ("subject-add", ["s5", "s6"], 4.0, 0.0),    # right
    ]
    records, preds = [], {}
    for task, keys, pa, pb in rows:
        records.append({"key": keys, "instruction": "edit", "input_image": "in.png",
                        "output_images": [f"{k}.png" for k in keys], "task_type": task,
                        "dimension": "prompt_following"})
        preds[keys[0]], preds[keys[1]] = {"SC": pa}, {"SC": pb}
    path = tmp_path / "editscore.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    bench = load_benchmark(path)
    assert bench.name == "editscore-bench"
    res = evaluate_predictions(bench, preds)  # "SC" is an alias of instruction_alignment
    dim = "instruction_alignment"
    assert res.value("strict_accuracy", dim) == pytest.approx((1 / 2 + 2 / 3) / 2)  # not 3/5
    assert res.value("strict_accuracy", dim, subset="color_alter") == pytest.approx(0.5)
    assert res.value("strict_accuracy", dim, subset="subject-add") == pytest.approx(2 / 3)


def test_genai_bench_items_with_numeric_predictions(tmp_path):
    items = [("leftvote", 2.0, 1.0), ("tievote", 1.0, 1.0), ("bothbad_vote", 0.5, 0.5),
             ("rightvote", 2.0, 1.0)]
    path = tmp_path / "items.jsonl"
    with open(path, "w") as fh:
        for i, (vote, _, _) in enumerate(items):
            fh.write(json.dumps({"instruct_prompt": "edit", "source_image": "s.png",
                                 "left_output_image": f"{i}l.png",
                                 "right_output_image": f"{i}r.png", "vote_type": vote}) + "\n")
    bench = load_benchmark("genai-bench", root=path)
    preds = {}
    for i, (_, left, right) in enumerate(items):
        preds[f"{i}_left"], preds[f"{i}_right"] = {"overall": left}, {"overall": right}
    res = evaluate_predictions(bench, preds)
    assert res.value("accuracy_genai") == pytest.approx(0.75)  # a score tie is [[A=B]]
    assert res.value("accuracy_without_ties") == pytest.approx(0.5)
    assert res.value("accuracy_genai", subset="rightvote") == 0.0


def test_pairwise_report_has_bar_chart(tmp_path):
    path, preds = _editreward_groups(tmp_path)
    res = evaluate_predictions(load_benchmark(path), preds, n_boot=50)
    paths = write_bench_outputs(res, tmp_path / "out")
    html = paths["html"].read_text()
    # per K: group accuracy, and EditReward's as-published group and pair accuracies
    assert html.count("data:image/png;base64,") == 3
    assert "http://" not in html and "https://" not in html


# --------------------------------------------------------------------------- protocol table


def test_protocol_table_is_complete():
    from ieqa.registry import BENCHMARKS

    assert set(BENCHMARKS.names()) <= set(PROTOCOLS)
    rows = protocol_table()
    assert all(r["source"] and r["label"] for r in rows)
    names = {(r["benchmark"], r["protocol"], r["metric"]) for r in rows}
    assert ("genai-bench", "judge", "accuracy_official") in names
    assert ("editreward-bench", "multiway", "tie_calibrated_accuracy_optimistic") in names
    assert ("ntire-xaigc", "pointwise", "ntire_final") in names
    assert {r["plcc"] for r in rows if r["metric"].startswith("plcc")} == {"raw", "logistic4"}
    specs, generic = protocol_for("my-own-bench", "pointwise")
    assert generic and specs == PROTOCOLS["manifest"]["pointwise"]
    md = protocol_markdown()
    assert md.startswith("| benchmark | protocol | metric |") and md.count("\n") == len(rows) + 2
