"""The built-in prompt templates (registered when the registry is first used).

Template names are part of the public API. Texts that a paper prints verbatim (EditReward
appendix A.9, EPAIQA appendix E) follow the paper with PDF-extraction damage repaired;
the others are written for ieqa from what the papers describe. Every template states its
source in ``reference``.
"""

from __future__ import annotations

from ieqa.data.dimensions import (
    CORE_DIMENSIONS,
    HARMONY,
    INSTRUCTION_ALIGNMENT,
    LOCAL_NATURALNESS,
    OVERALL,
    VISUAL_QUALITY,
)
from ieqa.prompts.templates import PromptTemplate, register_template

__all__ = ["BUILTIN_TEMPLATES"]

# ---------------------------------------------------------------------------- EditReward
_ER_INPUTS = """**Inputs Provided:**
- Source Image (before editing)
- Edited Image (after applying the instruction)
- Text Instruction
"""

_ER_FOLLOWING = """<image:source><image:edited>You are tasked with evaluating an edited image \
**in comparison with the original source image** based on **Instruction Following & Semantic \
Fidelity**, and assigning a score from 1 to 4, with 1 being the worst and 4 being the best.
This dimension focuses on how accurately, completely, and exclusively the model executed the \
given text instruction.

""" + _ER_INPUTS + """
**Sub-Dimensions to Evaluate:**
- **Semantic Accuracy:** Assess whether the edited content accurately captures the semantics \
of the instruction. The edited result should precisely match the intended meaning. For example, \
if the instruction is "replace apples with oranges," the object must clearly be oranges, not \
other fruits.
- **Completeness of Editing:** Check whether **all parts** of the instruction are fully \
executed. For multi-step edits (e.g., "replace a red car with a blue bicycle"), both the color \
change and the object replacement must be done without omissions.
- **Exclusivity of Edit (No Over-Editing):** Ensure that only the requested parts are changed. \
The rest of the image (as seen in the source) should remain unaltered. For example, if the \
instruction only involves replacing an object, the background, lighting, and unrelated objects \
should not be unnecessarily modified.

**Scoring Criteria:**
- **4 (Very Good):** Perfectly accurate, complete, and exclusive execution of the instruction.
- **3 (Relatively Good):** Largely correct, but with minor omissions or slight over-editing.
- **2 (Relatively Poor):** Major misinterpretation, incomplete edits, or noticeable unintended \
changes.
- **1 (Very Poor):** Instruction ignored or completely wrong execution.

Text instruction - {instruction}
"""

_ER_QUALITY = """<image:source><image:edited>You are tasked with evaluating an edited image \
**in comparison with the original source image** based on **Visual Quality & Realism**, and \
assigning a score from 1 to 4, with 1 being the worst and 4 being the best.
This dimension focuses on how realistic, artifact-free, and aesthetically appealing the edited \
image is, while remaining consistent with the source image.

""" + _ER_INPUTS + """
**Sub-Dimensions to Evaluate:**
- **Plausibility & Physical Consistency:** Check whether the edit aligns with the laws of \
physics and the scene context. Lighting, shadows, reflections, perspective, size, and \
interactions with the environment should all appear natural compared to the source image.
- **Artifact-Free Quality:** Look for technical flaws such as blur, distortions, pixel \
misalignment, unnatural textures, or seams around edited regions. High-quality results should \
be free from such visible artifacts.
- **Aesthetic Quality:** Evaluate the overall harmony and visual appeal. The image should look \
natural, balanced, and pleasant. Colors, composition, and atmosphere should enhance the image \
rather than degrade it.

**Scoring Criteria:**
- **4 (Very Good):** Perfectly realistic, artifact-free, seamless, and aesthetically pleasing.
- **3 (Relatively Good):** Mostly realistic and clean, with only minor flaws that do not \
significantly distract.
- **2 (Relatively Poor):** Noticeable physical inconsistencies or visible artifacts that make \
the edit unnatural.
- **1 (Very Poor):** Severe artifacts, incoherent composition, or visually unusable result.

Text instruction - {instruction}
"""

