"""A stand-in for a served VLM judge: ``ieqa stand-in-judge`` (see docs/howto/served-vlm.md).

An OpenAI-compatible chat-completions server on 127.0.0.1 that answers in the shape each
of ieqa's judge prompts asks for, so that the commands that call a served judge (``ieqa
score`` with ``vlm-judge``, ``critique``, ``explain``, ``bench-editor``, ``bench-explanations``,
``optimize-prompt``) run end to end on a laptop: a JSON object of 1-5 scores for the
dimensions a prompt lists, ``{"score": [..]}`` lists for VIEScore prompts (GEdit-Bench's
judge), ImgEdit-Bench's rubric lines, RISEBench's final scores and KRIS-Bench's JSON
scores (for their stand-in prompt files), critiques in the ReasonEdit format (one in four
cut short before its scores, as real judges do now and then) and EPAIQA stage-3 answers,
top log-probabilities over the five level words (``vlm-levels``), a verdict line for
pairwise prompts, PA / LNA / GHA / Overall votes for the explanation judge, and FDMPO's
next definition (:data:`FDMPO_PROPOSALS`, chosen by the number of trials the prompt shows).

**It judges nothing**: every answer is derived from the request's bytes (different edits
get different scores, the same request the same answer). Point ``base_url`` at a real
judge (vLLM, an API) for numbers that mean something.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FDMPO_PROPOSALS", "StandInJudgeServer", "stand_in_answer", "stand_in_judge"]

_DIMENSIONS = ("visual_quality", "instruction_alignment", "content_preservation", "overall")
_LEVELS = ("excellent", "good", "fair", "poor", "bad")
#: the model name ``GET /v1/models`` lists (requests may name any model)
MODEL = "stand-in-judge"

#: definitions the stand-in proposes to ``ieqa optimize-prompt``, one per trial count
FDMPO_PROPOSALS = (
    "Visual quality is how clean the edited image looks: sharp, without noise or artifacts.",
    "How pleasant the edited image is to look at.",
    "Visual quality is the absence of blur, noise, seams and distortions in the edited image.",
    "Rate whether the instruction was followed.",
    "Visual quality: realistic lighting and clean, artifact-free detail in the edited image.",
)


def _digest(body: dict[str, Any]) -> bytes:
    return hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).digest()


def stand_in_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completion response to the request ``body`` (see the module docstring).

    Raises:
        KeyError, TypeError: ``body`` is not a chat-completions request (no ``messages``).
    """
    digest = _digest(body)
    text = " ".join(p.get("text", "") for m in body["messages"]
                    if isinstance(m["content"], list) for p in m["content"])
    text += " ".join(m["content"] for m in body["messages"] if isinstance(m["content"], str))
    tried = re.search(r"The (\d+) definitions tried so far", text)
    if tried and "<definition>" in text:  # FDMPO's optimiser prompt
        proposal = FDMPO_PROPOSALS[(int(tried.group(1)) - 1) % len(FDMPO_PROPOSALS)]
        content = f"<definition>{proposal}</definition>"
        return {"id": "chatcmpl-stand-in", "object": "chat.completion",
                "model": body.get("model", "optimizer"),
                "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": len(text) // 4,
                          "completion_tokens": len(content) // 4}}
    if "[[A>B]]" in text:
        content = "A keeps more of the source.\n[[A>B]]" if digest[0] % 2 else \
            "B follows the instruction better.\n[[B>A]]"
    elif "[Final Assessment]" in text:  # reasonedit-critique
        vq, ia, cp = (1 + digest[i] % 5 for i in range(3))
        content = (f"1. Visual quality: stand-in analysis.\n2. Instruction alignment: "
                   f"stand-in analysis.\n3. Content preservation: stand-in analysis.\n"
                   f"[Final Assessment]\nVisual Quality: {vq}\nInstruction Alignment: "
                   f"{ia}\nContent Preservation: {cp}")
        if digest[3] % 4 == 0:  # now and then an answer cut short, as real judges do
            content = content[:content.index("[Final")]
    elif "First, determine whether the prompt is followed" in text:  # epaiqa-overall
        completion = 1 + digest[0] % 3
        if completion == 3:
            level = _LEVELS[digest[1] % 5]
            content = ("The prompt completion is fully followed. The edit is there. The "
                       f"harmony: stand-in analysis, harmony level is {level}. The local "
                       "naturalness: stand-in analysis. Therefore, the overall editing "
                       f"quality level of the image is {level}.")
        else:
            content = (f"The prompt completion is {('not', 'partially')[completion - 1]} "
                       "followed. The edit is missing. Therefore, the overall editing "
                       f"quality level of the image is {('bad', 'poor')[completion - 1]}.")
    elif '"score": [' in text or "Stand-in text for sc_scale" in text or (
            "Stand-in text for pq_rule" in text):
        # VIEScore-style (also its stand-in prompt files): two 0-10 sub-scores in a list
        content = json.dumps({"score": [digest[0] % 11, digest[1] % 11],
                              "reasoning": "stand-in judge"})
    elif "Stand-in text for prompt_" in text and re.search(
            r"This is the (edited image|image to evaluate):|Predicted Image:|"
            r"Frame \d \(Generated\):", text):
        # KRIS-Bench's prompts (its stand-in file; its requests label the images): JSON
        # with the score the prompt asks for, two for the knowledge prompt
        name = re.search(r"Stand-in text for (prompt_\w+)", text).group(1)
        keys = (["consistency_score"] if "consist" in name else ["quality_score"]
                if "quality" in name else ["instruction_score", "knowledge_score"]
                if "dual" in name else ["instruction_score"])
        content = "1. Detect Difference: stand-in.\n" + json.dumps(
            {"reasoning": "stand-in judge", **{k: 1 + digest[i] % 5
                                               for i, k in enumerate(keys)}})
    elif "Stand-in text for eval:" in text:  # StructScore's judging prompt (its stand-in)
        content = "Correct" if digest[0] % 2 else "Incorrect"
    elif "Stand-in text for qa:" in text:  # StructScore's question prompt (its stand-in)
        content = f"stand-in answer {digest[0] % 10}"
    elif "Stand-in text for prompt_" in text:
        # RISEBench's prompts (its stand-in file): a final score, 0/1 for logical ones
        logical = "Stand-in text for prompt_logical" in text
        value = digest[0] % 2 if logical else 3 + digest[0] % 3
        content = f"Stand-in judgement.\n\n**Final Score:** **{value}**"
    elif re.search(r"Stand-in text for (add|adjust|extract|replace|remove|background|"
                   r"style|compose|action):", text):
        # ImgEdit-Bench's rubric (its stand-in prompt file): three 1-5 criterion lines
        content = "Brief reasoning: stand-in judge.\n" + "\n".join(
            f"{name}: {1 + digest[i] % 5}" for i, name in
            enumerate(("Instruction Compliance", "Visual Naturalness", "Detail")))
    else:
        scores = {d: 1 + digest[i] % 5 for i, d in enumerate(_DIMENSIONS)}
        content = json.dumps({**scores, "reasoning": "stand-in judge"})
    n = 1 if body.get("n") is None else int(body["n"])
    if not 1 <= n <= 128:
        raise ValueError(f"n must be in 1..128, got {n}")
    choices = []
    for i in range(n):
        if '"PA": <0|1|2>' in text:  # explanation judge: one 0-2 vote per concern
            content = json.dumps({**{k: digest[(4 * i + j) % 32] % 3 for j, k in
                                     enumerate(("PA", "LNA", "GHA", "Overall"))},
                                  "reason": "stand-in judge"})
        choice: dict[str, Any] = {"index": i, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content}}
        if body.get("logprobs"):
            weights = [1 + digest[8 + j] for j in range(len(_LEVELS))]
            total = sum(weights)
            top = [{"token": f" {w}", "logprob": math.log(v / total)}
                   for w, v in zip(_LEVELS, weights, strict=True)]
            choice["logprobs"] = {"content": [{"token": top[0]["token"],
                                               "logprob": top[0]["logprob"],
                                               "top_logprobs": top}]}
        choices.append(choice)
    return {"id": "chatcmpl-stand-in", "object": "chat.completion",
            "model": body.get("model", "judge"), "choices": choices,
            "usage": {"prompt_tokens": 10, "completion_tokens": 10}}

