"""Explanation-text metrics as pure functions: ROUGE-1, METEOR, embedding cosine, and the
mean ± std over repeated runs (ReasonEdit (004) Table 4).

Every function compares a *prediction* (a model's explanation) with a *reference* (the
ground-truth explanation) and returns a float in [0, 1] (cosine: [-1, 1]), higher better.

* :func:`rouge1` — ROUGE-1 F-measure computed by Google's ``rouge-score`` package
  (``pip install 'ieqa[explain]'``); its tokenizer lower-cases and keeps ``[a-z0-9]+`` runs.
* :func:`meteor` — sentence METEOR by NLTK's implementation with Lavie & Agarwal's (2007)
  parameters as NLTK uses them: ``alpha=0.9``, ``beta=3``, ``gamma=0.5``, i.e.
  ``P = m/|hyp|``, ``R = m/|ref|``, ``Fmean = P·R / (alpha·P + (1 - alpha)·R)``,
  ``penalty = gamma · (chunks/m)^beta``, ``score = (1 - penalty) · Fmean``. Matching stages:
  exact, then Porter-stem, then WordNet synonyms **only when NLTK's WordNet data is
  installed** (``python -m nltk.downloader wordnet``). :func:`meteor_variant` names the
  variant that runs here (``"exact+stem"`` offline, ``"exact+stem+wordnet"`` with the
  data); every result records it, because the two give different numbers.
* :func:`embedding_cosine` — cosine similarity of mean-pooled last hidden states of any
  Hugging Face text encoder (:class:`TextEncoder`); ReasonEdit reports SimCSE, ieqa's
  documented default is :data:`DEFAULT_ENCODER`, loaded only when asked for.
* :func:`mean_std` — the mean and the sample standard deviation (ddof=1) of one metric
  over repeated runs of the same model, as ReasonEdit reports "results and variance
  across five inference runs" (the paper's number is read as a standard deviation).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from ieqa.errors import IeqaError

__all__ = [
    "DEFAULT_ENCODER", "METEOR_PARAMS", "ExplainMetricError", "TextEncoder", "embedding_cosine",
    "mean_std", "meteor", "meteor_tokens", "meteor_variant", "rouge1", "wordnet_available",
]

#: The text encoder ``ieqa bench-explanations --embedding`` loads when no ``--encoder`` is
#: given (a mean-pooled sentence-transformers model; downloaded from the Hub on first use).
DEFAULT_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
#: METEOR's parameters (Lavie & Agarwal 2007, as NLTK's ``single_meteor_score`` defaults).
METEOR_PARAMS: dict[str, float] = {"alpha": 0.9, "beta": 3.0, "gamma": 0.5}

_WORD = re.compile(r"\w+", re.UNICODE)


class ExplainMetricError(IeqaError, ValueError):
    """An explanation metric cannot be computed (missing package, bad argument)."""


def _need(module: str, extra: str = "explain") -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ExplainMetricError(f"{module.split('.')[0]} is not installed: pip install "
                                 f"'ieqa[{extra}]' (or pip install rouge-score, which pulls "
                                 f"nltk too)") from exc


def _check_text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise ExplainMetricError(f"{name} must be text, got {type(value).__name__}")
    return value


# ----------------------------------------------------------------------------- ROUGE-1


@cache
def _rouge_scorer(use_stemmer: bool) -> Any:
    rouge = _need("rouge_score.rouge_scorer")
    return rouge.RougeScorer(["rouge1"], use_stemmer=use_stemmer)


def rouge1(prediction: str, reference: str, *, use_stemmer: bool = False,
           measure: Literal["fmeasure", "precision", "recall"] = "fmeasure") -> float:
    """ROUGE-1 between one prediction and one reference, by the ``rouge-score`` package.

    Args:
        prediction: the model's explanation.
        reference: the ground-truth explanation.
        use_stemmer: Porter-stem tokens first (``rouge-score``'s option; off by default as
            in the package).
        measure: ``"fmeasure"`` (the usual ROUGE-1 number), ``"precision"`` or ``"recall"``.

    Returns:
        A value in [0, 1]; 0 when either text has no ``[a-z0-9]`` token.
    """
    _check_text(prediction, "prediction")
    _check_text(reference, "reference")
    if measure not in ("fmeasure", "precision", "recall"):
        raise ExplainMetricError(f"measure must be fmeasure, precision or recall, got {measure!r}")
    score = _rouge_scorer(bool(use_stemmer)).score(reference, prediction)["rouge1"]
    return float(getattr(score, measure))


# ------------------------------------------------------------------------------ METEOR


def wordnet_available() -> bool:
    """Whether NLTK's WordNet corpus data is installed (then METEOR matches synonyms)."""
    _need("nltk")
    from nltk.corpus import wordnet

    try:
        wordnet.ensure_loaded()
    except LookupError:
        return False
    return True


