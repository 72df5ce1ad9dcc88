"""``viescore`` and ``unifiedreward-edit``: the request each sends equals the one its
authors' code builds from the same prompt file, byte for byte.

The expected requests are built here the way the authors' code builds them, from stand-in
prompt files with the authors' paths and constant names (ieqa's wording): VIEScore joins
its context, edit rule and SC scale with line breaks, puts the instruction in place of
``<instruction>``, and sends ``{"model", "messages": [{"role": "user", "content": [text,
images...]}], "max_tokens": 1400}`` with each image a JPEG at Pillow's default quality
(``requests``' ``json=`` serialises it with ``json.dumps``). UnifiedReward-Edit's script
evaluates ``"..." + f"{instruction}\\n"`` (evaluated here by Python itself on the stand-in)
and sends the images first, as JPEG quality 95, with ``do_sample: false`` and ``max_tokens:
4096``.
"""

from __future__ import annotations

import ast
import base64
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

from chat_server import FakeServer, Reply, serve
from ieqa import EditSample, create_scorer
from ieqa.prompts.answers import write_vie_answer
from ieqa.scorers.base import ScorerError
from ieqa.testing.releases import STANDIN_MARKER


class Answers(FakeServer):
    """Answers every request with two scores: SC-like for prompts naming the instruction."""

    def __init__(self, sc: tuple[float, float], pq: tuple[float, float]) -> None:
        super().__init__()
        self.sc, self.pq = sc, pq

    def next_reply(self, body):
        texts = [p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text"]
        scores = self.sc if any("cube" in t for t in texts) else self.pq
        return Reply(body={"id": "x", "object": "chat.completion", "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": write_vie_answer(scores, "ok")}}]})


def _image(seed: int, size: tuple[int, int]) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def _jpeg_url(image: Image.Image, **save: object) -> str:
    buf = io.BytesIO()
    ImageOps.exif_transpose(image).convert("RGB").save(buf, format="JPEG", **save)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("utf-8")


