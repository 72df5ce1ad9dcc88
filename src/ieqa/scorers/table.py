"""The scorer table: one :class:`~ieqa.scorers.base.ScorerInfo` row per built-in scorer, and
:func:`scorer_info` / :func:`list_scorers` over it (the first layer of the scorer factory:
table -> :mod:`~ieqa.scorers.build` -> :mod:`~ieqa.scorers.checkpoint` ->
:func:`~ieqa.scorers.catalog.create_scorer`).

Every scorer is one row below plus one module; the module is imported only when the scorer
is built, so listing scorers stays cheap.
"""

from __future__ import annotations

from ieqa.data.dimensions import canonical_dimension
from ieqa.registry import SCORERS
from ieqa.scorers.base import ScorerInfo

__all__ = ["SCORER_TABLE", "VLM_TABLE", "PUBLISHED_TABLE", "list_scorers", "register_scorer",
           "scorer_info"]

_METRIC = "ieqa.scorers.classic.metric:MetricScorer"
_PRESERVATION = ("content_preservation",)
_QUALITY = ("visual_quality",)


def _fr(name: str, description: str, *, higher_better: bool = True, units: str = "",
        score_range: tuple[float | None, float | None] = (0.0, 1.0)) -> ScorerInfo:
    return ScorerInfo(name, description, "full-reference", _PRESERVATION, higher_better,
                      needs_source=True, factory=_METRIC, score_range=score_range,
                      units=units, defaults={"metric": name},
                      function=f"ieqa.scorers.classic.fr:{name}")


def _nr(name: str, description: str, *, higher_better: bool, units: str,
        score_range: tuple[float | None, float | None]) -> ScorerInfo:
    return ScorerInfo(name, description, "no-reference", _QUALITY, higher_better,
                      needs_source=False, factory=_METRIC, score_range=score_range,
                      units=units, defaults={"metric": name},
                      function=f"ieqa.scorers.classic.{name}:{name}")


#: The declarative table of every built-in scorer.
SCORER_TABLE: tuple[ScorerInfo, ...] = (
    ScorerInfo(
        "classic",
        "Weight-free default: preservation of what the instruction did not ask to change "
        "(scope read from the instruction: edit region, or the requested global operation "
        "fitted), NR quality plus local naturalness; alignment unavailable (use a VLM scorer)",
        "composite",
        ("visual_quality", "content_preservation", "instruction_alignment"),
        higher_better=True, needs_source=True, factory="ieqa.scorers.classic.composite:ClassicScorer",
        score_range=(1.0, 5.0), units="1-5 scale", extras=()),
    _fr("psnr", "Peak signal-to-noise ratio of the edited image against the source (RGB, as "
        "scikit-image; channel='y' for the Y channel)",
        units="dB", score_range=(0.0, None)),
    _fr("ssim", "Structural similarity (Wang et al. 2004, MATLAB conventions) against the source",
        score_range=(-1.0, 1.0)),
    _fr("ms_ssim", "Multi-scale SSIM (Wang et al. 2003) against the source"),
    _fr("gmsd", "Gradient magnitude similarity deviation (Xue et al. 2014); lower is better",
        higher_better=False, score_range=(0.0, None)),
    _fr("vif", "Visual information fidelity (Sheikh & Bovik 2006, wavelet domain); above 1 "
        "when the edit adds contrast",
        score_range=(0.0, None)),
    _fr("fsim", "Feature similarity (Zhang et al. 2011, FSIMc on colour): phase congruency and "
        "gradients"),
    *(ScorerInfo(name, description, kind, (dim,), higher_better=better,
                 needs_source=needs_source, factory="ieqa.scorers.edit_metrics:EditMetricScorer",
                 score_range=rng, units=units, defaults={"metric": name},
                 release={} if kind != "learned" else {
                     "hub_id": "facebook/dino-vits16" if name == "dino"
                     else "openai/clip-vit-base-patch32",
                     "paper": "MagicBrush (Zhang et al. 2023); Emu Edit (Sheynin et al. 2024)"})
      for name, description, kind, dim, better, needs_source, rng, units in (
          ("l1", "MagicBrush's L1: mean absolute RGB difference in [0, 1] of the edit (resized "
           "to the reference's size) and the source or, with reference=target, the "
           "ground-truth target; lower is better", "full-reference", "content_preservation",
           False, True, (0.0, 1.0), "0-1"),
          ("l2", "MagicBrush's L2: mean squared RGB difference in [0, 1] of the edit and the "
           "source (or the target, reference=target); lower is better", "full-reference",
           "content_preservation", False, True, (0.0, 1.0), "0-1"),
          ("clip-i", "CLIP-I: cosine of the CLIP image embeddings of the edit and the source "
           "(or the target), openai/clip-vit-base-patch32 as MagicBrush's ViT-B/32", "learned",
           "content_preservation", True, True, (-1.0, 1.0), "cosine"),
          ("clip-t", "CLIP-T: cosine of the edit's CLIP image embedding and the text embedding "
           "of the wanted result's caption (meta output_caption)", "learned",
           "instruction_alignment", True, False, (-1.0, 1.0), "cosine"),
          ("clip-dir", "CLIP directional similarity (InstructPix2Pix, Emu Edit): cosine of the "
           "change of the image embeddings (source to edit) and of the caption embeddings "
           "(meta input_caption to output_caption)", "learned", "instruction_alignment", True,
           True, (-1.0, 1.0), "cosine"),
          ("dino", "DINO: cosine of the DINO ViT-S/16 class tokens of the edit and the source "
           "(or the target), MagicBrush's preprocessing", "learned", "content_preservation",
           True, True, (-1.0, 1.0), "cosine"),
      )),
    ScorerInfo("edit-metrics", "The six editing-paper metrics in one pass (l1, l2, clip-i, "
               "clip-t, clip-dir, dino in raw['metrics']; scores: content_preservation = CLIP-I, "
               "instruction_alignment = CLIP-dir), for bench-editor emu-edit", "learned",
               ("content_preservation", "instruction_alignment"), higher_better=True,
               needs_source=True, factory="ieqa.scorers.edit_metrics:EditMetricsScorer",
               score_range=(-1.0, 1.0), units="cosine",
               release={"hub_id": "openai/clip-vit-base-patch32 and facebook/dino-vits16",
                        "paper": "MagicBrush (Zhang et al. 2023); Emu Edit (Sheynin et al. "
                                 "2024)"}),
    _nr("niqe", "Natural image quality evaluator (Mittal et al. 2013), pristine model fitted "
        "offline; lower is better", higher_better=False, units="distance",
        score_range=(0.0, None)),
    _nr("piqe", "Perception-based image quality evaluator (Venkatanath et al. 2015); lower is "
        "better", higher_better=False, units="0-100", score_range=(0.0, 100.0)),
)