def meteor_variant(use_wordnet: bool | None = None) -> str:
    """The METEOR matching stages that :func:`meteor` runs with ``use_wordnet``:
    ``"exact+stem"`` or ``"exact+stem+wordnet"`` (``None``: WordNet when installed)."""
    if use_wordnet is None:
        use_wordnet = wordnet_available()
    return "exact+stem+wordnet" if use_wordnet else "exact+stem"


class _NoSynonyms:
    """A stand-in WordNet with no synonyms: NLTK's synonym stage then matches nothing."""

    def synsets(self, word: str) -> list[Any]:
        return []


def meteor_tokens(text: str) -> list[str]:
    """METEOR's tokens: lower-cased runs of word characters (``\\w+``, Unicode)."""
    return _WORD.findall(_check_text(text, "text").lower())


def meteor(prediction: str, reference: str, *, use_wordnet: bool | None = None,
           alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5) -> float:
    """Sentence METEOR of one prediction against one reference (NLTK's implementation).

    Args:
        prediction: the model's explanation (the hypothesis).
        reference: the ground-truth explanation.
        use_wordnet: match WordNet synonyms after exact and stem matches. ``None``: when
            NLTK's WordNet data is installed; ``True`` without the data raises;
            ``False``: exact + Porter-stem matching only. :func:`meteor_variant` names it.
        alpha: weight of precision against recall in Fmean, in (0, 1].
        beta: exponent of the fragmentation penalty, > 0.
        gamma: weight of the fragmentation penalty, in [0, 1].

    Returns:
        ``(1 - gamma·(chunks/matches)^beta) · P·R / (alpha·P + (1-alpha)·R)`` in [0, 1];
        0 when nothing matches or either text has no token.
    """
    if not 0 < alpha <= 1:
        raise ExplainMetricError(f"alpha must lie in (0, 1], got {alpha}")
    if beta <= 0:
        raise ExplainMetricError(f"beta must be > 0, got {beta}")
    if not 0 <= gamma <= 1:
        raise ExplainMetricError(f"gamma must lie in [0, 1], got {gamma}")
    _need("nltk")
    from nltk.translate.meteor_score import single_meteor_score

    if use_wordnet is None:
        use_wordnet = wordnet_available()
    if use_wordnet:
        if not wordnet_available():
            raise ExplainMetricError("use_wordnet=True but NLTK's WordNet data is not installed: "
                                     "python -m nltk.downloader wordnet (or use_wordnet=False "
                                     "for exact + stem matching)")
        from nltk.corpus import wordnet as synonyms
    else:
        synonyms = _NoSynonyms()
    hyp, ref = meteor_tokens(prediction), meteor_tokens(reference)
    if not hyp or not ref:
        return 0.0
    return float(single_meteor_score(ref, hyp, wordnet=synonyms, alpha=alpha, beta=beta,
                                     gamma=gamma))


# ------------------------------------------------------------------ embedding cosine


