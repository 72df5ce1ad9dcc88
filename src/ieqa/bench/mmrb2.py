"""MMRB2's official aggregation (facebookresearch/MMRB2 at 7ff0552,
``evaluate/compute_scores/compute_accuracy.py``, ``compute_task_accuracy``), and judgements
in its predictions format.

The predictions format: ``{pair_id: {"forward": [{"judgement": "A"|"B"|...}, ...],
"reverse": [...]}}``; ``forward`` judges the pair as presented (response A first),
``reverse`` with the two responses swapped, so a reverse ``"A"`` means the original B.

The rule, as released: a pair of the benchmark without an entry is *missing* and left out;
for each present pair, the first forward judgement, if it is a non-empty value, counts as
one evaluated judgement, right when it equals ``chosen``; the first reverse judgement
likewise after ``A``/``B`` are swapped (any other value stays as it is, so it is evaluated
and wrong). ``accuracy = correct / evaluated`` (0 when nothing was evaluated). The missing
pairs and the unread judgements (empty lists, ``None``, ``""``) are not in the accuracy:
:class:`MMRB2Accuracy` states them beside it, and ``accuracy_all`` counts them wrong
(``correct / (2 x pairs)``), so coverage is never silent.

A numeric scorer's judgements (:func:`judgements_from_scores`): forward ``A`` when
``score(A) - score(B) > eps``, ``B`` when ``< -eps``, else ``"tie"`` (evaluated and wrong,
as the rule treats any value that is not the chosen letter); the scorer sees each edit on
its own, so the reverse order gives the swapped letter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ieqa.bench.errors import BenchError
from ieqa.prompts.published import PublishedText, SourceFile

__all__ = ["MMRB2Accuracy", "MMRB2Judge", "PROMPT_SOURCES", "REVISION", "judgements_from_scores",
           "load_predictions", "official_accuracy", "released_judgement", "strict_judgement",
           "write_predictions"]


@dataclass(frozen=True)
class MMRB2Accuracy:
    """The numbers ``compute_task_accuracy`` returns, and ieqa's beside them.

    Attributes:
        total_pairs, evaluated_pairs, missing_pairs, total_correct, total_evaluated,
            accuracy: as released (``accuracy`` over the evaluated judgements only).
        unread: judgements of present pairs that were not read (empty list, ``None``, ``""``).
        accuracy_all: ``total_correct / (2 * total_pairs)``: missing pairs and unread
            judgements counted wrong (ieqa's number, the full coverage).
    """

    total_pairs: int
    evaluated_pairs: int
    missing_pairs: int
    total_correct: int
    total_evaluated: int
    accuracy: float
    unread: int
    accuracy_all: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _swap(judgement: Any) -> Any:
    return {"A": "B", "B": "A"}.get(judgement, judgement) if isinstance(judgement, str) \
        else judgement


def _first(entry: Mapping[str, Any], key: str) -> Any:
    values = entry.get(key)
    if not values:
        return None
    first = values[0]
    return first.get("judgement") if isinstance(first, Mapping) else None


def official_accuracy(predictions: Mapping[str, Mapping[str, Any]],
                      pairs: Sequence[Mapping[str, Any]]) -> MMRB2Accuracy:
    """MMRB2's ``compute_task_accuracy`` on ``predictions`` (the format above) and the
    benchmark's ``pairs`` (each with ``id`` and ``chosen``); see the module docstring."""
    evaluated_pairs = missing = correct = judged = unread = 0
    for pair in pairs:
        pid, chosen = str(pair["id"]), pair["chosen"]
        if pid not in predictions:
            missing += 1
            continue
        evaluated_pairs += 1
        entry = predictions[pid]
        for key, read in (("forward", lambda j: j), ("reverse", _swap)):
            judgement = _first(entry, key)
            if not judgement:  # the released `if judgement:`: None, "" and absent are skipped
                unread += 1
                continue
            judged += 1
            correct += int(read(judgement) == chosen)
    total = len(pairs)
    return MMRB2Accuracy(total, evaluated_pairs, missing, correct, judged,
                         correct / judged if judged else 0.0, unread,
                         correct / (2 * total) if total else 0.0)


def judgements_from_scores(score_a: float, score_b: float, *, eps: float = 0.0,
                           evaluator: str = "ieqa") -> dict[str, list[dict[str, Any]]]:
    """One pair's entry of the predictions format from a numeric scorer's two scores
    (higher better); see the module docstring."""
    delta = score_a - score_b
    forward = "A" if delta > eps else "B" if delta < -eps else "tie"
    meta = {"score_a": score_a, "score_b": score_b}
    return {"forward": [{"judgement": forward, "evaluator": evaluator, "metadata": meta}],
            "reverse": [{"judgement": _swap(forward), "evaluator": evaluator,
                         "metadata": {"score_a": score_b, "score_b": score_a}}]}


def load_predictions(path: str | Path) -> dict[str, dict[str, Any]]:
    """A predictions file in MMRB2's format (a JSON object keyed by pair id), checked."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BenchError(f"cannot read {path} as MMRB2 predictions JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise BenchError(f"{path}: MMRB2 predictions are a JSON object keyed by pair id, got "
                         f"{type(data).__name__}")
    for pid, entry in data.items():
        if not isinstance(entry, dict):  # {} is a pair present with no judgement, as released
            raise BenchError(f"{path}: pair {pid!r} must be an object with 'forward' and/or "
                             "'reverse' lists of {'judgement': ...}")
        for key in ("forward", "reverse"):
            if key in entry and not isinstance(entry[key], list):
                raise BenchError(f"{path}: pair {pid!r}: {key} must be a list, got "
                                 f"{type(entry[key]).__name__}")
    return data


def write_predictions(path: str | Path, predictions: Mapping[str, Any]) -> Path:
    """Write ``predictions`` in MMRB2's format, for the authors' ``compute_accuracy.py``."""
    path = Path(path)
    path.write_text(json.dumps(predictions, indent=2) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the judge
#: the commit of facebookresearch/MMRB2 the judge's prompt is read at
REVISION = "7ff0552cf298441af5ebbabea634b682ef04afee"
_PROMPTS = SourceFile("facebookresearch/MMRB2", REVISION,
                      "evaluate/generate_judgements/evaluator_apis/llm_judges/"
                      "evaluation_prompts.py",
                      "f961987a13f193dafec6eae3c14721d2e5c8c3533490ba8ca66372642a4c9efe")
#: the image-editing rubric (its text names the three labels the request places)
_LABELS = ("[ORIGINAL PROMPT TO MODEL:]", "[RESPONSE A:]", "[RESPONSE B:]")
PROMPT_SOURCES: tuple[PublishedText, ...] = (
    PublishedText("edit", _PROMPTS, "get_image_edit_prompt()", markers=_LABELS),)
#: the released judges: the API model, or the local one (transformers' pipeline)
DEFAULT_MODEL = "gpt-4o"
LOCAL_MODEL = "Qwen/Qwen3-VL-8B-Instruct"
LOCAL_MAX_NEW_TOKENS, LOCAL_TEMPERATURE = 2000, 1.0
_FENCE_START, _FENCE_END = re.compile(r"^```(?:json)?\s*\n?"), re.compile(r"\n?```\s*$")
_MIME = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png",
         ".gif": "image/gif", ".webp": "image/webp"}


def _unfenced(text: str) -> str:
    return _FENCE_END.sub("", _FENCE_START.sub("", text.strip()).strip())


def released_judgement(text: str) -> Any:
    """What the released ``pairwise_evaluate`` takes from an answer: the markdown fence
    stripped, ``json_repair.loads``, then ``["better_response"]`` (any value, as it is);
    ``None`` where that raises (the released loop counts a failure and, with ``n=1``, leaves
    the order without a judgement)."""
    from ieqa.prompts.answers.vie import json_repair_loads

    try:
        return json_repair_loads(_unfenced(text))["better_response"]  # type: ignore[index]
    except (KeyError, TypeError, IndexError, ValueError):
        return None


def strict_judgement(text: str) -> str | None:
    """ieqa's reading: the answer (fence stripped) is one JSON object whose
    ``better_response`` is ``"A"`` or ``"B"``; ``None`` otherwise."""
    try:
        value = json.loads(_unfenced(text))
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    verdict = value.get("better_response")
    return verdict if verdict in ("A", "B") else None


class MMRB2Judge:
    """MMRB2's pairwise judge as released (``evaluate/generate_judgements``): per pair two
    requests, the responses in the given order (``forward``) and swapped (``reverse``);
    each request one user message of the image-editing rubric, ``[ORIGINAL PROMPT TO
    MODEL:]`` and the prompt's texts and images, ``[RESPONSE A:]`` and the first response,
    ``[RESPONSE B:]`` and the second. To an OpenAI-compatible server (``gpt-4o`` by default)
    the body is ``{"model", "messages", "n": 1}`` with each image its file's bytes under the
    media type of its suffix; a local model (their ``qwen3vl8b-pairwise``:
    ``Qwen/Qwen3-VL-8B-Instruct`` through transformers' pipeline) samples at temperature 1.0
    with the checkpoint's own top-p and top-k, at most 2000 tokens, seeded here (``seed``;
    the released run is not seeded, so its numbers vary between runs).

    Args:
        model: the served model's name, or a local checkpoint (default: ``gpt-4o`` with
            ``base_url``/OpenAI, else ``Qwen/Qwen3-VL-8B-Instruct`` when ``local``).
        base_url: an OpenAI-compatible endpoint (default OpenAI's when not ``local``).
        local: run ``model`` (default Qwen3-VL-8B) with transformers.
        prompts: a local copy of the authors' repository (``--prompts``).
        seed: the local model's sampling seed.
        max_new_tokens: the local model's answer limit (2000 as released).
        backend_options: options of the backend (``device``, ``dtype``, ``max_retries``...).
    """

    def __init__(self, *, model: str | None = None, base_url: str | None = None,
                 local: bool = False, prompts: str | Path | None = None, seed: int = 0,
                 max_new_tokens: int = LOCAL_MAX_NEW_TOKENS,
                 backend_options: Mapping[str, Any] | None = None) -> None:
        from ieqa.backends import OPENAI_BASE_URL, make_backend
        from ieqa.prompts.published import load_texts

        self.texts = load_texts(PROMPT_SOURCES, prompts_dir=prompts)
        self.prompts_dir = None if prompts is None else str(prompts)
        self.local = bool(local)
        self.seed = int(seed)
        self.max_new_tokens = int(max_new_tokens)
        options = dict(backend_options or {})
        if self.local:
            if base_url is not None:
                raise BenchError("local=True runs the model here; leave base_url out")
            self.model = str(model or LOCAL_MODEL)
            self.backend = make_backend(model=self.model, **options)
        else:
            self.model = str(model or DEFAULT_MODEL)
            options.setdefault("max_pixels", None)  # the files' bytes, as released
            options.setdefault("extra_body", {"n": 1})
            self.backend = make_backend(model=self.model, base_url=base_url or OPENAI_BASE_URL,
                                        **options)

    def _part(self, kind: str, value: str) -> Any:
        from PIL import Image

        from ieqa.backends import EncodedImage

        if kind == "text":
            return value
        with Image.open(value) as opened:
            image = opened.convert("RGB")
        if self.local:
            return image
        return EncodedImage(data=Path(value).read_bytes(),
                            mime=_MIME.get(Path(value).suffix.lower(), "image/jpeg"),
                            image=image)

    def requests(self, pair: Mapping[str, Any]) -> tuple[Any, Any]:
        """The two requests judging ``pair``: response A shown as A (forward), then response
        B shown as A (reverse); each image read once for both."""
        from ieqa.backends import Prompt

        parts = {key: [self._part(kind, value) for kind, value in pair[key]]
                 for key in ("prompt_content", "response_a", "response_b")}

        def one(first: str, second: str) -> Any:
            return Prompt(parts=(self.texts["edit"], _LABELS[0], *parts["prompt_content"],
                                 _LABELS[1], *parts[f"response_{first}"],
                                 _LABELS[2], *parts[f"response_{second}"]))

        return one("a", "b"), one("b", "a")

    def generation_options(self) -> dict[str, Any]:
        if not self.local:  # the server's defaults, as released: nothing but n
            return {"max_new_tokens": None, "temperature": None, "top_p": None}
        config = self.backend.model.generation_config
        return {"max_new_tokens": self.max_new_tokens, "temperature": LOCAL_TEMPERATURE,
                "top_p": config.top_p if config.top_p is not None else 1.0,
                "top_k": config.top_k, "seed": self.seed}

    def judge(self, pairs: Sequence[Mapping[str, Any]], *, batch_size: int = 8
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(released, ieqa)`` predictions in MMRB2's format: the released reading (a
        failed request or unread answer leaves the order without a judgement, as the
        released loop with ``n=1``) and ieqa's strict one; each entry's ``metadata`` holds the
        answer text or the error."""
        released: dict[str, Any] = {}
        mine: dict[str, Any] = {}
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start:start + batch_size]
            prompts = [prompt for p in chunk for prompt in self.requests(p)]
            gens = self.backend.generate(prompts, **self.generation_options())
            for k, pair in enumerate(chunk):
                released[pair["id"]], mine[pair["id"]] = {}, {}
                for j, key in enumerate(("forward", "reverse")):
                    gen = gens[2 * k + j][0]
                    meta = {"text": gen.text} if not gen.error else {"error": gen.error}
                    verdict = None if gen.error else released_judgement(gen.text)
                    strict = None if gen.error else strict_judgement(gen.text)
                    released[pair["id"]][key] = [] if verdict is None else [
                        {"judgement": verdict, "evaluator": self.model, "metadata": meta}]
                    mine[pair["id"]][key] = [{"judgement": strict, "evaluator": self.model,
                                              "metadata": meta}]
        return released, mine