_VLM_DIMS = ("visual_quality", "instruction_alignment", "content_preservation", "overall")


def _vlm(name: str, description: str, factory: str, *,
         score_range: tuple[float | None, float | None] = (None, None), units: str = "",
         dimensions: tuple[str, ...] = _VLM_DIMS) -> ScorerInfo:
    return ScorerInfo(name, description, "vlm", dimensions, higher_better=True,
                      needs_source=True, needs_instruction=True,
                      factory=f"ieqa.scorers.vlm.{factory}", score_range=score_range, units=units)


VLM_TABLE: tuple[ScorerInfo, ...] = (
    _vlm("vlm-judge", "VLM-as-a-judge: generate, parse JSON/text scores, optional self-ensemble "
         "over N passes (EditScore) or template=viescore (VIEScore SC/PQ, sqrt(SC*PQ)); "
         "transformers or OpenAI-compatible server", "judge:JudgeScorer",
         units="template scale"),
    _vlm("vlm-levels", "Q-Align expected score over the level words' logits (EPAIQA level "
         "scoring), 1-5", "levels:LevelsScorer", score_range=(1.0, 5.0), units="1-5 scale"),
    _vlm("vlm-digits", "DS-IEQA expected 'd.dd' score from per-position digit distributions; "
         "Definition Value V_d on labelled samples", "digits:DigitsScorer",
         units="template scale"),
    _vlm("vlm-head", "EditHF-style MLP head on the hidden state at an anchor (last prompt "
         "token, a special token or the mean)", "heads:HeadScorer", units="trained target scale"),
    _vlm("vlm-gaussian", "EditReward per-dimension (mu, sigma) heads; overall by min/mean/sum "
         "of mu", "heads:GaussianScorer", units="trained target scale"),
    _vlm("vlm-dual", "ReasonEdit dual head: three scores from the prefill state plus a "
         "generated critique; overall 0.3/0.4/0.3", "heads:DualScorer",
         units="trained target scale"),
    _vlm("vlm-pairwise", "A-vs-B verdicts ([[A>B]] ...) with random or both orders and a "
         "position-bias report (use .compare)", "pairwise:PairwiseJudge",
         dimensions=("overall",), units="verdict"),
    ScorerInfo("ensemble", "Mean of several scorers' scores normalised to [0, 1] (DS-IEQA "
               "backbone ensemble)", "composite", _VLM_DIMS, higher_better=True,
               needs_source=False, factory="ieqa.scorers.ensemble:EnsembleScorer",
               score_range=(0.0, 1.0), units="0-1 normalised"),
    ScorerInfo("critique", "RE-Reward (ReasonEdit): logicality, accuracy and usefulness of a "
               "critique of the edit (text in meta['critique']), their weighted reward as "
               "overall (accuracy 0.5, others 0.25; weights=); checkpoint= from the re-reward "
               "recipe", "vlm", ("logicality", "accuracy", "usefulness", "overall"),
               higher_better=True, needs_source=True, needs_instruction=True,
               factory="ieqa.scorers.critique:CritiqueScorer", units="trained target scale"),
    ScorerInfo("shapesedit-judge", "Programmatic critique judge: claims of the critique in "
               "meta['completion'] checked against the ShapesEdit generation record (a "
               "stand-in RE-Reward for tests and benchmarks)", "composite",
               ("logicality", "accuracy", "usefulness"), higher_better=True, needs_source=False,
               factory="ieqa.scorers.shapesedit_judge:ShapesEditCritiqueJudge",
               score_range=(0.0, 1.0), units="share of claims"),
)