@dataclass
class TextEncoder:
    """Any Hugging Face text encoder (``AutoModel`` + ``AutoTokenizer``) as sentence vectors.

    A text's vector is the mean of the encoder's last hidden state over its non-padding
    tokens (``pooling="mean"``, sentence-transformers' pooling for
    :data:`DEFAULT_ENCODER`) or the first token's state (``pooling="cls"``, SimCSE's).

    Build it from objects (``TextEncoder(model, tokenizer)``, e.g. a tiny random BERT in
    tests) or with :meth:`load` from a hub id or folder.

    Attributes:
        model: a transformers encoder returning ``last_hidden_state``.
        tokenizer: its tokenizer.
        name: recorded in results (hub id or folder).
        pooling: ``"mean"`` or ``"cls"``.
        max_length: texts are truncated to this many tokens.
        batch_size: texts per forward pass.
    """

    model: Any
    tokenizer: Any
    name: str = "custom"
    pooling: Literal["mean", "cls"] = "mean"
    max_length: int = 512
    batch_size: int = 32

    def __post_init__(self) -> None:
        if self.pooling not in ("mean", "cls"):
            raise ExplainMetricError(f"pooling must be 'mean' or 'cls', got {self.pooling!r}")
        if self.max_length < 1 or self.batch_size < 1:
            raise ExplainMetricError("max_length and batch_size must be >= 1")

    @classmethod
    def load(cls, name_or_path: str = DEFAULT_ENCODER, *, device: str = "cpu",
             pooling: Literal["mean", "cls"] = "mean", max_length: int = 512,
             batch_size: int = 32) -> TextEncoder:
        """Load an encoder by hub id or local folder (a download unless cached or offline)."""
        from transformers import AutoModel, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(name_or_path)
            model = AutoModel.from_pretrained(name_or_path).to(device).eval()
        except (OSError, ValueError) as exc:
            raise ExplainMetricError(
                f"cannot load the text encoder {name_or_path!r}: {str(exc).rstrip('.')}. Pass a local folder or "
                f"a hub id that is cached (HF_HUB_OFFLINE=1 forbids downloads)") from exc
        return cls(model, tokenizer, name=str(name_or_path), pooling=pooling,
                   max_length=max_length, batch_size=batch_size)

    def encode(self, texts: Sequence[str]) -> Any:
        """A float32 tensor ``(len(texts), hidden)`` of pooled, unnormalised vectors."""
        import torch

        out = []
        device = next(self.model.parameters()).device
        for start in range(0, len(texts), self.batch_size):
            batch = [_check_text(t, "text") for t in texts[start:start + self.batch_size]]
            enc = self.tokenizer(batch, padding=True, truncation=True,
                                 max_length=self.max_length, return_tensors="pt").to(device)
            with torch.no_grad():
                hidden = self.model(**enc).last_hidden_state.float()
            if self.pooling == "cls":
                out.append(hidden[:, 0])
            else:
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                out.append((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0))
        if not out:
            return torch.zeros(0, 0)
        return torch.cat(out)


def embedding_cosine(predictions: Sequence[str], references: Sequence[str],
                     encoder: TextEncoder) -> list[float]:
    """Per pair, the cosine similarity in [-1, 1] of the two texts' pooled vectors.

    Args:
        predictions: model explanations.
        references: ground-truth explanations, one per prediction (same order).
        encoder: the :class:`TextEncoder` to embed both with.
    """
    if isinstance(predictions, str) or isinstance(references, str):
        raise ExplainMetricError("predictions and references must be lists of texts")
    if len(predictions) != len(references):
        raise ExplainMetricError(f"{len(predictions)} predictions but {len(references)} "
                                 "references; pass one reference per prediction")
    if not predictions:
        return []
    import torch

    vectors = encoder.encode([*predictions, *references])
    a, b = vectors[:len(predictions)], vectors[len(predictions):]
    cos = torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-12)
    # float32 rounding can put identical texts at 1.0000001: a cosine is in [-1, 1]
    return [float(x) for x in cos.clamp(-1.0, 1.0)]


# --------------------------------------------------------------------- repeated runs


def mean_std(values: Sequence[float], ddof: int = 1) -> tuple[float, float]:
    """``(mean, std)`` of one metric over repeated runs.

    Args:
        values: the metric of each run (e.g. the mean ROUGE-1 of five inference runs).
        ddof: delta degrees of freedom of the standard deviation (1: sample std, the
            default; 0: population std).

    Returns:
        ``(mean, std)``; the std is ``nan`` when there are not more than ``ddof`` runs.
    """
    vals = [float(v) for v in values]
    if not vals:
        raise ExplainMetricError("mean_std needs at least one value")
    if ddof < 0:
        raise ExplainMetricError(f"ddof must be >= 0, got {ddof}")
    mean = math.fsum(vals) / len(vals)
    if len(vals) <= ddof:
        return mean, math.nan
    var = math.fsum((v - mean) ** 2 for v in vals) / (len(vals) - ddof)
    return mean, math.sqrt(var)