_ER_FULL = """<image:source><image:edited>You are tasked with evaluating an edited image \
**in comparison with the original source image**, and assigning a score from 1 to 8, with 1 \
being the worst and 8 being the best.
This score should reflect **both how accurately the instruction was followed and the visual \
quality of the edited image**.

""" + _ER_INPUTS + """
**Dimension 1: Instruction Following & Semantic Fidelity**
Evaluate how well the edited image follows the given instruction. Consider the following \
sub-dimensions:
- **Semantic Accuracy:** Check if the edited content accurately captures the intended meaning \
of the instruction. For example, if the instruction is "replace apples with oranges," the \
object must clearly be oranges, not other fruits.
- **Completeness of Editing:** Verify that all aspects of the instruction are fully executed. \
Multi-step edits should be completely applied without omissions.
- **Exclusivity of Edit (No Over-Editing):** Ensure that only the requested changes are \
applied; the rest of the image should remain consistent with the source image without \
unintended modifications.

**Dimension 2: Visual Quality & Realism**
Evaluate the realism, technical quality, and aesthetic appeal of the edited image. Consider the \
following sub-dimensions:
- **Plausibility & Physical Consistency:** Check whether the edit aligns with natural laws and \
scene context (lighting, shadows, reflections, perspective, and object interactions).
- **Artifact-Free Quality:** Assess for technical flaws such as blur, distortions, pixel \
misalignment, unnatural textures, or seams around edited regions.
- **Aesthetic Quality:** Consider overall harmony and visual appeal. Colors, composition, \
atmosphere, and balance should enhance the image without degrading realism.

**Scoring Criteria (1–8):**
- **8 (Very Good):** Perfect instruction following and flawless visual quality; edits are \
accurate, complete, exclusive, and visually seamless.
- **7 (Relatively Good):** Very good instruction following and high visual quality; minor, \
non-distracting flaws.
- **6 (Good):** Good instruction following or mostly good visual quality; minor omissions or \
slight artifacts.
- **5 (Moderate):** Partially correct edits or moderate visual issues; noticeable flaws but \
understandable.
- **4 (Relatively Poor):** Significant misinterpretation, incomplete edits, or noticeable visual \
artifacts.
- **3 (Poor):** Major errors in instruction following and/or poor visual quality; hard to fully \
understand.
- **2 (Very Poor):** Very poor edits with large semantic errors and strong visual artifacts.
- **1 (Failed):** Completely wrong edits or visually unusable result.

Text instruction - {instruction}
"""

_ER_NOTE = (
    " EditReward reads the score with an MLP head on the last hidden state, so nothing is "
    "generated; the released inference code also appends a short cue ending in a special "
    "reward token after this text, which belongs to the head scorer, not to the template. "
    "Used as a generative judge, the answer is a number read as 'text_score'.")

_EDITREWARD = (
    PromptTemplate(
        name="editreward",
        description="EditReward's full input template: one 1-8 score for instruction "
                    "following and visual quality together." + _ER_NOTE,
        reference="EditReward (003), appendix A.9 'Full Input Template'",
        system=None, user=_ER_FULL, output="text_score", dimensions=(OVERALL,), scale=(1, 8)),
    PromptTemplate(
        name="editreward-instruction_alignment",
        description="EditReward's instruction-following template (1-4: semantic accuracy, "
                    "completeness, no over-editing). The paper's A.9 prints the visual-quality "
                    "heading over this template by mistake; this one names the dimension it "
                    "describes." + _ER_NOTE,
        reference="EditReward (003), appendix A.9 'Instruction Edit Following Template'",
        system=None, user=_ER_FOLLOWING, output="text_score",
        dimensions=(INSTRUCTION_ALIGNMENT,), scale=(1, 4)),
    PromptTemplate(
        name="editreward-visual_quality",
        description="EditReward's visual quality & realism template (1-4: plausibility, "
                    "artifacts, aesthetics)." + _ER_NOTE,
        reference="EditReward (003), appendix A.9 'Instruction Edit Quality Template'",
        system=None, user=_ER_QUALITY, output="text_score", dimensions=(VISUAL_QUALITY,),
        scale=(1, 4)),
)

