"""``ieqa bench-explanations`` and :func:`ieqa.explain.bench_explanations` on small files."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from chat_server import Reply
from ieqa.cli import app
from ieqa.explain import (
    ExplainMetricError,
    bench_explanations,
    mean_std,
    meteor,
    read_predictions,
    read_references,
    rouge1,
)

from .tiny_encoder import build_tiny_encoder

pytest.importorskip("rouge_score")
runner = CliRunner()

REFS = [
    {"id": "e1", "instruction": "make the cat red",
     "explanation": "The prompt is followed: the cat is red. The harmony is good. The edit "
                    "looks natural. Overall good.",
     "sections": {"prompt_completion": "The prompt is followed: the cat is red.",
                  "harmony": "The harmony is good.", "naturalness": "The edit looks natural.",
                  "overall": "good"}},
    {"id": "e2", "explanation": "The prompt is not followed: the dog is still there. "
                                "Overall bad.",
     "sections": {"prompt_completion": "The prompt is not followed.", "harmony": None,
                  "naturalness": "", "overall": "bad"}},
]
RUN1 = {"e1": "The cat is red so the prompt is followed. Harmony good, looks natural. Good.",
        "e2": "The dog is still there: prompt not followed. Overall bad."}
RUN2 = {"e1": "The prompt is followed. The cat is blue. Overall fake.", "e2": None}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def files(tmp_path):
    refs = write_jsonl(tmp_path / "refs.jsonl", REFS)
    r1 = write_jsonl(tmp_path / "run1.jsonl", [{"id": k, "explanation": v} for k, v in RUN1.items()])
    r2 = write_jsonl(tmp_path / "run2.jsonl", [{"id": k, "text": v} for k, v in RUN2.items()])
    return refs, r1, r2


def test_readers_and_skip_flags(files, tmp_path):
    refs = read_references(files[0])
    assert refs["e1"].has_naturalness and refs["e1"].has_harmony
    assert not refs["e2"].has_naturalness and not refs["e2"].has_harmony  # null / empty
    assert refs["e1"].instruction == "make the cat red" and refs["e2"].instruction is None
    assert read_predictions(files[2]) == {"e1": RUN2["e1"], "e2": None}
    flags = write_jsonl(tmp_path / "f.jsonl", [{"id": 1, "explanation": "x",
                                                "has_harmony": False}])
    assert read_references(flags)["1"].has_harmony is False
    assert read_references(flags)["1"].has_naturalness is True  # nothing says otherwise
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "explanation": "x"}\n{"id": "a", "explanation": "y"}\n')
    with pytest.raises(ExplainMetricError, match=r"bad.jsonl: line 2: id 'a' repeats"):
        read_predictions(bad)
    bad.write_text('{"explanation": "x"}\n')
    with pytest.raises(ExplainMetricError, match="has no 'id'"):
        read_references(bad)


def test_bench_means_and_runs(files):
    refs = read_references(files[0])
    res = bench_explanations([read_predictions(files[1]), read_predictions(files[2])], refs,
                             use_wordnet=False)
    r1, r2 = res.runs
    want_r1 = (rouge1(RUN1["e1"], REFS[0]["explanation"])
               + rouge1(RUN1["e2"], REFS[1]["explanation"])) / 2
    assert r1.metrics["rouge1"] == pytest.approx(want_r1)
    assert r2.n_scored == 1 and r2.missing == ["e2"]
    assert r2.metrics["meteor"] == pytest.approx(meteor(RUN2["e1"], REFS[0]["explanation"],
                                                        use_wordnet=False))
    mu, sd = mean_std([r1.metrics["rouge1"], r2.metrics["rouge1"]])
    assert res.summary["rouge1"] == {"mean": pytest.approx(mu), "std": pytest.approx(sd),
                                     "n_runs": 2}
    assert res.config["meteor"]["variant"] == "exact+stem"
    with pytest.raises(ExplainMetricError, match="not in the references"):
        bench_explanations([{"zz": "x"}], refs)


def test_cli_text_metrics_and_embedding(files, tmp_path):
    enc = build_tiny_encoder(tmp_path / "enc")
    refs, r1, r2 = files
    res = runner.invoke(app, ["bench-explanations", str(r1), "-r", str(refs), "--runs", str(r2),
                              "--encoder", str(enc), "--no-wordnet", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "METEOR variant exact+stem" in res.output
    assert "run2.jsonl: 1/2 references with a prediction" in res.output
    for m in ("rouge1", "meteor", "embedding_cosine"):
        assert m in res.output
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert set(data["summary"]) == {"rouge1", "meteor", "embedding_cosine"}
    assert data["config"]["embedding_cosine"]["encoder"] == str(enc)
    assert data["summary"]["rouge1"]["n_runs"] == 2
    rows = list(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    assert [r["metric"] for r in rows] == ["rouge1", "meteor", "embedding_cosine"]
    per = list(csv.DictReader((tmp_path / "out" / "per_sample.csv").open()))
    assert len(per) == 3 and per[0]["run"] == "run1.jsonl"


def _choices(*contents):
    return Reply(body={"id": "x", "object": "chat.completion", "model": "judge",
                       "choices": [{"index": i, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": c}}
                                   for i, c in enumerate(contents)]})


def _vote(pa, lna, gha, overall):
    return json.dumps({"PA": pa, "LNA": lna, "GHA": gha, "Overall": overall})


def test_cli_judge_against_local_server(files, tmp_path, server):
    refs, r1, _ = files
    server.plan = [
        _choices(_vote(2, 2, 1, 2), _vote(2, 1, 1, 2), _vote(1, 1, 2, 1), _vote(1, 2, 2, 1),
                 _vote(0, 0, 0, 0)),
        _choices(*[_vote(2, 0, 0, 1)] * 4, "unsure"),
    ]
    res = runner.invoke(app, ["bench-explanations", str(r1), "-r", str(refs), "--judge-model",
                              "judge", "--judge-base-url", server.url, "--judge-option",
                              "max_retries=0", "--judge-option", "max_concurrency=1",
                              "--min-votes", "4", "-o", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    # e1: PA 2,2,1,1,0 -> 2; LNA 2,1,1,2,0 -> 2; GHA 1,1,2,2,0 -> 2; Overall 2,2,1,1,0 -> 2
    # e2: 4 readable votes (>= --min-votes 4): PA 2, Overall 1; LNA/GHA skipped (no analysis)
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    judge = data["runs"][0]["judge"]
    assert judge["mean"] == {"PA": 2.0, "LNA": 2.0, "GHA": 2.0, "Overall": 1.5}
    assert judge["n_skipped"] == {"PA": 0, "LNA": 1, "GHA": 1, "Overall": 0}
    assert judge["votes_failed"] == 1 and judge["config"]["min_votes"] == 4
    assert "1 of 10 votes unreadable" in res.output
    assert data["summary"]["judge_Overall"]["mean"] == 1.5


def test_cli_usage_errors(files):
    refs, r1, _ = files
    res = runner.invoke(app, ["bench-explanations", str(r1), "-r", str(refs),
                              "--judge-base-url", "http://127.0.0.1:9/v1"])
    assert res.exit_code == 2 and "--judge-model" in res.output
    res = runner.invoke(app, ["bench-explanations", str(r1), "-r", str(refs), "--votes", "3",
                              "--min-votes", "4", "--judge-model", "j"])
    assert res.exit_code == 2 and "exceeds" in res.output