class StandInJudgeServer(ThreadingHTTPServer):
    """The stand-in judge's HTTP server: ``POST /v1/chat/completions`` answers with
    :func:`stand_in_answer` (a body that is not a chat request: HTTP 400 saying so),
    ``GET /v1/models`` lists :data:`MODEL`, ``GET /health`` answers 200."""

    daemon_threads = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.requests = 0

    @property
    def url(self) -> str:
        """The ``base_url`` to give ieqa: ``http://HOST:PORT/v1``."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: StandInJudgeServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass  # quiet: the command prints what it serves

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        if self.path.rstrip("/") in ("/health", "/v1/health"):
            self._send(200, {"status": "ok"})
        elif self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._send(404, {"error": {"message": f"no {self.path} here: POST "
                                                  "/v1/chat/completions"}})

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no {self.path} here: POST "
                                                  "/v1/chat/completions"}})
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            answer = stand_in_answer(json.loads(self.rfile.read(length)))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            self._send(400, {"error": {"message": "not a chat-completions request (a JSON "
                                                  f"object with messages): {exc!r}"}})
            return
        self.server.requests += 1
        self._send(200, answer)


@contextmanager
def stand_in_judge(host: str = "127.0.0.1", port: int = 0) -> Iterator[StandInJudgeServer]:
    """Serve the stand-in judge in a background thread while the ``with`` lasts (a free
    port by default); its ``url`` is the ``base_url`` to give ieqa."""
    server = StandInJudgeServer(host, port)
    thread = threading.Thread(target=server.serve_forever, name="ieqa-stand-in-judge",
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