# ----------------------------------------------------------------------------- VIEScore
_VIE_SYSTEM = """You are an expert digital artist who judges AI-generated and AI-edited \
images by a given set of rules. Every image you see is AI-generated, and so is every person \
in them, so there are no privacy concerns. Keep your reasoning short. Reply with a JSON \
object only, in this form:
{{
  "score": [...],
  "reasoning": "..."
}}"""

_VIE_SC = """<image:source><image:edited>
RULES:
You are given two images: the first is the original image and the second is an edited version \
of it. Judge how well the editing instruction below was carried out in the second image. The \
edit may have failed, in which case the two images can look the same.

Give two scores, each from {low} to {high}:
- The first score rates editing success: {low} means the edited image does not follow the \
instruction at all, {high} means it follows the instruction perfectly.
- The second score rates over-editing: {low} means the edited image shows a completely \
different scene from the original, {high} means it is a minimal yet effective edit of the \
original.
Put them in the list as "score": [editing success, over-editing].

Editing instruction: {instruction}"""

_VIE_PQ = """<image:edited>
RULES:
The image is AI-generated. Judge how well it was generated.

Give two scores, each from {low} to {high}:
- The first score rates naturalness: {low} means the scene does not look natural at all (for \
example a wrong sense of distance, wrong shadows or wrong lighting), {high} means it looks \
completely natural.
- The second score rates artifacts: {low} means much of the image is distorted or shows \
watermarks, scratches, blurred faces, malformed body parts or subjects that do not blend in; \
{high} means there are no artifacts.
Put them in the list as "score": [naturalness, artifacts]."""

_VIESCORE = (
    PromptTemplate(
        name="viescore-sc",
        description="VIEScore-style semantic consistency for editing: two 0-10 sub-scores "
                    "(editing success, over-editing) in {\"score\": [..], \"reasoning\": ..}; "
                    "SC = min of the sub-scores, O = sqrt(SC * PQ) with viescore-pq.",
        reference="VIEScore (Ku et al., ACL 2024) SC prompt for editing, written anew; "
                  "DESIGN.md §4; used as the GPT-4o judge in EditReward (003) §4.4",
        system=_VIE_SYSTEM, user=_VIE_SC, output="viescore_json",
        dimensions=(INSTRUCTION_ALIGNMENT,), scale=(0, 10), images=("source", "edited"),
        sub_scores=("editing_success", "over_editing")),
    PromptTemplate(
        name="viescore-pq",
        description="VIEScore-style perceptual quality of the edited image alone: two 0-10 "
                    "sub-scores (naturalness, artifacts); PQ = min of the sub-scores.",
        reference="VIEScore (Ku et al., ACL 2024) PQ prompt, written anew; DESIGN.md §4",
        system=_VIE_SYSTEM, user=_VIE_PQ, output="viescore_json",
        dimensions=(VISUAL_QUALITY,), scale=(0, 10), images=("edited",),
        sub_scores=("naturalness", "artifacts")),
)

# ------------------------------------------------------------------------------- EPAIQA
_LEVELS = "(There are 5 levels in total: bad, poor, fair, good, excellent.)"
_EP_PAIR = ("The original image is: <image:source>, the image after partial editing is: "
            "<image:edited>. The partial editing prompt is: {instruction}.")

