"""Editor benchmarks register themselves (issue 42, part 5): ``bench-editor``, its Python API
and ``ieqa list benchmarks`` read :data:`ieqa.registry.EDITOR_BENCHMARKS`, so a benchmark of
one's own is one class and one registration, with no edit to a shared file."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ieqa.bench.editor import PROTOCOLS, bench_editor, write_editor_outputs
from ieqa.bench.editor.gedit import GEditProtocol
from ieqa.bench.editor.protocol import register_editor_benchmark
from ieqa.bench.errors import BenchError
from ieqa.cli import app
from ieqa.registry import EDITOR_BENCHMARKS
from ieqa.scorers.base import Scorer, ScoreResult, ScorerInfo
from ieqa.testing.editor_bench import build_gedit_fixture, gedit_fixture_items, write_gedit_outputs

BUILT_IN = {"emu-edit", "gedit-bench", "imgedit-bench", "kris-bench", "magicbrush", "risebench",
            "unireditbench"}


class HalfJudge(Scorer):
    """A stand-in judge: SC = PQ = the number in the instruction's last word, or 5."""

    info = ScorerInfo("half-judge", "a stand-in judge", "vlm",
                      ("instruction_alignment", "visual_quality"), higher_better=True,
                      needs_source=True, factory="tests:none", score_range=(0, 10))

    def score_sample(self, sample):  # noqa: ANN001, ANN201
        last = sample.instruction.split()[-1]
        value = float(last) if last.isdigit() else 5.0
        return ScoreResult(sample.id, scores={"instruction_alignment": value,
                                              "visual_quality": value})


@pytest.fixture
def toy():
    """A toy editor benchmark, registered from this file only: GEdit-Bench's reading and
    aggregation under another name (a real one would bring its own loader too)."""

    @register_editor_benchmark
    class ToyBench(GEditProtocol):
        """A toy editor benchmark of the registry test"""

        name = "toy-bench"

    yield ToyBench
    EDITOR_BENCHMARKS.remove("toy-bench")


def test_the_built_in_editor_benchmarks_are_registered_and_listed() -> None:
    assert BUILT_IN <= set(EDITOR_BENCHMARKS.names()) and BUILT_IN <= set(PROTOCOLS)
    res = CliRunner().invoke(app, ["list", "benchmarks"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    for name in BUILT_IN | {"genai-bench", "editreward-bench"}:
        assert name in text, name
    assert "editor benchmark (ieqa bench-editor): GEdit-Bench; 11 task types" in text


def test_a_benchmark_registered_elsewhere_runs_in_bench_editor_and_is_listed(tmp_path, toy) -> None:
    items = gedit_fixture_items(per_type=1)
    data = build_gedit_fixture(tmp_path / "data", items)
    outputs = write_gedit_outputs(tmp_path / "editor", items)
    assert "toy-bench" in PROTOCOLS and isinstance(PROTOCOLS["toy-bench"], toy)
    result = bench_editor("toy-bench", {"mine": outputs}, HalfJudge(), tmp_path / "out",
                          data=data, languages=["en"], progress=False, n_boot=10)
    assert result.results["benchmark"] == "toy-bench"
    en = result.results["editors"]["mine"]["en"]
    assert en["coverage"]["scored"] == len(items) == 11
    # the toy judge's SC = PQ = 5 on every item: GEdit-Bench's O = sqrt(SC·PQ) = 5
    assert en["item_mean"]["G_O"] == pytest.approx(5.0)
    write_editor_outputs(result, tmp_path / "out")
    assert json.loads((tmp_path / "out" / "results.json").read_text())["benchmark"] == "toy-bench"
    res = CliRunner().invoke(app, ["list", "benchmarks"])
    assert "A toy editor benchmark of the registry test" in " ".join(res.output.split())
    # and once it is gone, the name is unknown again, with the known ones listed
    EDITOR_BENCHMARKS.remove("toy-bench")
    with pytest.raises(BenchError, match="unknown editor benchmark 'toy-bench'; choose one of "
                                         "emu-edit, gedit-bench"):
        bench_editor("toy-bench", {"mine": outputs}, HalfJudge(), tmp_path / "o2", data=data)


def test_generate_finds_a_registered_benchmark_by_its_detector_and_writes_its_layout(
        tmp_path) -> None:
    """``ieqa generate --data PATH`` asks every registered benchmark's ``detect``: a toy
    benchmark that claims folders holding ``toy.marker`` is generated for in its own layout,
    its ``generation_skip`` is honoured, and a path two detectors claim is refused."""
    from types import SimpleNamespace

    from PIL import Image

    from ieqa.curate.generate import GenerateError, generate_candidates, read_generation_items

    items = gedit_fixture_items(per_type=1)

    @register_editor_benchmark
    class MarkedBench(GEditProtocol):
        """A toy benchmark found by its marker file"""

        name = "marked-bench"

        @classmethod
        def detect(cls, path):  # noqa: ANN001, ANN206
            return (path / "toy.marker").is_file()

        def read_items(self, data, languages, work_dir):  # noqa: ANN001, ANN201
            return super().read_items(gedit, languages, work_dir)  # its data lies elsewhere

        def output_path(self, folder, item):  # noqa: ANN001, ANN201
            from pathlib import Path

            return Path(folder) / "toy" / f"{item.id}.png"

        def generation_skip(self, item):  # noqa: ANN001, ANN201
            return "a toy skip" if item.task_type == "background_change" else None


    try:
        gedit = build_gedit_fixture(tmp_path / "gedit", items)
        folder = tmp_path / "marked"
        folder.mkdir()
        (folder / "toy.marker").write_text("")
        kind, found = read_generation_items(folder, work_dir=tmp_path / "work")
        assert kind == "marked-bench" and len(found) == 11
        assert [i.skip for i in found].count("a toy skip") == 1

        class Echo:
            def __call__(self, *, prompt, image, num_inference_steps, generator, **options):  # noqa: ANN001, ANN204
                return SimpleNamespace(images=[Image.new("RGB", image.size)])

        record = generate_candidates(Echo(), folder, tmp_path / "out", steps=1, progress=False)
        assert (record["generated"], len(record["skipped"])) == (10, 1)
        toy_out = tmp_path / "out" / "toy"
        written = sorted(p.relative_to(toy_out).as_posix() for p in toy_out.rglob("*.png"))
        assert written == sorted(f"{i.id}.png" for i in found if i.skip is None)
        # GEdit-Bench's own data is claimed by gedit-bench alone, until a second detector
        # (the toy of the fixture inherits GEdit-Bench's) claims it too
        assert read_generation_items(gedit, work_dir=tmp_path / "w")[0] == "gedit-bench"

        @register_editor_benchmark
        class Copycat(GEditProtocol):
            """GEdit-Bench's detector under another name"""

            name = "copycat-bench"

        with pytest.raises(GenerateError, match="holds the data of copycat-bench and "
                                                "gedit-bench; give one benchmark's own"):
            read_generation_items(gedit, work_dir=tmp_path / "w")
    finally:
        EDITOR_BENCHMARKS.remove("marked-bench")
        EDITOR_BENCHMARKS.remove("copycat-bench")
