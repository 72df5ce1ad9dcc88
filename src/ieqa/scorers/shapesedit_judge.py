"""A programmatic critique judge for ShapesEdit: rewards critiques whose claims match
what the simulated editor really did.

ShapesEdit records, per candidate, the editor's mode (``perfect``, ``partial``, ``no_op``,
``wrong_target``, ``over_edit``), the artifact it left (``noise``, ``blur``, ``jpeg``,
``seam`` or none) and its severity (``sample.meta``; :func:`ieqa.data.shapesedit.describe`
writes the factual critique from it). :class:`ShapesEditCritiqueJudge` reads a critique
from ``meta["completion"]`` (where :func:`ieqa.rewards.trl_reward_func` puts a GRPO
completion) and scores it in RE-Reward's three dimensions, each in [0, 1]:

* ``accuracy``: the share of checkable claims that are right — the artifact named (or "no
  visible artifacts" when there is none, and no other artifact named), its severity word
  (``slight`` <= 0.33 < ``moderate`` <= 0.66 < ``strong``) when there is one, and the
  editor's mode (a word or phrase of :func:`describe`'s text for it, :data:`MODE_PHRASES`);
* ``logicality``: 1 for a critique that does not contradict itself (an artifact named and
  "no visible artifacts" claimed, two severity words, two modes), 0.5 with one such
  contradiction, 0 with more or for an empty critique;
* ``usefulness``: the share of the three aspects (edit outcome, artifacts, severity or
  their absence) the critique addresses at all, right or wrong.

It is the registered scorer ``shapesedit-judge`` and stands in for a trained RE-Reward model
in tests and benchmarks (``ieqa train`` with a ``grpo`` stage, ``reward.scorer:
shapesedit-judge``): its reward is the ground truth, so a
policy that raises it has learned to say what really happened.
"""

from __future__ import annotations

import re
from typing import Any

from ieqa.data.schema import EditSample
from ieqa.data.shapesedit.truth import severity_word
from ieqa.scorers.base import Scorer, ScorerError, ScoreResult

__all__ = ["ShapesEditCritiqueJudge", "ARTIFACT_WORDS", "SEVERITY_WORDS", "MODE_PHRASES",
           "severity_word"]

#: The artifacts ShapesEdit editors leave (``meta["artifact"]``).
ARTIFACT_WORDS: tuple[str, ...] = ("noise", "blur", "jpeg", "seam")
#: Severity words of :func:`ieqa.data.shapesedit.describe`, mildest first.
SEVERITY_WORDS: tuple[str, ...] = ("slight", "moderate", "strong")
#: A word or phrase per editor mode, from the text :func:`describe` writes for it, that no
#: other mode's text contains.
MODE_PHRASES: dict[str, str] = {
    "perfect": "completely",
    "partial": "partly",
    "no_op": "not carried out",
    "wrong_target": "wrong target",
    "over_edit": "other content changed",
}
_NO_ARTIFACT = "no visible artifact"


def _words(text: str, vocabulary: tuple[str, ...]) -> set[str]:
    return {w for w in vocabulary if re.search(rf"\b{w}", text)}


class ShapesEditCritiqueJudge(Scorer):
    """Scores the critique in ``meta[completion_key]`` against the sample's ShapesEdit
    generation record (see the module docstring).

    Args:
        completion_key: ``sample.meta`` key of the critique text.
    """

    def __init__(self, completion_key: str = "completion") -> None:
        from ieqa.scorers.table import scorer_info

        self.info = scorer_info("shapesedit-judge")
        self.completion_key = completion_key

    def config(self) -> dict[str, Any]:
        return {"completion_key": self.completion_key}

    def score_sample(self, sample: EditSample) -> ScoreResult:
        meta = sample.meta
        if "mode" not in meta:
            raise ScorerError(f"sample {sample.id!r} has no ShapesEdit generation record in "
                              "meta (mode, artifact, artifact_severity); this judge only scores "
                              "critiques of ShapesEdit samples (ieqa synth)")
        text = str(meta.get(self.completion_key) or "").lower()
        return ScoreResult(id=sample.id, scores=self.judge(text, meta))

    @staticmethod
    def judge(text: str, truth: dict[str, Any]) -> dict[str, float]:
        """``{"logicality", "accuracy", "usefulness"}`` of critique ``text`` (lower case)
        against a ShapesEdit generation record ``truth``."""
        if not text.strip():
            return {"logicality": 0.0, "accuracy": 0.0, "usefulness": 0.0}
        artifacts = _words(text, ARTIFACT_WORDS)
        levels = _words(text, SEVERITY_WORDS)
        modes = {m for m, phrase in MODE_PHRASES.items() if phrase in text}
        says_clean = _NO_ARTIFACT in text
        artifact = truth.get("artifact")
        checks = []
        if artifact:
            checks.append(artifacts == {artifact} and not says_clean)
            checks.append(levels == {severity_word(float(truth.get("artifact_severity") or 0))})
        else:
            checks.append(says_clean and not artifacts)
        checks.append(modes == {truth.get("mode")})
        accuracy = sum(checks) / len(checks)
        contradictions = (int(says_clean and bool(artifacts)) + int(len(levels) > 1)
                          + int(len(modes) > 1) + int(len(artifacts) > 1))
        # a text that claiming nothing checkable is no reasoned critique
        claims = bool(artifacts or levels or modes or says_clean)
        logicality = max(0.0, 1.0 - 0.5 * contradictions) if claims else 0.0
        aspects = [bool(modes), bool(artifacts) or says_clean, bool(levels) or says_clean]
        return {"logicality": logicality, "accuracy": accuracy,
                "usefulness": sum(aspects) / len(aspects)}