_EPAIQA = (
    PromptTemplate(
        name="epaiqa-levels",
        description="Q-Align-style level question for one dimension; the answer continues "
                    "'The <dimension> of the edited image is' with bad/poor/fair/good/"
                    "excellent (read from the level-word logits, or parsed as 'levels').",
        reference="EPAIQA (001) §4.2 (Q-Align levels) with the image/prompt framing of "
                  "appendix E.3; Q-Align (Wu et al., ICML 2024)",
        system=None,
        user=_EP_PAIR + "\nHow would you rate the {dimension} of the edited image? " + _LEVELS,
        answer_prefix="The {dimension} of the edited image is", output="levels",
        dimensions=(OVERALL, HARMONY, LOCAL_NATURALNESS, *CORE_DIMENSIONS), scale=(1, 5)),
    PromptTemplate(
        name="epaiqa-harmony",
        description="EPAIQA stage-2 harmony question on the whole edited image; optional "
                    "{cot} (a one- or two-sentence analysis ending in '. ') goes before the "
                    "question. Answer: 'Harmony level is: <level>'.",
        reference="EPAIQA (001) appendix E.2, 'Question (Harmony)'",
        system=None,
        user="The image after partial editing is: <image:edited>. {cot}Please rate the harmony "
             "between the edited area and the overall edited image (There are 5 levels in "
             "total: bad, poor, fair, good, excellent). Then output the harmony level.",
        answer_prefix="Harmony level is:", output="levels", dimensions=(HARMONY,),
        scale=(1, 5), images=("edited",), defaults={"cot": ""}),
    PromptTemplate(
        name="epaiqa-naturalness",
        description="EPAIQA stage-2 local naturalness question on a crop of the edited region "
                    "(image slot 'crop'); optional {cot}. Answer: 'Naturalness level is: "
                    "<level>'.",
        reference="EPAIQA (001) appendix E.2, 'Question (Naturalness)'",
        system=None,
        user="The editing area of image after partial editing is: <image:crop>. {cot}Please "
             "rate the naturalness of the edited area (There are 5 levels in total: bad, poor, "
             "fair, good, excellent). Then output the naturalness level.",
        answer_prefix="Naturalness level is:", output="levels",
        dimensions=(LOCAL_NATURALNESS,), scale=(1, 5), images=("crop",),
        defaults={"cot": ""}),
    PromptTemplate(
        name="epaiqa-overall",
        description="EPAIQA stage-3 explained overall quality: prompt completion, harmony and "
                    "local naturalness analysis, then 'Therefore, the overall editing quality "
                    "level of the image is <level>' (the last level statement is read).",
        reference="EPAIQA (001) appendix E.3 (question and answer format)",
        system=None,
        user=_EP_PAIR + " First, determine whether the prompt is followed. If not, analyze it "
             "and directly give the overall quality level as bad. If partially followed, "
             "analyze it and directly give the overall quality level as poor. If followed, "
             "first analyze the prompt completion, the local naturalness of the edited area and "
             "the overall harmony, then please give the final overall editing quality level "
             "based on the analysis and the overall presentation quality of the edited image.",
        output="levels", dimensions=(OVERALL,), scale=(1, 5)),
    PromptTemplate(
        name="epaiqa-grounding",
        description="EPAIQA stage-1 edit-region grounding: the answer gives the region as four "
                    "fractions of the image (centre x, centre y, width, height) in [0, 1]; "
                    "read it with ieqa.prompts.answers.parse_region.",
        reference="EPAIQA (001) §4.1 and appendix E.1 (the editing prompt is an input per §4.1)",
        system=None,
        user=_EP_PAIR + " Please output the representation of the local editing area. It is "
             "expressed as four decimals in the range [0,1] (as a fraction of the image), where "
             "the first two are the horizontal/vertical coordinates of the center point of the "
             "editing area, and the last two are the width/height of the editing area.",
        answer_prefix="The four coefficients representing the editing area are:",
        output="text", scale=None),
)

# ------------------------------------------------------------------------------ DS-IEQA
_DS_IEQA = PromptTemplate(
    name="ds-ieqa-digits",
    description="DS-IEQA per-dimension scoring: the metric definition sits in the system "
                "prompt (FDMPO optimises it: pass definition=...), the answer is "
                "'<Dimension> score: X.XX' and the answer prefix ends right before the first "
                "digit (TDRL / V_d read the three digit positions). The paper prints neither "
                "its optimised definitions nor the score range; 1-5 is assumed (one integer "
                "digit).",
    reference="DS-IEQA (000) §3.2-3.4 (FDMPO definitions in the system prompt, "
              "'dimension score: X.XX' output pattern)",
    system="You are an expert in image editing quality assessment. You will see a source "
           "image, an edited version of it and the editing instruction, and you will score one "
           "dimension of the edit.\nDefinition of {dimension}: {definition}",
    user="<image:source><image:edited>\nThe first image is the source image and the second is "
         "the edited image. Editing instruction: {instruction}\nRate the {dimension} of the "
         "edited image on a scale from {low} to {high}. Answer in the format "
         "\"{Dimension} score: X.XX\" with two decimals.",
    answer_prefix="{Dimension} score: ", output="digits", dimensions=CORE_DIMENSIONS,
    scale=(1, 5), dimension_names={INSTRUCTION_ALIGNMENT: "editing fidelity"})