#: the field's released evaluators, run as their authors run them (weights from the hub)
PUBLISHED_TABLE: tuple[ScorerInfo, ...] = (
    ScorerInfo("editreward", "EditReward as released: two prompts, two (mu, sigma) heads at "
               "<|Reward|>, 1-D positions, heads fused by the mean of [mu, log sigma]; "
               "-O variant=mimo-vl-7b for the MiMo-VL release, -O variant=qwen3-vl-8b for "
               "the authors' Qwen3-VL configuration (--model: your checkpoint)", "vlm",
               ("instruction_alignment", "visual_quality", "overall"), higher_better=True,
               needs_source=True, needs_instruction=True,
               factory="ieqa.scorers.published.editreward:EditRewardScorer",
               units="reward (unbounded)",
               release={"hub_id": "TIGER-Lab/EditReward-Qwen2.5-7B-VL",
                        "base_model": "Qwen/Qwen2.5-VL-7B-Instruct", "parameters": "8.3 B",
                        "paper": "EditReward (Wu et al. 2025)"}),
    ScorerInfo("editscore", "EditScore as released: LoRA on Qwen2.5-VL answering VIEScore-style "
               "SC and PQ prompts on 0-25 (rescaled to 0-10), sampled passes seeded "
               "seed+pass, overall by average_last (or -O reduction=average_first...); "
               "-O variant=32b|72b, or qwen3-vl-4b|8b|32b (LoRA on Qwen3-VL); a vLLM "
               "server with --lora-modules via -O base_url=",
               "vlm", ("instruction_alignment", "content_preservation", "visual_quality",
                       "sc_min", "overall"), higher_better=True, needs_source=True,
               needs_instruction=True, factory="ieqa.scorers.published.editscore:EditScoreScorer",
               score_range=(0.0, 10.0), units="0-10",
               release={"hub_id": "EditScore/EditScore-7B",
                        "base_model": "Qwen/Qwen2.5-VL-7B-Instruct", "parameters": "8.3 B",
                        "paper": "EditScore (Luo et al. 2025)"}),
    ScorerInfo("ie-critic-r1", "IE-Critic-R1 as released: a Qwen2.5-VL-7B critic that "
               "reasons in <think> and answers one 1-5 score in <answer>; the authors' "
               "prompt, a closed '<think>' assistant turn, greedy, 2048 tokens; the released "
               "reading, strictly on 1-5; a vLLM server with their chat template via "
               "-O base_url=", "vlm", ("overall",), higher_better=True, needs_source=True,
               needs_instruction=True, factory="ieqa.scorers.published.ie_critic:IECriticR1",
               score_range=(1.0, 5.0), units="1-5 (MOS scale)",
               release={"hub_id": "Coobiw/IE-Critic-R1-7B",
                        "base_model": "Qwen/Qwen2.5-VL-7B-Instruct (full fine-tune)",
                        "parameters": "8.3 B", "paper": "IE-Critic-R1 (Qu et al. 2025, "
                        "arXiv:2511.18055)"}),
    ScorerInfo("viescore", "VIEScore as published (tie task): the authors' SC and PQ prompts and "
               "request (text then JPEG images, max_tokens 1400, nothing else) to any "
               "OpenAI-compatible judge, GPT-4o by default; SC = min, PQ = min, "
               "O = sqrt(SC*PQ) on 0-10", "vlm",
               ("instruction_alignment", "content_preservation", "visual_quality", "sc_min",
                "overall"), higher_better=True, needs_source=True, needs_instruction=True,
               factory="ieqa.scorers.published.viescore:VIEScoreScorer", score_range=(0.0, 10.0),
               units="0-10",
               release={"hub_id": "gpt-4o-2024-05-13 via the OpenAI API (or any "
                                  "OpenAI-compatible judge)",
                        "paper": "VIEScore (Ku et al., ACL 2024)"}),
    ScorerInfo("gedit-judge", "GEdit-Bench's official judge as released: VIEScore's tie "
               "prompts from the benchmark's file, the edit resized to the source's size, "
               "text then JPEG images, max_tokens 1400, gpt-4.1 by default; both prompts asked "
               "once more as released; scores: two numbers 0-10 per answer or a row error, "
               "the released reading beside them in raw (lists' minimum, the random draw "
               "only with on_malformed=random, flagged); SC = min, PQ = min, "
               "O = sqrt(SC*PQ) on 0-10",
               "vlm",
               ("instruction_alignment", "content_preservation", "visual_quality", "sc_min",
                "overall"), higher_better=True, needs_source=True, needs_instruction=True,
               factory="ieqa.scorers.published.gedit_judge:GEditJudge", score_range=(0.0, 10.0),
               units="0-10",
               release={"hub_id": "gpt-4.1 via the OpenAI API (or any OpenAI-compatible "
                                  "judge)",
                        "paper": "Step1X-Edit (Liu et al. 2025), GEdit-Bench"}),
    ScorerInfo("imgedit-judge", "ImgEdit-Bench's official judge as released: the edit "
               "type's rubric from the benchmark's prompts.json, text then the source and the "
               "edit as their files' bytes (data:image/png), no max_tokens or temperature, "
               "gpt-4.1 by default; three 1-5 scores, overall their mean; any other answer "
               "is a row error (the released reading is kept beside it)", "vlm",
               ("instruction_alignment", "overall"), higher_better=True, needs_source=True,
               needs_instruction=True,
               factory="ieqa.scorers.published.imgedit_judge:ImgEditJudge", score_range=(1.0, 5.0),
               units="1-5",
               release={"hub_id": "gpt-4.1 via the OpenAI API (or any OpenAI-compatible "
                                  "judge)",
                        "paper": "ImgEdit (Ye et al. 2025), ImgEdit-Bench"}),
    ScorerInfo("imgedit-judge-7b", "ImgEdit-Judge, ImgEdit-Bench's open judge (a "
               "Qwen2.5-VL-7B fine-tune in the ImgEdit_judge/ folder of the hub dataset "
               "sysuyy/ImgEdit) run here as the authors' README demo: the edit type's rubric, "
               "text then the source and the edit, process_vision_info's resize then 1016064 to "
               "1354752 pixels, greedy, 2048 tokens; read as imgedit-judge", "vlm",
               ("instruction_alignment", "overall"), higher_better=True, needs_source=True,
               needs_instruction=True,
               factory="ieqa.scorers.published.imgedit_judge:ImgEditJudgeLocal",
               score_range=(1.0, 5.0), units="1-5",
               release={"hub_id": "sysuyy/ImgEdit (dataset), folder ImgEdit_judge/",
                        "base_model": "Qwen/Qwen2.5-VL-7B-Instruct (fine-tuned)",
                        "parameters": "8.3 B", "paper": "ImgEdit (Ye et al. 2025), ImgEdit-Judge"}),
    ScorerInfo("rise-judge", "RISEBench's official judge as released: per item up to three "
               "requests (consistency, reasoning, plausibility) with the category's prompts "
               "from the benchmark's utils.py, images shrunk to 768 px as JPEG, "
               "gpt-4.1-2025-04-14 at temperature 0; one 'Final Score' 1-5 per answer (0/1 "
               "read as 1/5 for logical items) or a row error; overall = the lowest (5 = "
               "solved)", "vlm",
               ("content_preservation", "instruction_alignment", "visual_quality", "overall"),
               higher_better=True, needs_source=True, needs_instruction=True,
               factory="ieqa.scorers.published.rise_judge:RiseJudge", score_range=(1.0, 5.0),
               units="1-5",
               release={"hub_id": "gpt-4.1-2025-04-14 via the OpenAI API (or any "
                                  "OpenAI-compatible judge)",
                        "paper": "RISEBench (Zhao et al. 2025)"}),
    ScorerInfo("structscore", "StructEditBench's StructScore as released: each of an item's "
               "questions (meta['qa']) asked about the edited image (cropped to the released "
               "aspect-ratio buckets), each answer judged Correct/Incorrect against the ground "
               "truth, text only, by the same served model (Qwen2.5-VL-72B-Instruct on vLLM "
               "as released; temperature 0); per item 0.9 x editing + 0.1 x maintain accuracy "
               "(0-100)", "vlm",
               ("instruction_alignment", "content_preservation", "overall"),
               higher_better=True, needs_source=False, needs_instruction=False,
               factory="ieqa.scorers.published.structscore:StructScore",
               score_range=(0.0, 100.0), units="percent of questions answered right",
               release={"hub_id": "Qwen/Qwen2.5-VL-72B-Instruct served by vLLM (or any "
                                  "OpenAI-compatible judge)",
                        "paper": "Factuality Matters (Zhuo et al. 2025, arXiv:2510.05091), "
                                 "StructEditBench"}),
    ScorerInfo("uniredit-judge", "UniREditBench's official judge as released: three "
               "requests per item (consistency with the original, reasoning against the text "
               "and ground-truth image references, plausibility) with the benchmark's "
               "eval/utils.py prompts, images shrunk to 768 px as JPEG, gpt-4.1-2025-04-14 at "
               "temperature 0; one 'Final Score' 1-5 per answer or a row error; overall = 0.3 "
               "consistency + 0.5 reasoning + 0.2 plausibility", "vlm",
               ("content_preservation", "instruction_alignment", "visual_quality", "overall"),
               higher_better=True, needs_source=True, needs_instruction=True,
               factory="ieqa.scorers.published.uniredit_judge:UniREditJudge",
               score_range=(1.0, 5.0), units="1-5",
               release={"hub_id": "gpt-4.1-2025-04-14 via the OpenAI API (or any "
                                  "OpenAI-compatible judge)",
                        "paper": "UniREditBench (Han et al. 2025, arXiv:2511.01295)"}),
    ScorerInfo("kris-judge", "KRIS-Bench's official judge as released: three requests per "
               "item (consistency, instruction following or instruction + knowledge, quality) "
               "with the category's prompts from the benchmark's prompts.py, images as their "
               "files' bytes (data:image/jpeg), max_tokens 1000, gpt-4o; each score an integer "
               "1-5 under its key or a row error (the released reading is kept beside it); "
               "overall = their mean", "vlm",
               ("content_preservation", "instruction_alignment", "visual_quality",
                "knowledge_plausibility", "overall"),
               higher_better=True, needs_source=True, needs_instruction=True,
               factory="ieqa.scorers.published.kris_judge:KrisJudge", score_range=(1.0, 5.0),
               units="1-5",
               release={"hub_id": "gpt-4o via the OpenAI API (or any OpenAI-compatible "
                                  "judge)",
                        "paper": "KRIS-Bench (Wu et al. 2025)"}),
    ScorerInfo("unifiedreward-edit", "UnifiedReward-Edit pointwise as published: the authors' "
               "instruction-following and quality requests (images then text, JPEG q95, "
               "do_sample false, max_tokens 4096) to their vLLM server; 0-25 scores "
               "rescaled to 0-10", "vlm",
               ("instruction_alignment", "content_preservation", "visual_quality", "sc_min",
                "overall"), higher_better=True, needs_source=True, needs_instruction=True,
               factory="ieqa.scorers.published.unifiedreward:UnifiedRewardEditScorer",
               score_range=(0.0, 10.0), units="0-10",
               release={"hub_id": "CodeGoat24/UnifiedReward-Edit-qwen-7b",
                        "base_model": "Qwen/Qwen2.5-VL-7B-Instruct", "parameters": "8.3 B",
                        "paper": "UnifiedReward (Wang et al. 2025)"}),
    ScorerInfo("reasonedit", "ReasonEdit as released: LoRA on Qwen3.5-9B (unmerged, the "
               "authors' settings) and a regression head on the last prompt token's final "
               "hidden state; three 0-1 scores after the release's calibration, overall "
               "0.3/0.4/0.3; 4-bit on a GPU as released", "vlm",
               ("visual_quality", "instruction_alignment", "content_preservation", "overall"),
               higher_better=True, needs_source=True, needs_instruction=True,
               factory="ieqa.scorers.published.reasonedit:ReasonEditReleaseScorer",
               score_range=(0.0, 1.0), units="0-1",
               release={"hub_id": "TmpAccount/ReasonEdit (subfolder ReasonEdit)",
                        "base_model": "Qwen/Qwen3.5-9B", "parameters": "9 B",
                        "paper": "ReasonEdit (IntMeGroup 2026)"}),
    ScorerInfo("re-reward", "RE-Reward as released (ReasonEdit's critique reward): PEFT LoRA on "
               "Qwen3.5-4B (unmerged) and a head on the last token's final hidden state; "
               "logicality, accuracy, usefulness of the critique in meta['critique'], overall "
               "0.3/0.4/0.3 as released", "vlm",
               ("logicality", "accuracy", "usefulness", "overall"), higher_better=True,
               needs_source=True, needs_instruction=True,
               factory="ieqa.scorers.published.re_reward:RERewardReleaseScorer",
               units="reward (unbounded)",
               release={"hub_id": "TmpAccount/ReasonEdit (subfolder RE-Reward)",
                        "base_model": "Qwen/Qwen3.5-4B", "parameters": "4 B",
                        "paper": "ReasonEdit (IntMeGroup 2026)"}),
    ScorerInfo("edithf", "EditHF as released: per dimension, LoRA adapters on InternVL3.5-8B "
               "(mapped onto transformers' InternVL, unmerged) and an MLP head on a fixed "
               "position of the prompt read without chat template; 100*|head| per "
               "dimension, overall their mean", "vlm",
               ("visual_quality", "instruction_alignment", "content_preservation", "overall"),
               higher_better=True, needs_source=True, needs_instruction=True,
               factory="ieqa.scorers.published.edithf:EditHFScorer", score_range=(0.0, None),
               units="0-100 (unbounded above)",
               release={"hub_id": "sparkling621/EditHF",
                        "base_model": "OpenGVLab/InternVL3_5-8B-HF", "parameters": "8.5 B",
                        "paper": "EditHF-1M (Xu et al. 2026)"}),
)


