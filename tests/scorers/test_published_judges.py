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
    from ieqa.scorers.vlm.viescore import PROMPT_SOURCES
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
    from ieqa.scorers.vlm.viescore import PROMPT_SOURCES as VIE
    from ieqa.testing.releases import write_prompt_standins

    prompts = write_prompt_standins(tmp_path / "vie", VIE)
    with pytest.raises(ScorerError, match="not the published protocol"):
        create_scorer("viescore", backend=__import__("ieqa").backends.TransformersVLM(
            tiny_models["qwen2.5-vl"], device="cpu"), prompts=str(prompts))
    with pytest.raises(Exception, match="on_malformed"):
        create_scorer("viescore", base_url="http://127.0.0.1:9/v1", prompts=str(prompts),
                      on_malformed="midpoint")


def test_a_malformed_viescore_answer_is_an_error_never_a_guess(tmp_path, edit):
    from ieqa.scorers.vlm.viescore import PROMPT_SOURCES
    from ieqa.testing.releases import write_prompt_standins

    prompts = write_prompt_standins(tmp_path / "vie", PROMPT_SOURCES)
    with serve(FakeServer()) as judge:  # its echo answers are JSON without a score list
        scorer = create_scorer("viescore", base_url=judge.url, prompts=str(prompts))
        result = scorer.score([edit])[0]
    assert result.error.startswith("malformed answer (2 of 2): pass 0 SC: ")
    assert "no 'score'" in result.error and not result.scores
