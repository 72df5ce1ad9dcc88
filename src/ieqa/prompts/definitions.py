"""One-paragraph definitions of ieqa's canonical dimensions, for prompts.

The wording paraphrases how the source papers define each judgement (EditHF §3.2 and
EditReward appendix A.2/A.9 for the three core dimensions, EPAIQA §3.2 and appendix C.3
for harmony, local naturalness and prompt completion, ReasonEdit appendix B.4 for the
critique dimensions). Templates insert them through the ``{definition}`` placeholder;
DS-IEQA's FDMPO replaces them with optimised ones (pass ``definition=`` to
:meth:`ieqa.prompts.PromptTemplate.render`).

Examples:
    >>> dimension_definition("PQ").startswith("Visual quality")
    True
"""

from __future__ import annotations

from ieqa.data.dimensions import (
    ACCURACY,
    CONTENT_PRESERVATION,
    HARMONY,
    INSTRUCTION_ALIGNMENT,
    LOCAL_NATURALNESS,
    LOGICALITY,
    OVERALL,
    PROMPT_COMPLETION,
    USEFULNESS,
    VISUAL_QUALITY,
    canonical_dimension,
    list_dimensions,
)

__all__ = ["DEFINITIONS", "dimension_definition", "dimension_label"]

#: canonical dimension name -> one-paragraph definition (plain text, no placeholders).
DEFINITIONS: dict[str, str] = {
    VISUAL_QUALITY: (
        "Visual quality is the perceptual quality of the edited image on its own terms: it "
        "should look realistic and physically plausible (lighting, shadows, reflections, "
        "perspective and scale consistent with the scene), be free of technical flaws such as "
        "blur, distortion, broken structures, unnatural textures, colour shifts or visible seams "
        "around the edited region, keep rich and coherent detail, and be aesthetically pleasing. "
        "Whether the instruction was followed does not matter for this dimension."
    ),
    INSTRUCTION_ALIGNMENT: (
        "Instruction alignment (also called editing fidelity or instruction following) is how "
        "correctly and completely the edited image carries out the editing instruction: the "
        "change must have the intended meaning (replacing apples with oranges must yield "
        "oranges, not some other fruit) and every part of a multi-part instruction must be "
        "done. An edit that leaves the image unchanged, or changes the wrong thing, fails this "
        "dimension regardless of how good it looks."
    ),
    CONTENT_PRESERVATION: (
        "Content preservation (also called attribute preservation or consistency) is how well "
        "the edited image keeps everything the instruction did not ask to change: the identity "
        "of subjects, the background, the layout, the colours, the lighting and the other key "
        "characteristics of the source image should stay as they were. Over-editing, "
        "regenerating the whole scene, or unrequested changes lower this score; the requested "
        "change itself is not penalised."
    ),
    OVERALL: (
        "Overall quality is a single judgement of the edit that combines whether the "
        "instruction was followed with how good the result looks and how well unrelated content "
        "was preserved. Following the instruction takes priority: an edit that ignores or only "
        "partly carries out the instruction should score low however clean it looks, and among "
        "edits that follow it, the more natural, artifact-free and faithful to the source, the "
        "better."
    ),
    HARMONY: (
        "Harmony is how well the edited region fits the rest of the image, judged on the whole "
        "edited image and independently of the instruction: its style, colour and lighting "
        "should match the surroundings, its placement and its semantic relations with the rest "
        "of the scene should make spatial sense, and there should be no visible editing traces "
        "or hard boundaries between the edited region and its neighbourhood."
    ),
    LOCAL_NATURALNESS: (
        "Local naturalness is how natural the edited region looks in itself, judged on that "
        "region alone (typically a crop of it) and independently of the instruction: the "
        "content of the region should look like a real, well-formed object or texture with a "
        "good visual presentation, without deformation, smearing or synthetic-looking detail."
    ),
    PROMPT_COMPLETION: (
        "Prompt completion is whether the edited region does what the editing prompt asks, "
        "on three levels: 1 (non-completion) when the edit does not follow the prompt at all, "
        "2 (partial completion) when it follows it only in part, and 3 (full completion) when "
        "it follows the prompt accurately and completely. How well the edit is rendered is not "
        "considered unless the prompt itself asks for a particular effect."
    ),
    LOGICALITY: (
        "Logicality rates a written critique of an edit: its reasoning should form a coherent, "
        "ordered chain in which every conclusion is supported by the critique's own "
        "observations, without contradictions, missing links or unsupported leaps."
    ),
    ACCURACY: (
        "Accuracy rates a written critique of an edit: everything it says must be faithful to "
        "the source image, the edited image and the instruction, with no hallucinated details, "
        "misread content or factual mistakes about what was or was not changed."
    ),
    USEFULNESS: (
        "Usefulness rates a written critique of an edit: it should give specific, diagnostic "
        "information that helps a person judge the edit, compare it with others, or improve "
        "the editing model, rather than vague or generic remarks."
    ),
}


def dimension_definition(name: str) -> str:
    """The one-paragraph definition of dimension ``name`` (canonical name or any alias).

    Dimensions registered at run time without a paragraph here fall back to their one-line
    description from :func:`ieqa.data.dimensions.list_dimensions`. Raises
    :class:`ieqa.errors.UnknownDimensionError` for unknown names.
    """
    canon = canonical_dimension(name)
    if canon in DEFINITIONS:
        return DEFINITIONS[canon]
    return list_dimensions().get(canon, "") or dimension_label(canon)


def dimension_label(name: str) -> str:
    """Human-readable name of a dimension (``"instruction_alignment"`` -> ``"instruction
    alignment"``); accepts aliases."""
    return canonical_dimension(name).replace("_", " ")