def register_scorer(info: ScorerInfo, *, overwrite: bool = False) -> ScorerInfo:
    """Register a scorer (an evaluator, a judge) from its own module: from then on
    ``ieqa score --scorer NAME``, :func:`~ieqa.scorers.catalog.create_scorer`, ``ieqa list
    scorers`` and a benchmark's ``official_judge`` know it. ``info.factory`` names its class
    as ``"module:Class"`` (imported when the scorer is built). A taken name raises
    ``ValueError`` unless ``overwrite``; ``SCORERS.remove(name)`` takes it back. The built-in
    scorers are the rows of the tables above, registered the same way."""
    SCORERS.add(info.name, info.description, tags=(info.kind, *info.dimensions), info=info,
                overwrite=overwrite)
    return info


def _register() -> None:
    for info in (*SCORER_TABLE, *VLM_TABLE, *PUBLISHED_TABLE):
        register_scorer(info)


_register()


def scorer_info(name: str) -> ScorerInfo:
    """The :class:`ScorerInfo` of a registered scorer (``KeyError`` lists the known names)."""
    return SCORERS.get(name).info


def list_scorers(*, kind: str | None = None, dimension: str | None = None,
                 needs_source: bool | None = None) -> list[str]:
    """Names of the registered scorers, optionally filtered.

    Args:
        kind: ``full-reference``, ``no-reference``, ``composite``, ``vlm`` or ``learned``.
        dimension: only scorers that output this dimension (aliases accepted).
        needs_source: ``False`` for scorers that work on the edited image alone.
    """
    dim = canonical_dimension(dimension) if dimension is not None else None
    out = []
    for entry in SCORERS:
        info: ScorerInfo = entry.info
        if kind is not None and info.kind != kind:
            continue
        if dim is not None and dim not in info.dimensions:
            continue
        if needs_source is not None and info.needs_source != needs_source:
            continue
        out.append(info.name)
    return out


