"""The answer format of the published VIEScore and EditScore prompts: a JSON object
``{"reasoning": "...", "score": [s1, s2]}``, optionally between two ``||V^=^V||``
delimiters, or a bare list ``[s1, s2]``; the strict parser :func:`parse_vie_answer` and
the writer :func:`write_vie_answer`.

Where the authors' code finds the answer in the text it is followed here: the text between
the two delimiters when there are exactly two, else from the first ``{`` to the last
``}`` (line breaks removed, curly quotes made straight), else a bare list of two integers.
What their code then *repairs* or *guesses* (a JSON repair library, a random score, the
midpoint) is not done: an answer that is not valid JSON, a score that is not a number, a
list of the wrong length, a negative or out-of-range score, a refusal or an empty answer
raise :class:`~ieqa.prompts.answers.JudgeParseError` with the reason, so the scorer records
and counts it.

:func:`released_vie_reading` is the other reading: VIEScore's ``mllm_output_to_dict`` as
GEdit-Bench's released code runs it (``GEdit-Bench/viescore/utils.py`` at the pinned
commit), rule for rule and with its quirks, for the numbers a benchmark publishes
(``official``). It keeps what that code keeps — a list of any length (the caller takes its
minimum), a single number wrapped in a list, values outside 0-10, JSON its repair rule
mends — and says what the released code does with the rest: ask both prompts again
(``"ask_again"``: no answer found, or JSON its repair cannot mend, an object without
``score`` included), draw a random integer (``"random"``, on the give-up pass, whenever
the answer holds no ``{``) or fail later and start the item over (``"fails"``: an empty
list, a score that is not a number).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ieqa.errors import TrainDataError
from ieqa.prompts.answers._text import JudgeParseError, require_text

__all__ = ["DELIMITER", "EDITSCORE_REFUSAL", "VieAnswer", "ReleasedScores", "ReleasedVie",
           "json_repair_loads", "parse_vie_answer", "released_editscore_reading",
           "released_vie_reading",
           "write_vie_answer"]

#: the delimiter VIEScore's prompts with a delimiter ask the answer to be wrapped in
DELIMITER = "||V^=^V||"

_BARE_LIST = re.compile(r"^\[\d+, ?\d+\]$")
_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


@dataclass(frozen=True)
class VieAnswer:
    """One parsed answer.

    Attributes:
        scores: the sub-scores in the order the prompt asks for them, on the asked scale
            (``0..high``), as stated.
        reasoning: the answer's ``reasoning`` text (``None`` when it has none).
    """

    scores: tuple[float, ...]
    reasoning: str | None = None


def _located(text: str) -> str:
    """The part of ``text`` the answer is read from (see the module docstring)."""
    if text.count(DELIMITER) == 2:
        start = text.find(DELIMITER) + len(DELIMITER)
        return text[start:text.rfind(DELIMITER)].strip()
    start, end = text.find("{"), text.rfind("}") + 1
    if start != -1 and end > start:
        return text[start:end].strip()
    start, end = text.find("["), text.rfind("]") + 1
    if start != -1 and end > start and _BARE_LIST.match(text[start:end]):
        return text[start:end]
    raise JudgeParseError("no answer object {\"reasoning\": ..., \"score\": [...]} found", text)


def parse_vie_answer(text: str, *, n_scores: int = 2, high: float = 10) -> VieAnswer:
    """The sub-scores and reasoning of a VIEScore / EditScore answer.

    Args:
        text: the model's answer.
        n_scores: how many sub-scores the prompt asks for (2 for both SC and PQ).
        high: the top of the asked scale (10; EditScore's 0-25 prompts: 25); every
            sub-score must lie in ``[0, high]``.

    Raises:
        JudgeParseError: the answer is empty, holds no answer object, is not valid JSON
            (a trailing comma, say), has no ``score``, a score that is not a number (a
            string, a boolean), the wrong number of scores, or a score outside
            ``[0, high]``.
    """
    text = require_text(text)
    located = _located(text).replace("\n", "").translate(_QUOTES)
    try:
        obj = json.loads(located)
    except (ValueError, RecursionError) as exc:
        raise JudgeParseError(f"the answer object is not valid JSON ({exc})", text) from None
    if isinstance(obj, list):
        obj = {"score": obj}
    if not isinstance(obj, dict):
        raise JudgeParseError(f"the answer is a JSON {type(obj).__name__}, not an object", text)
    if "score" not in obj:
        raise JudgeParseError("the answer object has no 'score'", text)
    raw = obj["score"]
    if not isinstance(raw, list):
        raw = [raw]
    values: list[float] = []
    for i, value in enumerate(raw):
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            raise JudgeParseError(f"score {i + 1} is {value!r}, not a number", text)
        if not 0 <= value <= high:
            raise JudgeParseError(f"score {i + 1} is {value:g}, outside 0-{high:g}", text)
        values.append(float(value))
    if len(values) != n_scores:
        raise JudgeParseError(f"expected {n_scores} scores, got {len(values)}", text)
    reasoning = obj.get("reasoning")
    return VieAnswer(tuple(values), reasoning if isinstance(reasoning, str) else None)


def write_vie_answer(scores: Sequence[float], reasoning: str = "", *,
                     delimit: bool = False) -> str:
    """An answer in this format (the inverse of :func:`parse_vie_answer`): a JSON object
    with ``reasoning`` and ``score``, between :data:`DELIMITER` when ``delimit``.

    Raises:
        TrainDataError: a score is not a finite non-negative number.
    """
    values = []
    for value in scores:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            raise TrainDataError(f"a VIEScore sub-score must be a finite number >= 0, got "
                                 f"{value!r}")
        values.append(int(value) if float(value).is_integer() else float(value))
    body = json.dumps({"reasoning": reasoning, "score": values})
    return f"{DELIMITER}{body}{DELIMITER}" if delimit else body


@dataclass(frozen=True)
class ReleasedVie:
    """One answer as GEdit-Bench's released code reads it (:func:`released_vie_reading`).

    Attributes:
        status: ``"read"`` (``score`` holds the minimum of the answer's scores, as the
            released code takes it), ``"ask_again"`` (the released reader returns False and
            the released loop asks both prompts again), ``"random"`` (on the give-up pass
            the released reader draws a random integer 0-10 for it) or ``"fails"`` (the
            reader returns an object the released code then fails on, and the item is
            started over).
        score: the minimum of the scores (``status == "read"``), else ``None``.
        reason: why it was not read (empty when read).
    """

    status: str
    score: float | None = None
    reason: str = ""


#: the released reader's repair of a JSON-like object: bare keys quoted, numbers wrapped in
#: a list, other bare values quoted (true/false/null left alone)
_KEY = re.compile(r"(\w+):")
_PAIR = re.compile(r'(".*?"):(.*?)(,|})')
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_LITERAL = re.compile(r"^(true|false|null)$", re.IGNORECASE)


def _released_repair(text: str) -> str:
    def pair(match: re.Match[str]) -> str:
        key, value, end = match.group(1), match.group(2).strip(), match.group(3)
        if _NUMBER.match(value):
            value = f"[{value}]"
        elif not _LITERAL.match(value):
            value = f'"{value}"'
        return f"{key}: {value}{end}"

    return _PAIR.sub(pair, _KEY.sub(r'"\1":', text))


def _small_int(text: str) -> bool:
    try:
        return 0 <= int(text) <= 10
    except ValueError:
        return False


def _released_minimum(obj: object) -> ReleasedVie:
    """What the released code does with the object its reader returned: ``min(score)``,
    then ``sqrt(SC * PQ)`` (which needs a number)."""
    try:
        scores = obj["score"]  # type: ignore[index]
        low = min(scores)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        return ReleasedVie("fails", reason=f"min(answer['score']) fails ({type(exc).__name__}: "
                                           f"{exc}); the released code starts the item over")
    if isinstance(low, bool) or not isinstance(low, (int, float)):
        return ReleasedVie("fails", reason=f"the minimum score {low!r} is not a number; the "
                                           "released code fails on it")
    return ReleasedVie("read", float(low))


def released_vie_reading(text: str | None, *, give_up: bool) -> ReleasedVie:
    """An answer read as GEdit-Bench's released ``mllm_output_to_dict`` reads it, then
    reduced as its ``evaluate`` does (the minimum of ``score``); see the module docstring.

    Args:
        text: the answer (``None`` or ``""`` for a failed request: the released client
            returns ``""`` for an API error).
        give_up: the released loop's give-up pass (every try after the first): an answer
            without ``{`` (and without two delimiters) becomes a random draw.
    """
    text = text or ""
    if text == "rate_limit_exceeded":
        return ReleasedVie("fails", reason="the released code raises on 'rate_limit_exceeded' "
                                           "and starts the item over")
    if text.count(DELIMITER) == 2:
        start, end = text.find(DELIMITER) + len(DELIMITER), text.rfind(DELIMITER)
        body = text[start:end]
    else:
        start, end = text.find("{"), text.rfind("}") + 1
        if start == -1 or end == 0:
            if give_up:
                return ReleasedVie("random", reason="no JSON object on the give-up pass: the "
                                                    "released code draws a random integer 0-10")
            listed = text[text.find("["):text.rfind("]") + 1]
            if _BARE_LIST.match(listed):
                try:
                    return _released_minimum({"score": json.loads(listed)})
                except ValueError:  # digits json cannot read (other scripts'): it raises
                    return ReleasedVie("fails", reason=f"json cannot read {listed!r}: the "
                                                       "released reader raises")
            if _small_int(text):
                return _released_minimum({"score": [int(text)]})
            return ReleasedVie("ask_again", reason="no JSON object, list of two numbers or "
                                                   "number 0-10: the released code asks again")
        body = text[start:end]
    if start == end:
        return ReleasedVie("ask_again", reason="an empty answer object: the released code "
                                               "asks again")
    body = body.strip().replace("\n", "")
    try:
        obj = json.loads(body)
        if not isinstance(obj["score"], list):
            obj["score"] = [obj["score"]]
    except Exception:  # noqa: BLE001 - the released reader catches everything here
        try:
            obj = json.loads(_released_repair(body))
        except Exception:  # noqa: BLE001
            return ReleasedVie("ask_again", reason="not JSON, even after the released repair: "
                                                   "the released code asks again")
    return _released_minimum(obj)


# ------------------------------------------------------------ EditScore's released reading

#: the refusal EditScore's ``evaluate`` gives up on at once (either answer of a try)
EDITSCORE_REFUSAL = "I'm sorry, but I can't assist with that request."
_REASONING = re.compile(r'("reasoning"\s*:\s*")(.*?)(?="\s*[,}])', re.DOTALL)


@dataclass(frozen=True)
class ReleasedScores:
    """One answer as EditScore's released ``evaluate`` reads it
    (:func:`released_editscore_reading`).

    Attributes:
        status: ``"read"`` (``scores`` holds the answer's scores, in order), ``"ask_again"``
            (the reader returns False: the released loop asks both prompts again, twice at
            most, then draws), ``"random"`` (the give-up try: a random integer for both
            scores) or ``"fails"`` (the reader returns something ``evaluate`` then fails
            on: no ``score`` list of numbers).
        scores: the scores (``status == "read"``), else ``None``.
        reason: why it was not read (empty when read).
    """

    status: str
    scores: tuple[float, ...] | None = None
    reason: str = ""
    #: whether the reader's object holds ``reasoning``: ``evaluate()`` fails on the last
    #: pass's answers without it
    reasoning: bool = True


def _repair_reasoning(text: str) -> str:
    """The released second repair: double quotes inside the ``reasoning`` value escaped."""
    return _REASONING.sub(lambda m: m.group(1) + m.group(2).replace('"', '\\"'), text)


def _fallback_object(text: str) -> str:
    """The released last repair: a ``{"reasoning", "score"}`` object rebuilt from the text
    between the ``reasoning`` and ``score`` keys and the first two numbers after
    ``score`` (anywhere without it), zeros for numbers it cannot find."""
    lowered = text.lower()
    key_r = re.search(r'"?reasoning"?\s*[:\uff1a]', lowered)
    key_s = re.search(r'"?score"?\s*[:\uff1a]', lowered)
    reasoning = ""
    if key_r and key_s:
        raw = text[key_r.end():key_s.start()].strip()
        raw = re.sub(r"[\s,}\]]+$", "", re.sub(r"^[\s,{\[]+", "", raw))
        raw = raw[1:] if raw.startswith(("'", '"')) else raw
        raw = raw[:-1] if raw.endswith(("'", '"')) else raw
        reasoning = raw.replace('\\"', '"').replace("\\'", "'").translate(_QUOTES).strip()
    else:
        loose = re.search(r'"?reasoning"?\s*[:\uff1a]\s*["\']?(.*?)["\']?\s*(,|$)', text,
                          re.DOTALL | re.IGNORECASE)
        if loose:
            reasoning = loose.group(1).strip().replace('\\"', '"').replace("\\'", "'") \
                .translate(_QUOTES)
    numbers = re.findall(r"-?\d+(?:\.\d+)?", text[key_s.end():] if key_s else text)
    scores = [float(n) for n in numbers[:2]]
    scores += [0.0] * (2 - len(scores))
    return json.dumps({"reasoning": reasoning, "score": scores}, ensure_ascii=False)


def json_repair_loads(text: str) -> object:
    try:
        import json_repair
    except ImportError as exc:  # pragma: no cover - a dependency of ieqa
        raise ImportError("EditScore's released reading needs json-repair: pip install "
                          "json-repair (make setup installs it)") from exc
    return json_repair.loads(text)


def _released_json_fix(text: str) -> object:
    """The released ``robust_json_fix``: ``json_repair.loads``, then after each of the two
    repairs, then on the rebuilt object; ``False`` when every try raises."""
    for repair in (None, _released_repair, _repair_reasoning):
        if repair is not None:
            text = repair(text)
        try:
            return json_repair_loads(text)
        except Exception:  # noqa: BLE001 - the released code catches everything here
            continue
    try:
        return json_repair_loads(_fallback_object(text))
    except Exception:  # noqa: BLE001
        return False


def _scores_of(obj: object) -> ReleasedScores:
    """What ``evaluate`` can take from the reader's object: a ``score`` list of numbers."""
    scores = obj.get("score") if isinstance(obj, dict) else None
    if not isinstance(scores, list) or not scores:
        return ReleasedScores("fails", reason="no 'score' list in the answer: the released "
                                              "evaluate() fails on it")
    if any(not isinstance(s, (int, float)) for s in scores):  # (true is 1 to it)
        return ReleasedScores("fails", reason=f"a score in {scores!r} is not a number: the "
                                              "released evaluate() fails on it")
    return ReleasedScores("read", tuple(float(s) for s in scores),
                          reasoning="reasoning" in obj)  # type: ignore[operator]


def released_editscore_reading(text: str | None, *, give_up: bool) -> ReleasedScores:
    """An answer read as EditScore's released ``mllm_output_to_dict`` (``editscore/utils.py``)
    reads it for ``evaluate``: its own version of VIEScore's reader (its quotes normalised,
    ``json-repair`` where ``json.loads`` fails, no minimum taken here).

    Args:
        text: the answer (``None`` or ``""`` for a failed request).
        give_up: the give-up try (the third, or any try with a refusal): a random draw,
            whatever the answer.
    """
    text = text or ""
    if text == "rate_limit_exceeded":
        return ReleasedScores("fails", reason="the released code raises on "
                                              "'rate_limit_exceeded'")
    if give_up:
        return ReleasedScores("random", reason="the give-up try: the released code draws a "
                                               "random integer for both scores")
    if text.count(DELIMITER) == 2:
        start, end = text.find(DELIMITER) + len(DELIMITER), text.rfind(DELIMITER)
    else:
        start, end = text.find("{"), text.rfind("}") + 1
        if start == -1 or end == 0:
            listed = text[text.find("["):text.rfind("]") + 1]
            if _BARE_LIST.match(listed):
                try:
                    return _scores_of({"score": json.loads(listed), "reasoning": ""})
                except ValueError:  # digits json cannot read (other scripts'): it raises
                    return ReleasedScores("fails", reason=f"json cannot read {listed!r}: the "
                                                          "released reader raises")
            if _small_int(text):
                return _scores_of({"score": [int(text)], "reasoning": ""})
            return ReleasedScores("ask_again", reason="no JSON object, list of two numbers "
                                                      "or number 0-10: the released code "
                                                      "asks again")
    if start == end:
        return ReleasedScores("ask_again", reason="an empty answer object: the released "
                                                  "code asks again")
    body = text[start:end].strip().replace("\n", "").translate(_QUOTES)
    try:
        obj = json.loads(body)
        if not isinstance(obj["score"], list):
            obj["score"] = [obj["score"]]
    except Exception:  # noqa: BLE001 - the released reader catches everything here
        obj = _released_json_fix(body)
        if obj is False:
            return ReleasedScores("ask_again", reason="not JSON, even after the released "
                                                      "repairs: the released code asks again")
    return _scores_of(obj)
