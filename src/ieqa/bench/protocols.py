"""Each benchmark's own metric set, as one declarative table (in the spirit of pyiqa's
metric configurations).

:data:`PROTOCOLS` maps a benchmark name (as registered in :data:`ieqa.registry.BENCHMARKS`)
and a protocol (``"pointwise"``, ``"pairwise"``, ``"multiway"``, or ``"judge"`` for
GenAI-Bench judge result files) to the :class:`MetricSpec` entries that
:func:`ieqa.bench.run.evaluate_predictions` computes. Every entry says how ties are
treated, which PLCC variant is used (raw, or after the VQEG four-parameter logistic fit)
and where the protocol comes from. A benchmark without an entry (e.g. data built by
hand) gets the generic set of its protocol (the ``manifest`` entries).

:func:`protocol_table` flattens the table into rows (rendered into ``docs/protocols.md`` with
:func:`protocol_markdown`).

Where a peer's released evaluation code computes a benchmark's number differently from ieqa's
correct default, the protocol holds a second metric that follows that code, named
``..._published``, with ``MetricSpec.published_beside`` naming the correct metric it stands
beside and ``source`` naming the released function; both are computed and reported.
:func:`published_table` lists these pairs (``docs/protocols.md``, via
:func:`published_markdown`); ``ieqa bench`` prints them side by side.

Conventions of the computations (see :mod:`ieqa.bench.run`, :mod:`ieqa.bench.pointwise`,
:mod:`ieqa.bench.preferences`, :mod:`ieqa.bench.multiway` and :mod:`ieqa.bench.judge`):

* Pointwise correlations are computed per dimension on the items that have both a
  prediction and a human score. SRCC/KRCC use raw predictions.
* Pairwise and multi-way verdicts of numeric predictions come from the score difference
  ``delta = score(a) - score(b)``; the model calls a tie when ``|delta| <= eps``
  (``eps`` = 0 by default: exact ties only).
* Tie-calibrated accuracy fits ``eps`` on a calibration split formed by a seeded 50/50
  split of the *groups* (``floor(G/2)`` groups, chosen by ``numpy.random.default_rng(seed)``
  permutation of the sorted group ids; a pair without a group id is its own group) and
  reports the accuracy on the other half; the variant fitted on all pairs is reported
  too, labelled *optimistic*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "GENERIC", "MetricSpec", "PROTOCOLS", "protocol_for", "protocol_markdown", "protocol_table",
    "published_markdown", "published_table", "register_metric_set",
]


@dataclass(frozen=True)
class MetricSpec:
    """One metric of a benchmark's protocol.

    Attributes:
        name: the metric's id in results (``BenchResult.rows[i].metric``).
        label: a human-readable name.
        kind: which computation produces it (a pointwise kind of
            :mod:`ieqa.bench.pointwise`, a preference kind of :mod:`ieqa.bench.preferences`,
            or a judge metric of :mod:`ieqa.bench.judge`).
        per: what one value covers (``"dimension"``, ``"task"``, ``"K"``, ...).
        ties: how human and model ties are treated.
        plcc: the PLCC variant (``"raw"``, ``"logistic4"``) or ``"-"``.
        source: paper / repository the protocol follows.
        needs: a condition on the data (the metric is skipped, with a note, otherwise).
        params: keyword arguments of the computation.
        published_beside: set on a metric that reproduces a peer's released evaluation
            code (its ``source`` names the function): the name of ieqa's correct metric it
            is shown beside; its own name when the released code computes the correct
            number itself.
    """

    name: str
    label: str
    kind: str
    per: str = "dimension"
    ties: str = "-"
    plcc: str = "-"
    source: str = ""
    needs: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    published_beside: str = ""


# --------------------------------------------------------------------------- sources

_VQEG = "VQEG FR-TV Phase II (logistic fit); DESIGN.md §4"
_EDITHF = "EditHF (seed 002): group SRCC and pair accuracy"
_EDITREWARD_EVAL = "TIGER-AI-Lab/EditReward evaluate/eval_bench.py"
_TIE_CAL = ("Deutsch et al. 2023 (arXiv:2305.14324) tie calibration, with eps fitted on a "
            "held-out split (EditReward's calc_accuracy_with_ties fits it on the test pairs)")
_EDITHF_NO_CODE = ("(paper text; IntMeGroup/EditHF releases inference code only, no "
                   "evaluation script was found)")

# --------------------------------------------------------------------------- metric sets

POINTWISE_CORE: tuple[MetricSpec, ...] = (
    MetricSpec("srcc", "SRCC", "srcc", ties="average ranks (as scipy.stats.spearmanr)",
               source=_VQEG),
    MetricSpec("krcc", "KRCC (tau-b)", "krcc", ties="tau-b tie correction", source=_VQEG),
    MetricSpec("plcc", "PLCC (raw)", "plcc", plcc="raw", source=_VQEG,
               params={"fit": "none"}),
    MetricSpec("plcc_logistic4", "PLCC (4-param logistic)", "plcc", plcc="logistic4",
               source=_VQEG, params={"fit": "logistic4"}),
    MetricSpec("rmse_logistic4", "RMSE after the 4-param logistic fit (human units)", "rmse",
               plcc="logistic4", source=_VQEG, params={"fit": "logistic4"}),
)

POINTWISE_GROUPED: tuple[MetricSpec, ...] = (
    MetricSpec("group_srcc", "group SRCC (mean over groups)", "grouped_srcc", per="dimension",
               ties="average ranks; constant groups skipped", source=_EDITHF,
               needs="samples with group_id, groups of >= 2", params={"average": "mean"}),
    MetricSpec("group_pair_accuracy", "within-group pair accuracy (pairs pooled)",
               "grouped_pair_accuracy", ties="human-tied pairs left out; a prediction tie is "
               "wrong; every pair weighs the same (big groups weigh more)",
               source="ieqa (pooled over all within-group pairs)",
               needs="samples with group_id, groups of >= 2", params={"average": "pairs"}),
    MetricSpec("group_pair_accuracy_group_mean",
               "within-group pair accuracy, mean over groups (EditHF)", "grouped_pair_accuracy",
               ties="human-tied pairs left out; a prediction tie is wrong; every group weighs "
               "the same", source="EditHF (seed 002) Table 2 'Acc', averaged over image groups "
               + _EDITHF_NO_CODE,
               needs="samples with group_id, groups of >= 2", params={"average": "groups"}),
)

EDITOR_SRCC = MetricSpec(
    "editor_srcc_fisher_z", "SRCC per editor, Fisher-z averaged: tanh(mean(arctanh r))",
    "grouped_srcc", ties="average ranks; editors with constant scores skipped",
    source="Fisher z average (ieqa.metrics.fisher_z_mean); EditReward's and VIEScore's released "
           "code average differently (the editor_srcc_*_published rows)",
    needs="samples with editor names", params={"average": "fisher_z", "by": "editor"})

_CONSTANT_EDITORS = ("average ranks; editors with constant scores skipped and counted (the "
                     "released code would average a NaN)")

EDITOR_SRCC_TANH_PUBLISHED = MetricSpec(
    "editor_srcc_tanh_mean_published",
    "SRCC per editor, tanh(mean r) with no arctanh (as published by EditReward, VIEScore)",
    "grouped_srcc", ties=_CONSTANT_EDITORS,
    source=_EDITREWARD_EVAL + " evaluate_imagenhub_from_json; TIGER-AI-Lab/VIEScore "
           "analyze_json.ipynb average_correlation (per task; it then repeats tanh(mean) over "
           "tasks)",
    needs="samples with editor names", params={"average": "tanh_of_mean", "by": "editor"},
    published_beside="editor_srcc_fisher_z")

EDITOR_SRCC_MEAN_PUBLISHED = MetricSpec(
    "editor_srcc_mean_published", "SRCC per editor, arithmetic mean of r (as published by "
    "EditReward for AURORA pointwise)", "grouped_srcc", ties=_CONSTANT_EDITORS,
    source=_EDITREWARD_EVAL + " evaluate_aurora_from_json_pointwise",
    needs="samples with editor names", params={"average": "mean", "by": "editor"},
    published_beside="editor_srcc_fisher_z")

NTIRE = MetricSpec(
    "ntire_final", "NTIRE final = 0.7 S_in + 0.3 S_out, S = mean over dims of (SRCC+PLCC)/2",
    "ntire", per="all dimensions", ties="average ranks", plcc="raw",
    source="DS-IEQA (seed 000) eqs. 6-7; NTIRE 2026 X-AIGC Track 2",
    needs="sample.meta['split'] in {'in', 'out'}", params={"plcc_fit": "none"})

PAIR_WITHOUT_TIES = MetricSpec(
    "accuracy_without_ties", "pair accuracy without ties", "pair_accuracy", per="dimension",
    ties="human ties left out; a model tie (|delta| <= eps) is wrong",
    source=_EDITREWARD_EVAL + " calc_accuracy_without_ties")

WITH_TIES_PUBLISHED = MetricSpec(
    "accuracy_with_ties_published",
    "accuracy with ties, eps swept on the evaluated pairs (as published by EditReward)",
    "with_ties_published", per="dimension",
    ties="pairs sorted by |delta| become model ties one at a time; the best accuracy after any "
         "step (at least one model tie; eps fitted on the test pairs: optimistic)",
    source=_EDITREWARD_EVAL + " calc_accuracy_with_ties (its 'paper metric')",
    published_beside="tie_calibrated_accuracy")

TIE_CALIBRATED: tuple[MetricSpec, ...] = (
    MetricSpec("tie_calibrated_accuracy", "tie-calibrated accuracy (eps from a calibration split)",
               "tie_calibrated", ties="model tie |delta| <= eps, eps fitted on a seeded 50/50 "
               "split of the groups, accuracy on the other half", source=_TIE_CAL,
               needs="at least 2 groups"),
    MetricSpec("tie_calibrated_accuracy_optimistic",
               "tie-calibrated accuracy, optimistic (eps fitted on the evaluated pairs)",
               "tie_calibrated_optimistic", ties="model tie |delta| <= eps, eps fitted on the "
               "test pairs themselves (an upper bound)",
               source="Deutsch et al. 2023 (arXiv:2305.14324); the number of EditReward's "
                      "calc_accuracy_with_ties_for_edit_reward_bench (evaluate/eval_bench.py)"),
)

GENAI_NUMERIC = MetricSpec(
    "accuracy_genai", "GenAI-Bench accuracy", "genai_accuracy", per="dimension",
    ties="|delta| <= eps is a verdict [[A=B]], right for tievote and bothbad_vote",
    source="TIGER-AI-Lab/GenAI-Bench inference.py parse_response")

GENAI_JUDGE: tuple[MetricSpec, ...] = (
    MetricSpec("accuracy_official", "GenAI-Bench accuracy from model_vote (official rule)",
               "judge_official", per="all items and per human vote",
               ties="exact strings: [[A=B]] right for tievote and bothbad_vote; null or any "
                    "other string wrong",
               source="TIGER-AI-Lab/GenAI-Bench inference.py parse_response",
               published_beside="accuracy_reparsed"),
    MetricSpec("accuracy_reparsed", "GenAI-Bench accuracy re-parsing response with ieqa",
               "judge_reparsed", per="all items and per human vote",
               ties="last bracketed verdict, spaces and case ignored; [[A=B]] right for both "
                    "tie kinds; no verdict is wrong",
               source="ieqa.prompts.answers.genai_bench_verdict"),
    MetricSpec("verdicts_differ", "items whose two verdicts differ", "judge_differ",
               per="all items", source="ieqa"),
)

STRICT = MetricSpec(
    "strict_accuracy", "strict accuracy, macro-averaged over task types", "strict_accuracy",
    per="dimension (and per task)", ties="right only if score(preferred) > score(other); "
    "any tie is wrong", source="VectorSpaceLab/EditScore evaluation.py, calculate_statistics.py "
    "(as published: the released code computes this same number)",
    published_beside="strict_accuracy")

MULTIWAY: tuple[MetricSpec, ...] = (
    MetricSpec("group_accuracy", "group accuracy: all K(K-1)/2 pairs right", "multiway",
               per="K (2, 3, 4) and all groups",
               ties="a human tie is right only if |delta| <= eps; a decided pair needs the "
                    "better one ahead by more than eps",
               source=_EDITREWARD_EVAL + "; EditReward (arXiv:2509.26346)"),
    PAIR_WITHOUT_TIES,
    *TIE_CALIBRATED,
)

EDITREWARD_PUBLISHED: tuple[MetricSpec, ...] = (
    MetricSpec("group_accuracy_published",
               "strict ranking accuracy as published by EditReward (its Table 2 K=2/3/4, overall)",
               "editreward_groups_published", per="K (2, 3, 4) and all groups (micro average)",
               ties="a K=2 human tie is right when |delta| <= the eps fitted on the K=2 test "
                    "pairs; otherwise the score order must equal the human ranking, an exact "
                    "score tie putting the later candidate first; a K>=3 human tie is wrong",
               source=_EDITREWARD_EVAL + " evaluate_edit_reward_bench (strict_ranking_accuracy)",
               published_beside="group_accuracy"),
    MetricSpec("pair_accuracy_published",
               "pairwise accuracy as published by EditReward (per K and overall)",
               "editreward_pairs_published", per="K (2, 3, 4) and all pairs",
               ties="K=2 and overall: eps fitted on those test pairs (optimistic); K=3/4: human "
                    "ties left out, a model tie is wrong",
               source=_EDITREWARD_EVAL + " calc_accuracy_with_ties_for_edit_reward_bench (K=2, "
                      "overall), calc_accuracy_without_ties (K=3, K=4)",
               published_beside="tie_calibrated_accuracy"),
)

MMRB2_OFFICIAL = MetricSpec(
    "accuracy_mmrb2", "MMRB2 accuracy: both presentation orders, as compute_accuracy.py",
    "mmrb2_official", per="dimension and prompt source",
    ties="a score tie (|delta| <= eps) is judged 'tie': evaluated and wrong; pairs without "
         "a prediction left out and counted",
    source="facebookresearch/MMRB2 evaluate/compute_scores/compute_accuracy.py "
           "compute_task_accuracy", published_beside="accuracy_without_ties")

POINTWISE_GENERIC = (*POINTWISE_CORE, *POINTWISE_GROUPED)
PAIRWISE_GENERIC = (PAIR_WITHOUT_TIES, *TIE_CALIBRATED)

#: The generic metric set of each protocol (benchmarks without their own entry).
GENERIC: dict[str, tuple[MetricSpec, ...]] = {
    "pointwise": POINTWISE_GENERIC,
    "pairwise": PAIRWISE_GENERIC,
    "multiway": MULTIWAY,
}

#: benchmark name -> protocol -> its metric set.
PROTOCOLS: dict[str, dict[str, tuple[MetricSpec, ...]]] = {
    "genai-bench": {
        "judge": GENAI_JUDGE,
        "pairwise": (GENAI_NUMERIC, PAIR_WITHOUT_TIES, *TIE_CALIBRATED, WITH_TIES_PUBLISHED),
    },
    "imagenhub": {"pointwise": (*POINTWISE_GENERIC, EDITOR_SRCC, EDITOR_SRCC_TANH_PUBLISHED)},
    "editreward-bench": {"multiway": (*MULTIWAY, *EDITREWARD_PUBLISHED)},
    "editscore-bench": {"pairwise": (STRICT,)},
    "ebench": {"pointwise": POINTWISE_GENERIC},
    "aurora": {
        "pointwise": (*POINTWISE_GENERIC, EDITOR_SRCC, EDITOR_SRCC_MEAN_PUBLISHED),
        "pairwise": (*PAIRWISE_GENERIC, WITH_TIES_PUBLISHED),
    },
    "ntire-xaigc": {"pointwise": (*POINTWISE_GENERIC, NTIRE)},
    "mmrb2-edit": {"pairwise": (MMRB2_OFFICIAL, PAIR_WITHOUT_TIES)},
    "shapesedit": dict(GENERIC),
    "manifest": dict(GENERIC),
}


def register_metric_set(benchmark: str, protocol: str, specs: tuple[MetricSpec, ...], *,
                        overwrite: bool = False) -> None:
    """Give ``benchmark`` (a name of :data:`ieqa.registry.BENCHMARKS`) its own metric set
    under ``protocol``, from the benchmark's own module (a benchmark without one gets
    :data:`GENERIC`'s). A set already there raises ``ValueError`` unless ``overwrite``."""
    if protocol not in {*GENERIC, "judge"}:
        raise ValueError(f"unknown protocol {protocol!r}; known: "
                         f"{', '.join(sorted({*GENERIC, 'judge'}))}")
    if not specs:
        raise ValueError(f"{benchmark} {protocol}: a metric set needs at least one metric")
    own = PROTOCOLS.setdefault(benchmark, {})
    if protocol in own and not overwrite:
        raise ValueError(f"{benchmark} has a {protocol} metric set already; pass "
                         "overwrite=True to replace it")
    own[protocol] = tuple(specs)


