"""Text files whose bytes cannot be read as their format says — a byte that is not UTF-8 on
the first or a later line, gzip data that is not gzip or is cut short — end in a one-line
error naming the file and the line, from every reader and from the CLI, never a traceback
(one decoding path: :func:`ieqa.data.textfile.text_lines`)."""

from __future__ import annotations

import gzip
import json

import pytest
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.errors import IeqaError

ROW = {"id": "a", "source": "s.png", "edited": "e.png", "instruction": "make it red",
       "overall": 3.0}


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _hostile(tmp_path):
    """name -> (path, what the message must say)."""
    good = _jsonl([{**ROW, "id": f"r{i}"} for i in range(6)])
    late = good.replace(b'"r4", "source": "s.png"', b'"r4", "source": "caf\xe9.png"')
    whole = gzip.compress(good)
    files = {
        "latin-1 line 1": (b'{"id": "a", "source": "caf\xe9.png"}\n', "line 1 is not UTF-8"),
        "latin-1 line 5": (late, "line 5 is not UTF-8"),
        "not gzip": (b"\x1f\x8b\x08\x00garbage", "gzip data is damaged or cut short"),
        "cut gzip": (whole[: len(whole) // 2], "gzip data is damaged or cut short"),
    }
    out = {}
    for k, (name, (data, says)) in enumerate(files.items()):
        path = tmp_path / (f"f{k}.jsonl.gz" if "gzip" in name else f"f{k}.jsonl")
        path.write_bytes(data)
        out[name] = (path, says)
    csv = tmp_path / "manifest.csv"
    csv.write_bytes(b"id,source,edited,instruction,overall\nr0,s.png,e.png,red,3\n"
                    b"r1,s.png,e.png,red,4\nr2,s.png,e\xff.png,red,5\n")
    out["latin-1 csv line 4"] = (csv, "line 4 is not UTF-8")
    return out


READERS = {
    "read_manifest": lambda p: __import__("ieqa.data.manifest", fromlist=["x"]).read_manifest(p),
    "iter_score_rows": lambda p: list(__import__("ieqa.data.scorefile", fromlist=["x"])
                                      .iter_score_rows(p)),
    "read_predictions": lambda p: __import__("ieqa.bench.predictions", fromlist=["x"])
    .read_predictions(p),
    "resolve_input": lambda p: list(__import__("ieqa.data.resolve", fromlist=["x"])
                                    .resolve_input(str(p), None)[0]),
    "curate source": lambda p: list(__import__("ieqa.curate.source", fromlist=["x"])
                                    .ScoredSource(p).rows()),
    "read_rankings": lambda p: __import__("ieqa.human.rankings", fromlist=["x"])
    .read_rankings(p),
}


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_names_the_file_and_the_line(tmp_path, reader):
    for name, (path, says) in _hostile(tmp_path).items():
        if name.startswith("latin-1 csv") and reader in ("read_rankings", "curate source"):
            continue  # JSONL and Parquet only (curation says so for a .csv)
        with pytest.raises(IeqaError) as got:
            READERS[reader](path)
        message = str(got.value)
        assert str(path) in message, (reader, name, message)
        # the decoding problem itself, or (a reader that looked at the first row and found
        # another kind of file) a message about that row, never a traceback's text
        assert says in message or "line" in message, (reader, name, message)


@pytest.mark.parametrize("command", [["score", "{p}", "-o", "{out}", "--scorer", "classic"],
                                     ["curate", "{p}", "-o", "{out}", "--keep", "top-k=1"],
                                     ["bench", "-b", "{shapes}", "-p", "{p}"]])
def test_the_commands_stop_on_the_named_line(tmp_path, command):
    """Each command raises the one-line error (``ieqa``'s entry point prints it and exits
    1, below) before it writes anything."""
    from ieqa.data.shapesedit import ShapesEditConfig, generate

    shapes = generate(tmp_path / "shapes", ShapesEditConfig(n=2, k=2, seed=1, size=64),
                      progress=False).parent
    for name, (path, says) in _hostile(tmp_path).items():
        if name.startswith("latin-1 csv") and command[0] == "curate":
            continue
        out = tmp_path / f"out-{name.replace(' ', '-')}.jsonl"
        res = CliRunner().invoke(app, [a.format(p=path, out=out, shapes=shapes)
                                       for a in command])
        assert isinstance(res.exception, IeqaError), (command[0], name, res.output)
        assert says in str(res.exception) and str(path) in str(res.exception), \
            (command[0], name, str(res.exception))
        assert not out.exists()


def test_the_console_script_prints_one_line_and_exits_1(tmp_path):
    import os
    import subprocess
    import sys

    path, says = _hostile(tmp_path)["latin-1 line 5"]
    env = {**os.environ, "COLUMNS": "400"}
    res = subprocess.run([sys.executable, "-m", "ieqa", "score", str(path), "-o",
                          str(tmp_path / "o.jsonl"), "--scorer", "classic"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stderr
    lines = [line for line in (res.stdout + res.stderr).splitlines() if line.strip()]
    assert lines == [f"error: {path}: line 5 is not UTF-8 (byte 0xe9 at column 28): save the "
                     "file as UTF-8 and run again"], lines


def test_lone_carriage_returns_end_lines_as_before(tmp_path):
    """Old Mac line ends (a lone \\r), Windows ones and a BOM read as the text mode did."""
    from ieqa.bench.predictions import read_predictions
    from ieqa.data.textfile import text_lines

    for end in (b"\r", b"\r\n", b"\n"):
        path = tmp_path / f"p{len(end)}{end[-1]}.csv"
        path.write_bytes(b"\xef\xbb\xbfid,overall" + end + b"a,0.5" + end + b"b,0.7" + end)
        assert read_predictions(path) == {"a": {"overall": 0.5}, "b": {"overall": 0.7}}
        jsonl = tmp_path / f"p{len(end)}{end[-1]}.jsonl"
        jsonl.write_bytes(b'{"id": "a", "overall": 1}' + end + b'{"id": "b", "overall": 2}' + end)
        assert read_predictions(jsonl) == {"a": {"overall": 1.0}, "b": {"overall": 2.0}}
        assert [n for n, _ in text_lines(jsonl)] == [1, 2]


def test_a_bad_first_manifest_line_is_named_as_a_later_one_is(tmp_path):
    from ieqa.data.resolve import resolve_input

    path = tmp_path / "m.jsonl"
    path.write_text('\n{"id": "a", "source": "s.png" "edited": "e.png"}\n{"id": "b"}\n')
    with pytest.raises(IeqaError, match=r"m.jsonl: line 2: not valid JSON \(Expecting ',' "
                                        r"delimiter, column 31\)"):
        resolve_input(str(path), None)
    path.write_text('[1, 2]\n')
    with pytest.raises(IeqaError, match="line 1: expected a JSON object, got list"):
        resolve_input(str(path), None)


@pytest.mark.parametrize("model", ["./nothere", "/no/such/folder", "~/nothere-ieqa",
                                   "a/b/c"])
def test_a_model_written_as_a_path_that_does_not_exist_says_so(model):
    from ieqa.backends.processor import BackendError, check_local_path

    with pytest.raises(BackendError, match="no such folder; give the folder of a downloaded "
                                           "checkpoint, or a hub id"):
        check_local_path(model)
    check_local_path("Qwen/Qwen2.5-VL-7B-Instruct")  # a hub id: the hub decides
    check_local_path("tiny-vlm")