# ---------------------------------------------------------------------------- ReasonEdit
_RE_CRITIQUE = PromptTemplate(
    name="reasonedit-critique",
    description="ReasonEdit-style structured critique: analysis of visual quality, "
                "instruction alignment and content preservation grounded in the images, then "
                "a '[Final Assessment]' section with one 'Name: score' line per dimension "
                "(read with parse_critique). The paper's prompt box was lost in extraction; "
                "the wording and the 1-5 range are ieqa's.",
    reference="ReasonEdit (004) §3.2.1, §5.1, appendix B.3 and F.1 ('[Final Assessment]' "
              "anchor)",
    system="You are an expert evaluator of text-guided image editing. You reason step by step "
           "and ground every claim in what is visible in the images.",
    user="<image:source><image:edited>\nThe first image is the source image; the second is the "
         "result of editing it with the instruction: \"{instruction}\".\nWrite a critique of "
         "the edit that compares the two images under the instruction, in three parts:\n"
         "1. Visual quality: realism, artifacts, lighting and detail of the edited image.\n"
         "2. Instruction alignment: whether every part of the instruction was carried out "
         "correctly.\n3. Content preservation: whether everything the instruction did not ask "
         "to change stayed the same.\nThen end with a line \"[Final Assessment]\" followed by "
         "exactly these three lines, each score a number from {low} to {high} (two decimals "
         "allowed):\nVisual Quality: <score>\nInstruction Alignment: <score>\n"
         "Content Preservation: <score>",
    output="critique", dimensions=CORE_DIMENSIONS, scale=(1, 5))

_RE_REWARD = PromptTemplate(
    name="reasonedit-reward",
    description="RE-Reward critique scoring: rates a candidate critique ({critique}) on "
                "logicality, accuracy and usefulness, 1-5 Likert, ending with the 'Reward "
                "Scores' cue. A head model reads the state at the cue; a generative judge "
                "answers with the JSON object (zero-shot protocol of appendix E.4).",
    reference="ReasonEdit (004) appendix C.6 (prompt contents and cue), B.4.2 (rubric), E.4",
    system=None,
    user="<image:source><image:edited>\nThe first image is the source image; the second is the "
         "result of editing it with the instruction: \"{instruction}\".\nBelow is a candidate "
         "critique of this edit. Evaluate the critique, not the edit, on each dimension from "
         "{low} (worst) to {high} (best):\n{dimensions_block}\n\nCandidate critique:\n"
         "{critique}\n\nReason briefly, then give a JSON object of the form {json_example}.\n"
         "Reward Scores:",
    output="json_scores", dimensions=("logicality", "accuracy", "usefulness"), scale=(1, 5))

# ------------------------------------------------------- EPAIQA explanation judge (app. F)
_EP_JUDGE = PromptTemplate(
    name="epaiqa-explain-judge",
    description="EPAIQA's LLM-judge rubric for explanations (text only): compares a model's "
                "explanation with the standard answer and gives PA, LNA, GHA and Overall, each "
                "0, 1 or 2, as one JSON object. Asked 5 times per sample; the mode is kept "
                "(ieqa.explain.judge_protocol).",
    reference="EPAIQA (001) appendix F (rubric of PA / LNA / GHA / Overall, five votes, mode); "
              "the rubric follows the paper, the answer format (JSON) is ieqa's",
    system="You are a strict, impartial grader. You compare a model's explanation of an image "
           "edit with a standard answer written by experts, and you grade only their agreement.",
    user="Editing instruction: {instruction}\n\nStandard answer:\n{reference}\n\n"
         "Model response:\n{response}\n\n"
         "Grade the model response against the standard answer on four concerns, each with 0, "
         "1 or 2 points:\n"
         "- PA (prompt completion judgment): 2 if the response's judgment of whether the "
         "instruction is followed agrees with the standard answer and the analysis means the "
         "same; 1 if the judgment agrees but the analysis differs; 0 if the judgment differs.\n"
         "- LNA (local naturalness analysis): 2 if the response's analysis of naturalness is "
         "basically consistent with the standard answer, or if neither includes an analysis of "
         "naturalness; 1 if there is some difference but the overall judgment is consistent; 0 "
         "if it is completely inconsistent (opposite meaning), or the standard answer analyses "
         "naturalness and the response does not.\n"
         "- GHA (global harmony analysis): 2 if the response's analysis of harmony is basically "
         "consistent with the standard answer, or if neither includes an analysis of harmony; "
         "1 if there is some difference but the overall judgment is consistent; 0 if it is "
         "completely inconsistent (opposite meaning), or the standard answer analyses harmony "
         "and the response does not.\n"
         "- Overall (overall reasoning): 2 if the response's overall editing quality level is "
         "essentially consistent with the standard answer (e.g. 'good' and 'excellent', or "
         "'bad' and 'poor', are similar in meaning) and the overall summarization process is "
         "consistent; 1 if the level is essentially consistent but the reasons given for it "
         "differ; 0 if the level is inconsistent.\n\n"
         "Answer with a single JSON object and nothing else: "
         '{{"PA": <0|1|2>, "LNA": <0|1|2>, "GHA": <0|1|2>, "Overall": <0|1|2>, '
         '"reason": "<one sentence>"}}',
    output="text", scale=None, images=(), defaults={"instruction": "(not given)"})