def protocol_for(benchmark: str, protocol: str) -> tuple[tuple[MetricSpec, ...], bool]:
    """``(metric set, is_generic)`` for ``benchmark`` under ``protocol``: its own entry,
    else the generic set of the protocol. Raises ``KeyError`` for an unknown protocol."""
    own = PROTOCOLS.get(benchmark, {})
    if protocol in own:
        return own[protocol], False
    if protocol not in GENERIC:
        known = sorted({*GENERIC, "judge"})
        raise KeyError(f"unknown protocol {protocol!r}; known: {', '.join(known)}")
    return GENERIC[protocol], True


def protocol_table() -> list[dict[str, str]]:
    """One row per (benchmark, protocol, metric): ``benchmark``, ``protocol``, ``metric``,
    ``label``, ``per``, ``ties``, ``plcc``, ``needs``, ``source``."""
    rows = []
    for bench, protocols in PROTOCOLS.items():
        for protocol, specs in protocols.items():
            for s in specs:
                rows.append({"benchmark": bench, "protocol": protocol, "metric": s.name,
                             "label": s.label, "per": s.per, "ties": s.ties, "plcc": s.plcc,
                             "needs": s.needs, "source": s.source})
    return rows


def protocol_markdown() -> str:
    """:func:`protocol_table` as a Markdown table (for ``docs/protocols.md``)."""
    cols = ("benchmark", "protocol", "metric", "per", "ties", "plcc", "needs", "source")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in protocol_table():
        cells = (row[c].replace("|", "\\|") or "-" for c in cols)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def published_table() -> list[dict[str, str]]:
    """One row per benchmark metric that follows a peer's released code
    (``MetricSpec.published_beside`` set): ``benchmark``, ``protocol``, ``correct`` (ieqa's
    metric), ``as_published`` (the metric following the released code, or ``"= correct"``
    where the released code computes the correct number itself), ``released`` (the
    released function, = the spec's ``source``) and ``rule`` (its tie rule)."""
    rows = []
    for bench, protocols in PROTOCOLS.items():
        for protocol, specs in protocols.items():
            for s in specs:
                if not s.published_beside:
                    continue
                same = s.published_beside == s.name
                rows.append({"benchmark": bench, "protocol": protocol,
                             "correct": s.published_beside,
                             "as_published": "= correct (the same number)" if same else s.name,
                             "released": s.source, "rule": s.ties})
    return rows


def published_markdown() -> str:
    """:func:`published_table` as a Markdown table (for ``docs/protocols.md``)."""
    cols = ("benchmark", "protocol", "correct", "as_published", "released")
    lines = ["| benchmark | protocol | correct (ieqa) | as published | released function |",
             "|" + "---|" * len(cols)]
    for row in published_table():
        cells = (row[c].replace("|", "\\|") for c in cols)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
