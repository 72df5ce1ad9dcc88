"""A stand-in for a served VLM judge, for the served-VLM how-to's examples.

The chat-completions server of ``tests/chat_server.py`` on 127.0.0.1 with answers a judge
would give: a JSON object of 1-5 scores for the dimensions the prompt lists (derived from
the request's bytes, so different edits get different scores), ``{"score": [..]}`` lists
for VIEScore prompts (and their stand-in files, as GEdit-Bench's judge sends them), ImgEdit-Bench's
rubric lines, RISEBench's final scores and KRIS-Bench's JSON scores (for their stand-in prompt files), critiques in the ReasonEdit format (one in four cut short before
its scores) and EPAIQA stage-3 answers for the critique prompts, top log-probabilities
over the five level words (for ``vlm-levels``), a verdict line for pairwise prompts, and
for the explanation-judge rubric (``epaiqa-explain-judge``) a JSON object of PA / LNA /
GHA / Overall votes in 0-2 that differ between the ``n`` choices, and for FDMPO's
optimiser prompt (``ieqa optimize-prompt``) the next definition of a fixed list, chosen by
the number of trials the prompt shows (:data:`FDMPO_PROPOSALS`). It judges nothing; it lets the documented commands run end to end without a GPU.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chat_server import FakeServer, Reply, serve

_DIMENSIONS = ("visual_quality", "instruction_alignment", "content_preservation", "overall")
_LEVELS = ("excellent", "good", "fair", "poor", "bad")


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


class StandInJudge(FakeServer):
    """Answers like a judge (see the module docstring)."""

    def echo(self, body: dict[str, Any]) -> Reply:
        digest = _digest(body)
        text = " ".join(p.get("text", "") for m in body["messages"]
                        if isinstance(m["content"], list) for p in m["content"])
        text += " ".join(m["content"] for m in body["messages"] if isinstance(m["content"], str))
        tried = re.search(r"The (\d+) definitions tried so far", text)
        if tried and "<definition>" in text:  # FDMPO's optimiser prompt
            proposal = FDMPO_PROPOSALS[(int(tried.group(1)) - 1) % len(FDMPO_PROPOSALS)]
            content = f"<definition>{proposal}</definition>"
            return Reply(body={"id": "chatcmpl-docs", "object": "chat.completion",
                               "model": body.get("model", "optimizer"),
                               "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                   "role": "assistant", "content": content}}],
                               "usage": {"prompt_tokens": len(text) // 4,
                                         "completion_tokens": len(content) // 4}})
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
        n = int(body.get("n", 1))
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
        return Reply(body={"id": "chatcmpl-docs", "object": "chat.completion",
                           "model": body.get("model", "judge"), "choices": choices,
                           "usage": {"prompt_tokens": 10, "completion_tokens": 10}})


@contextmanager
def judge_server() -> Iterator[str]:
    """Serve :class:`StandInJudge` on a free port; yields its ``/v1`` base URL."""
    with serve(StandInJudge()) as fake:
        yield fake.url