def _constants(path: Path, **names: object) -> dict[str, str]:
    """The module-level strings of a prompt file, evaluated by Python with ``names`` bound
    (the file is ours: a stand-in)."""
    tree = ast.parse(path.read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            value = eval(compile(ast.Expression(node.value), str(path), "eval"),  # noqa: S307
                         {}, dict(names))
            if isinstance(value, str):
                out[node.targets[0].id] = value
    return out


@pytest.fixture
def edit() -> EditSample:
    return EditSample(id="e1", source=_image(1, (64, 48)), edited=_image(2, (40, 70)),
                      instruction="make the cube red")


def test_viescore_request_is_the_published_one_byte_for_byte(tmp_path, edit):
    from ieqa.scorers.published.viescore import PROMPT_SOURCES
    from ieqa.testing.releases import write_prompt_standins

    prompts = write_prompt_standins(tmp_path / "vie", PROMPT_SOURCES)
    with serve(Answers(sc=(8, 6), pq=(9, 4))) as judge:
        scorer = create_scorer("viescore", base_url=judge.url, model="gpt-4o-2024-05-13",
                               prompts=str(prompts))
        result = scorer.score([edit])[0]
    c = _constants(prompts / "viescore/vie_prompts.py")
    sc_text = "\n".join([c["_context_no_delimit"], c["_prompts_0shot_two_image_edit_rule"],
                         c["_prompts_0shot_tie_rule_SC"]]).replace("<instruction>",
                                                                   edit.instruction)
    pq_text = "\n".join([c["_context_no_delimit"], c["_prompts_0shot_rule_PQ"]])

    def payload(text: str, images: list[Image.Image]) -> bytes:
        content = [{"type": "text", "text": text}]
        content += [{"type": "image_url", "image_url": {"url": _jpeg_url(im)}} for im in images]
        return json.dumps({"model": "gpt-4o-2024-05-13",
                           "messages": [{"role": "user", "content": content}],
                           "max_tokens": 1400}).encode()

    sent = sorted(q.raw for q in judge.requests)
    assert sent == sorted([payload(sc_text, [edit.source, edit.edited]),
                           payload(pq_text, [edit.edited])])
    # VIEScore's rules on 0-10: SC = min(8, 6), PQ = min(9, 4), O = sqrt(SC * PQ)
    assert result.scores == pytest.approx({"instruction_alignment": 8.0,
                                           "content_preservation": 6.0, "sc_min": 6.0,
                                           "visual_quality": 4.0, "overall": 24 ** 0.5})


def test_unifiedreward_edit_request_is_the_published_one(tmp_path, edit):
    folder = tmp_path / "ur"
    script = folder / "UnifiedReward-Edit"
    script.mkdir(parents=True)
    # stand-ins shaped as the authors' scripts: a literal plus an f-string over the
    # module-level instruction, and a plain literal; code around them that must not run
    (script / "edit_pointwise_instruction_following.py").write_text(
        'raise SystemExit("parsed, never run")\ninstruction = ""\n'
        'problem = "Stand-in: rate editing success and over-editing, 0 to 25, as '
        '{\\"reasoning\\": ..., \\"score\\": [a, b]}.\\nEditing instruction:" + '
        'f"{instruction}\\n"\n')
    (script / "edit_pointwise_quality.py").write_text(
        'raise SystemExit("parsed, never run")\n'
        'problem = "Stand-in: rate naturalness and artifacts, 0 to 25."\n')
    (folder / STANDIN_MARKER).write_text("stand-ins\n")
    with serve(Answers(sc=(20, 15), pq=(25, 10))) as judge:
        scorer = create_scorer("unifiedreward-edit", base_url=judge.url, prompts=str(folder))
        result = scorer.score([edit])[0]
    following = _constants(script / "edit_pointwise_instruction_following.py",
                           instruction=edit.instruction)["problem"]
    quality = _constants(script / "edit_pointwise_quality.py")["problem"]
    assert following.endswith(f"Editing instruction:{edit.instruction}\n")

    def payload(text: str, images: list[Image.Image]) -> dict:
        content = [{"type": "image_url", "image_url": {"url": _jpeg_url(im, quality=95)}}
                   for im in images]
        content.append({"type": "text", "text": text})
        return {"model": "UnifiedReward", "messages": [{"role": "user", "content": content}],
                "do_sample": False, "max_tokens": 4096}

    # the same JSON document: same keys, same values, the same bytes in every string (the
    # authors' dict lists do_sample before max_tokens; JSON key order carries no meaning)
    def canonical(doc: dict) -> bytes:
        return json.dumps(doc, sort_keys=True).encode()

    sent = sorted(canonical(json.loads(q.raw)) for q in judge.requests)
    assert sent == sorted([canonical(payload(following, [edit.source, edit.edited])),
                           canonical(payload(quality, [edit.edited]))])
    assert result.scores == pytest.approx({"instruction_alignment": 8.0,
                                           "content_preservation": 6.0, "sc_min": 6.0,
                                           "visual_quality": 4.0, "overall": 24 ** 0.5})


def test_published_judges_refuse_what_their_authors_do_not_do(tmp_path, tiny_models):
    from ieqa.scorers.published.viescore import PROMPT_SOURCES as VIE
    from ieqa.testing.releases import write_prompt_standins

    prompts = write_prompt_standins(tmp_path / "vie", VIE)
    with pytest.raises(ScorerError, match="not the published protocol"):
        create_scorer("viescore", backend=__import__("ieqa").backends.TransformersVLM(
            tiny_models["qwen2.5-vl"], device="cpu"), prompts=str(prompts))
    with pytest.raises(Exception, match="on_malformed"):
        create_scorer("viescore", base_url="http://127.0.0.1:9/v1", prompts=str(prompts),
                      on_malformed="midpoint")


def test_a_malformed_viescore_answer_is_an_error_never_a_guess(tmp_path, edit):
    from ieqa.scorers.published.viescore import PROMPT_SOURCES
    from ieqa.testing.releases import write_prompt_standins

    prompts = write_prompt_standins(tmp_path / "vie", PROMPT_SOURCES)
    with serve(FakeServer()) as judge:  # its echo answers are JSON without a score list
        scorer = create_scorer("viescore", base_url=judge.url, prompts=str(prompts))
        result = scorer.score([edit])[0]
    assert result.error.startswith("unreadable answer (2 of 2): pass 0 SC: ")
    assert "no 'score'" in result.error and not result.scores


# ------------------------------------------- GEdit-, ImgEdit-, KRIS- and RISEBench's judges
class ByPrompt(FakeServer):
    """Answers each request by the stand-in prompt it carries (``"Stand-in text for NAME:"``):
    ``answers`` maps NAME to the answer text; any other request gets HTTP 500."""

    def __init__(self, answers: dict[str, str]) -> None:
        super().__init__()
        self.answers = answers

    def next_reply(self, body):
        texts = [p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text"]
        for name, answer in self.answers.items():
            if any(f"Stand-in text for {name}:" in t for t in texts):
                return Reply(body={"id": "x", "object": "chat.completion", "model": body["model"],
                                   "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                       "role": "assistant", "content": answer}}]})
        return Reply(status=500, body={"error": {"message": f"unexpected prompt {texts}"}})


def _standins(tmp_path, module: str) -> Path:
    from importlib import import_module

    from ieqa.testing.releases import write_prompt_standins

    sources = import_module(f"ieqa.scorers.published.{module}").PROMPT_SOURCES
    return write_prompt_standins(tmp_path / module, sources)


def test_gedit_judge_resizes_the_edit_to_the_source_with_bicubic(tmp_path, edit):
    """The released GEdit-Bench code resizes the edit to the source's size with Pillow's
    default filter (bicubic) before both requests; the scores are VIEScore's."""
    prompts = _standins(tmp_path, "gedit_judge")
    with serve(Answers(sc=(7, 9), pq=(3, 5))) as judge:
        scorer = create_scorer("gedit-judge", base_url=judge.url, prompts=str(prompts))
        result = scorer.score([edit])[0]
    resized = edit.edited.convert("RGB").resize(edit.source.size, Image.Resampling.BICUBIC)
    sent = sorted([p["image_url"]["url"] for p in json.loads(q.raw)["messages"][0]["content"]
                   if p["type"] == "image_url"] for q in judge.requests)
    assert sent == sorted([[_jpeg_url(edit.source), _jpeg_url(resized)], [_jpeg_url(resized)]])
    nearest = edit.edited.convert("RGB").resize(edit.source.size, Image.Resampling.NEAREST)
    assert _jpeg_url(nearest) != _jpeg_url(resized)  # the filter shows in the bytes sent
    assert result.scores == pytest.approx({"instruction_alignment": 7.0,
                                           "content_preservation": 9.0, "sc_min": 7.0,
                                           "visual_quality": 3.0, "overall": 21 ** 0.5})


def test_imgedit_judge_scores_are_the_rubric_criteria(tmp_path, edit):
    """ImgEdit-Bench: instruction alignment is the rubric's first criterion, overall the
    mean of the three; the released item score is that mean rounded to 2 decimals."""
    prompts = _standins(tmp_path, "imgedit_judge")
    answer = ("Brief reasoning: the hat is there, a little blurred.\nPrompt Compliance: 2\n"
              "Visual Naturalness: 5\nPhysical & Detail: 4")
    sample = EditSample(id="i1", source=edit.source, edited=edit.edited,
                        instruction=edit.instruction, task="replace")
    with serve(ByPrompt({"replace": answer})) as judge:
        result = create_scorer("imgedit-judge", base_url=judge.url,
                               prompts=str(prompts)).score([sample])[0]
    assert result.error is None, result.error
    assert result.scores == pytest.approx({"instruction_alignment": 2.0, "overall": 11 / 3})
    assert result.raw["criteria"] == [["Prompt Compliance", 2], ["Visual Naturalness", 5],
                                      ["Physical & Detail", 4]]
    assert result.raw["released"]["item_score"] == 3.67


def test_kris_judge_overall_is_the_mean_of_its_judgements(tmp_path, edit):
    """KRIS-Bench: three judgements (1-5) for an ordinary item, four for a knowledge item;
    ``overall`` is the mean of those there are (5 is a valid score)."""
    prompts = _standins(tmp_path, "kris_judge")
    answers = {"prompt_consist": '{"reasoning": "kept", "consistency_score": 5}',
               "prompt_instruction_following": '{"reasoning": "half", "instruction_score": 2}',
               "prompt_dual_evaluation": '{"reasoning": "wrong", "instruction_score": 3, '
                                         '"knowledge_score": 1}',
               "prompt_quality": '{"reasoning": "fine", "quality_score": 4}'}
    common = {"source": edit.source, "edited": edit.edited, "instruction": edit.instruction}
    samples = [EditSample(id="k1", task="color_change", meta={"category": "color_change"},
                          **common),
               EditSample(id="k2", task="biology", meta={"category": "biology",
                                                         "explanation": "leaves are green"},
                          **common)]
    with serve(ByPrompt(answers)) as judge:
        plain, knowledge = create_scorer("kris-judge", base_url=judge.url,
                                         prompts=str(prompts)).score(samples)
    assert plain.error is None and knowledge.error is None, (plain.error, knowledge.error)
    assert plain.scores == pytest.approx({"content_preservation": 5.0,
                                          "instruction_alignment": 2.0, "visual_quality": 4.0,
                                          "overall": 11 / 3})
    assert "knowledge_plausibility" in plain.unavailable
    assert knowledge.scores == pytest.approx({"content_preservation": 5.0,
                                              "instruction_alignment": 3.0,
                                              "visual_quality": 4.0,
                                              "knowledge_plausibility": 1.0, "overall": 13 / 4})


def test_rise_judge_overall_is_the_lowest_judgement(tmp_path, edit):
    """RISEBench: ``overall`` is the minimum of the judgements (5 only when every one is 5:
    solved); a logical item's 0/1 answers become 1/5 (4 * x + 1)."""
    prompts = _standins(tmp_path, "rise_judge")
    answers = {"prompt_consist": "Kept.\n\n**Final Score:** **5**",
               "prompt_reasoning": "Half right.\n\n**Final Score:** **3**",
               "prompt_generation": "Plausible.\n\n**Final Score:** **4**",
               "prompt_logical_cons_ans": "Kept.\n\n**Final Score:** **1**",
               "prompt_logical_txt": "Wrong answer.\n\n**Final Score:** **0**"}
    common = {"source": edit.source, "edited": edit.edited, "instruction": edit.instruction}
    samples = [EditSample(id="r1", task="temporal_reasoning",
                          meta={"category": "temporal_reasoning", "reference": "ripe"}, **common),
               EditSample(id="r2", task="logical_reasoning",
                          meta={"category": "logical_reasoning", "reference_txt": "42"},
                          **common)]
    with serve(ByPrompt(answers)) as judge:
        temporal, logical = create_scorer("rise-judge", base_url=judge.url,
                                          prompts=str(prompts)).score(samples)
    assert temporal.error is None and logical.error is None, (temporal.error, logical.error)
    assert temporal.scores == {"content_preservation": 5.0, "instruction_alignment": 3.0,
                               "visual_quality": 4.0, "overall": 3.0}
    assert logical.scores == {"content_preservation": 5.0, "instruction_alignment": 1.0,
                              "overall": 1.0}


class FirstSCUnreadable(Answers):
    """As :class:`Answers`, but the first SC request gets an answer without scores."""

    def __init__(self, sc: tuple[float, float], pq: tuple[float, float]) -> None:
        super().__init__(sc, pq)
        self.broken = False

    def next_reply(self, body):
        texts = [p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text"]
        with self.lock:
            first = not self.broken and any("cube" in t for t in texts)
            self.broken = self.broken or first
        if first:
            return Reply(body={"id": "x", "object": "chat.completion", "model": body["model"],
                               "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                   "role": "assistant", "content": "I cannot rate this."}}]})
        return super().next_reply(body)


def test_gedit_judge_asks_both_prompts_once_more_when_an_answer_does_not_parse(tmp_path, edit):
    """The released GEdit-Bench code asks both prompts again when an answer does not parse:
    the second answers are scored (sqrt(min(6, 8) * min(5, 7))) and the first kept."""
    prompts = _standins(tmp_path, "gedit_judge")
    with serve(FirstSCUnreadable(sc=(6, 8), pq=(5, 7))) as judge:
        result = create_scorer("gedit-judge", base_url=judge.url,
                               prompts=str(prompts)).score([edit])[0]
        asked = len(judge.requests)
    assert result.error is None, result.error
    assert asked == 4  # both prompts, then both again
    assert result.raw["reasked"][0][0] == "I cannot rate this."
    assert result.scores["overall"] == pytest.approx(30 ** 0.5)
    assert result.scores["sc_min"] == 6.0 and result.scores["visual_quality"] == 5.0


class SCAnswersInTurn(Answers):
    """As :class:`Answers`, but the SC request gets ``texts`` in turn (the last one after)."""

    def __init__(self, texts: list[str], pq: tuple[float, float]) -> None:
        super().__init__((0, 0), pq)
        self.texts, self.sc_asked = texts, 0

    def next_reply(self, body):
        texts = [p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text"]
        if not any("cube" in t for t in texts):
            return super().next_reply(body)
        with self.lock:
            text = self.texts[min(self.sc_asked, len(self.texts) - 1)]
            self.sc_asked += 1
        return Reply(body={"id": "x", "object": "chat.completion", "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": text}}]})


@pytest.mark.parametrize(("reask", "asked", "status", "sc"), [
    (1, 2, "random", None),  # as released: the give-up pass draws for a list without "{"
    (2, 3, "read", 6.0),  # beyond it: asked again until the give-up reading reads it
])
def test_gedit_judge_asks_again_after_the_give_up_pass_only_by_its_reading(tmp_path, edit, reask,
                                                                           asked, status, sc):
    """The second answer ``[6, 8]`` reads on a first try (the minimum, 6) but not on the
    released give-up pass, which draws a random score for an answer without ``{``; a third
    try (``reask_unparsable=2``) is asked for by the give-up reading, not the first one."""
    prompts = _standins(tmp_path, "gedit_judge")
    answers = ["I cannot rate this.", "[6, 8]", write_vie_answer((6, 8), "ok")]
    with serve(SCAnswersInTurn(answers, pq=(5, 7))) as judge:
        result = create_scorer("gedit-judge", base_url=judge.url, prompts=str(prompts),
                               reask_unparsable=reask).score([edit])[0]
        assert len(judge.requests) == 2 * asked
    released = result.raw["released"]
    assert (released["status"], released["sc"], released["asked"]) == (status, sc, asked)


class _VieByInstruction(FakeServer):
    """VIEScore's two requests: SC ``{"score": [7]}`` (one number: VIEScore's reader takes 7,
    ieqa's fails it) for instructions in ``one_number``, else ``[8, 6]``; PQ ``[9, 5]``."""

    def __init__(self, one_number: set[str]) -> None:
        super().__init__()
        self.one_number = one_number

    def next_reply(self, body):
        texts = [p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text"]
        text = " ".join(texts)
        images = sum(p["type"] == "image_url" for p in body["messages"][-1]["content"])
        if images == 1:  # PQ: the edited image alone
            answer = write_vie_answer((9, 5), "ok")
        elif any(i in text for i in self.one_number):
            answer = '{"reasoning": "one number", "score": [7]}'
        else:
            answer = write_vie_answer((8, 6), "ok")
        return Reply(body={"id": "x", "object": "chat.completion", "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": answer}}]})


def test_bench_reports_viescores_released_reading_beside_ieqas(tmp_path):
    """``ieqa bench`` on VIEScore's scores: ieqa's reading leaves out the items whose SC
    answer holds one number; the released reading (VIEScore's reader) takes 7 for them, and
    its metrics are printed after ieqa's and written to ``released-reading/``."""
    from scipy.stats import spearmanr
    from typer.testing import CliRunner

    from ieqa.cli import app
    from ieqa.data.shapesedit import ShapesEditConfig, generate
    from ieqa.scorers.published.viescore import PROMPT_SOURCES
    from ieqa.testing.releases import write_prompt_standins

    manifest = generate(tmp_path / "shapes", ShapesEditConfig(n=12, k=2, seed=3, size=64),
                        progress=False)
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    one = {r["instruction"] for r in rows[::4]}  # every other group's instruction
    prompts = write_prompt_standins(tmp_path / "vie", PROMPT_SOURCES)
    with serve(_VieByInstruction(one)) as judge:
        res = CliRunner().invoke(app, [
            "bench", "-b", str(manifest.parent), "--scorer", "viescore", "-O",
            f"prompts={prompts}", "-O", f"base_url={judge.url}", "-O", "model=gpt-4o",
            "--missing", "drop", "-o", str(tmp_path / "out")])
        asked = len(judge.requests)
    text = " ".join(res.output.split())
    assert res.exit_code == 0, text
    failing = [r for r in rows if r["instruction"] in one]
    assert 0 < len(failing) < len(rows)
    # VIEScore's re-ask: both prompts of an item asked again when its reader cannot read an
    # answer; {"score": [7]} it reads, so nothing is asked twice
    assert asked == 2 * len(rows)
    assert "official: the same metrics over the released code's reading" in text
    ieqa_res = json.loads((tmp_path / "out" / "results.json").read_text())
    released = json.loads((tmp_path / "out" / "released-reading" / "results.json").read_text())
    assert ieqa_res["coverage"]["n_predicted"] == len(rows) - len(failing)
    assert ieqa_res["coverage"]["n_failed"] == len(failing)
    assert released["coverage"]["n_predicted"] == len(rows)
    # the released reading: SC 7 (one number) or 6, PQ 5, O = sqrt(SC * PQ), per item
    o = [(35 if r["instruction"] in one else 30) ** 0.5 for r in rows]
    want = spearmanr(o, [r["scores"]["overall"] for r in rows])[0]
    got = next(m for m in released["rows"] if m["metric"] == "srcc"
               and m["dimension"] == "overall")
    assert got["value"] == pytest.approx(want)
    # a dimension only ieqa's reading has: its metrics, and a note for the released one
    scores = tmp_path / "out" / "scores.parquet"
    res = CliRunner().invoke(app, ["bench", "-b", str(manifest.parent), "-p", str(scores),
                                   "--missing", "drop", "--dimension", "instruction_alignment"])
    text = " ".join(res.output.split())
    assert res.exit_code == 0, text
    assert "note: no metrics over the released reading" in text
