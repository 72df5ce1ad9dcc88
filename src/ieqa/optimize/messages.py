"""The optimiser's messages: the prompt that asks for a better definition from the trial
history. Reading the definition out of its answer is
:func:`ieqa.prompts.answers.parse_definition`, with the other answer parsers.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

from ieqa.data.dimensions import canonical_dimension
from ieqa.optimize.records import Failure, Trial
from ieqa.prompts.redefine import FDMPOError

#: the optimiser's system message (DS-IEQA prints none; written for ieqa)
OPTIMIZER_SYSTEM = ("You improve the wording of evaluation criteria for an automatic image "
                    "editing quality assessor. You answer with one definition only.")

#: the optimiser's user message; placeholders: {dimension}, {Dimension}, {low}, {high},
#: {n_samples}, {history} (one "V_d = x: definition" line per trial, lowest V_d first),
#: {best_definition}, {best_value}, {n_trials}, {max_chars}
OPTIMIZER_PROMPT = """\
A multimodal model judges image edits. It sees a source image, the edited image and the \
editing instruction, and answers "{Dimension} score: X.XX" on a scale from {low} to {high}. \
Its system prompt holds a definition of {dimension}, and the wording of that definition \
changes how well the model's scores match human ratings.

Each definition below was measured by its Definition Value V_d (from 0 to 1.11, higher is \
better): the probability the model gives to the digits of the human ratings, averaged over \
{n_samples} rated edits.

The {n_trials} definitions tried so far, from the lowest V_d to the highest:
{history}

The best so far (V_d = {best_value}):
{best_definition}

Write one new definition of {dimension} that you expect to reach a higher V_d than every \
definition above. It must differ from all of them and be at most {max_chars} characters \
long. Reply with the definition only, between <definition> and </definition>."""

#: appended to the user message after rejected answers: the header, then one
#: :data:`RETRY_LINE` per rejected answer of this proposal
RETRY_NOTE = "\n\nYour previous answers were rejected; write a different definition:"
#: one rejected answer; {attempt}, {kind}, {reason}
RETRY_LINE = "\n- attempt {attempt} was rejected ({kind}): {reason}"

_PROMPT_FIELDS = frozenset({"dimension", "Dimension", "low", "high", "n_samples", "history",
                            "best_definition", "best_value", "n_trials", "max_chars"})



# ------------------------------------------------------------------------ prompts
def check_prompt(prompt: str) -> None:
    """Raise :class:`~ieqa.prompts.redefine.FDMPOError` for an optimiser prompt with an
    unknown or malformed placeholder (the known ones are listed on :data:`OPTIMIZER_PROMPT`)."""
    try:
        names = {n for _, n, _, _ in string.Formatter().parse(prompt) if n is not None}
    except ValueError as exc:
        raise FDMPOError(f"optimiser prompt: {exc} (write literal braces as '{{{{' and "
                         "'}}}}')") from None
    unknown = sorted(names - _PROMPT_FIELDS)
    if unknown:
        raise FDMPOError(f"optimiser prompt: unknown placeholder(s) {unknown}; known: "
                         f"{', '.join(sorted(_PROMPT_FIELDS))}")
    if "history" not in names:
        raise FDMPOError("optimiser prompt: it must show the trials through {history}")


def ranked_trials(trials: Sequence[Trial]) -> list[Trial]:
    """Trials from the lowest V_d to the highest (ties: later iterations first, so the
    earliest of equals, the one selected, comes last)."""
    return sorted(trials, key=lambda t: (t.v_d, -t.iteration))


def render_optimizer_messages(dimension: str, trials: Sequence[Trial], *, n_samples: int,
                              scale: tuple[float, float] = (1, 5),
                              prompt: str = OPTIMIZER_PROMPT, system: str = OPTIMIZER_SYSTEM,
                              max_history: int = 20, max_chars: int = 2000,
                              label: str | None = None,
                              rejected: Sequence[Failure] = ()) -> list[dict[str, str]]:
    """The optimiser's chat messages for the next proposal.

    Args:
        dimension: the dimension (canonical name or alias).
        trials: the trials so far (at least one).
        n_samples: samples V_d is averaged over (shown to the optimiser).
        scale: the template's score range.
        prompt, system: the user and system texts (see :data:`OPTIMIZER_PROMPT`).
        max_history: show only the best this many trials (>= 1).
        max_chars: the longest definition accepted.
        label: the dimension's display name (default from the dimension).
        rejected: the failed attempts of this proposal, listed after :data:`RETRY_NOTE`
            (so a greedy optimiser sees a different prompt on each retry).
    """
    if not trials:
        raise FDMPOError("the optimiser needs at least one evaluated trial")
    check_prompt(prompt)
    label = label or canonical_dimension(dimension).replace("_", " ")
    shown = ranked_trials(trials)[-max(1, max_history):]
    best = shown[-1]
    lo, hi = (f"{v:g}" for v in scale)
    user = prompt.format(
        dimension=label, Dimension=label[:1].upper() + label[1:], low=lo, high=hi,
        n_samples=n_samples, n_trials=len(trials), max_chars=max_chars,
        history="\n".join(f"V_d = {t.v_d:.4f}: {t.definition}" for t in shown),
        best_definition=best.definition, best_value=f"{best.v_d:.4f}")
    if rejected:
        user += RETRY_NOTE + "".join(RETRY_LINE.format(attempt=f.attempt, kind=f.failure,
                                                       reason=f.message) for f in rejected)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