# ------------------------------------------------------------------------ generic judges
_JUDGE_USER = (
    "<image:source><image:edited>\nThe first image is the source image; the second is the "
    "result of editing it with the instruction: \"{instruction}\".\nRate the edit on each "
    "dimension below, on a scale from {low} (worst) to {high} (best):\n{dimensions_block}\n\n"
    "Respond with a single JSON object and nothing else, of the form {json_example}, where "
    "each <score> is a number from {low} to {high}.")
_JUDGE_SYSTEM = ("You are a careful, impartial judge of instruction-guided image edits. You "
                 "answer with JSON only.")


def _judge(name: str, scale: tuple[float, float]) -> PromptTemplate:
    return PromptTemplate(
        name=name,
        description=f"Generic VLM judge: one score per requested dimension "
                    f"({scale[0]:g}-{scale[1]:g}) and a short reasoning, as one JSON object. "
                    "Pass dimension= or dimensions=[...].",
        reference="ieqa (generic VLM-as-judge, cf. ReasonEdit (004) appendix E.4 JSON "
                  "zero-shot protocol)",
        system=_JUDGE_SYSTEM, user=_JUDGE_USER, output="json_scores", scale=scale)


_PAIRWISE = PromptTemplate(
    name="pairwise-verdict",
    description="GenAI-Bench style A-vs-B judgement of two edits of the same source: the last "
                "line is one of [[A>B]], [[B>A]], [[A=B=Good]], [[A=B=Bad]] (read with "
                "parse_verdict). Shuffle A/B to control position bias (EditReward A.8).",
    reference="GenAI-Bench / GenAI-Arena verdict format (DESIGN.md §5); EditReward (003) "
              "§4 and appendix A.8",
    system="You are an impartial judge comparing two edits of the same image.",
    user="Source image: <image:source>\nEditing instruction: \"{instruction}\"\n"
         "Image A: <image:a>\nImage B: <image:b>\nImages A and B are two attempts to apply the "
         "instruction to the source image. Compare them on how well they follow the "
         "instruction, how well they keep the rest of the source image unchanged, and how good "
         "they look. Explain your comparison briefly, then give your final verdict on the last "
         "line as exactly one of: [[A>B]] (A is better), [[B>A]] (B is better), [[A=B=Good]] "
         "(both equally good), [[A=B=Bad]] (both equally bad).",
    output="verdict", scale=None, images=("source", "a", "b"))

#: Every built-in template, in registration order.
BUILTIN_TEMPLATES: tuple[PromptTemplate, ...] = (
    *_EDITREWARD, *_VIESCORE, *_EPAIQA, _DS_IEQA, _RE_CRITIQUE, _RE_REWARD, _EP_JUDGE,
    _judge("judge-json", (1, 5)), _judge("judge-json-10", (0, 10)), _PAIRWISE,
)

for _t in BUILTIN_TEMPLATES:
    register_template(_t)
