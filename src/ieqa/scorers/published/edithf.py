"""``edithf``: EditHF's released evaluator (IntMeGroup/EditHF, weights
``sparkling621/EditHF``), scoring as its authors' ``inference.py`` does.

The release holds, per dimension, a folder with two LoRA adapters trained on InternVL3.5-8B
(``vision_lora/`` on the vision encoder, ``llm_lora/`` on the language model) and an MLP head
(``mlp_head.pth``). Per edit and dimension:

* both images are converted to RGB and resized to 448 x 448 (bicubic), one tile each;
* the authors' prompt for the dimension, with the instruction in it and " The quality score
  is 00.00" appended, is tokenised as written (no chat template), each ``<image>`` standing
  for the image's 256 tokens (source first, then edited);
* the final hidden state at the 6th token from the end (float32) goes through the head,
  ``Linear(H, H/2) - ReLU - Linear(H/2, 128) - ReLU - Linear(128, 1)``, and the score is
  ``100 * |output|``.

Reported: ``visual_quality``, ``instruction_alignment`` (the authors' "alignment") and
``content_preservation`` ("attribute preservation"), each 0-100, and ``overall``, their mean
(ieqa's: the authors report the three). The base is transformers' InternVL layout of the
same weights (``OpenGVLab/InternVL3_5-8B-HF``); the adapters, trained on InternVL's remote
code, are mapped onto it exactly (:mod:`ieqa.scorers.published.internvl_release`) and kept
unmerged, one named adapter per dimension. The prompt texts are the authors': the
``build_query`` branches and the suffix of ``infer_single`` in their ``inference.py`` at a
pinned commit with a SHA-256 check, read by parsing the file, or from ``prompts=DIR``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from torch import nn

from ieqa.backends import Prompt, TransformersVLM
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.published.base import ReleasedHead
from ieqa.scorers.vlm.base import DEFAULT_MAX_INSTRUCTION_CHARS, LoadedSample

__all__ = ["EditHFScorer", "PROMPT_SOURCES", "DIMENSION_FOLDERS", "mlp_head"]

REVISION = "4b4da85d5ada72d55c51fd25652cece7443669c6"
_INFERENCE = SourceFile("IntMeGroup/EditHF", REVISION, "inference.py",
                        "5437595a07347feab93f81858d56b8b56d31f155f5ab27418ac06b2f4e369a06")
#: the authors' modes, by the dimension ieqa reports
MODES = {"visual_quality": "visual", "instruction_alignment": "alignment",
         "content_preservation": "preservation"}
PROMPT_SOURCES: tuple[PublishedText, ...] = (
    *(PublishedText(dim, _INFERENCE, f"build_query(mode={mode})", ("instruction",),
                    markers=("<image>", "<image>")) for dim, mode in MODES.items()),
    PublishedText("query", _INFERENCE, "infer_single(query)", markers=("{call:build_query}",)),
)
RELEASE, BASE_MODEL = "sparkling621/EditHF", "OpenGVLab/InternVL3_5-8B-HF"
#: the release's folder of each dimension: the README names ``lora_checkpoints_visual``;
#: the other two follow its pattern
DIMENSION_FOLDERS = {dim: f"lora_checkpoints_{mode}" for dim, mode in MODES.items()}
SIZE, ANCHOR = 448, "from_end:6"


def mlp_head(state: dict[str, torch.Tensor]) -> nn.Sequential:
    """The released MLP head from its state dict (``mlp.0``, ``mlp.2``, ``mlp.4``), float32."""
    state = {k.removeprefix("mlp."): v for k, v in state.items()}
    if sorted({k.split(".")[0] for k in state}) != ["0", "2", "4"]:
        raise ScorerError(f"an EditHF head holds mlp.0, mlp.2 and mlp.4; this one holds "
                          f"{sorted(state)}")
    widths = [state["0.weight"].shape[1], state["0.weight"].shape[0], state["2.weight"].shape[0],
              state["4.weight"].shape[0]]
    head = nn.Sequential(nn.Linear(widths[0], widths[1]), nn.ReLU(),
                         nn.Linear(widths[1], widths[2]), nn.ReLU(),
                         nn.Linear(widths[2], widths[3]))
    head.load_state_dict(state)
    return head.float().eval()


class EditHFScorer(ReleasedHead):
    """EditHF as released (see the module docstring).

    Args:
        model: the release: hub id (default ``sparkling621/EditHF``) or a local folder
            holding the three dimension folders.
        base_model: transformers' InternVL checkpoint of the base (default
            ``OpenGVLab/InternVL3_5-8B-HF``).
        revision, base_revision: hub revisions of the release and the base model.
        prompts: a local copy of the authors' repository (``--prompts``).
        (other arguments: :class:`~ieqa.scorers.vlm.base.VLMScorer`)
    """

    readout = "edithf"
    prompt_sources = PROMPT_SOURCES
    released_range = (0.0, None)
    package_key = "release"

    def __init__(self, *, model: str | Path | None = None, base_model: str | Path | None = None,
                 revision: str | None = None, base_revision: str | None = None,
                 prompts: str | Path | None = None, device: str | None = "auto",
                 dtype: str = "auto", batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS) -> None:
        from ieqa.scorers.published.internvl_release import add_adapters, convert_lora, read_lora
        from ieqa.scorers.published.lora_release import load_head_state, release_folder

        texts = self.load_prompts(prompts)
        self.queries = {dim: texts["query"].replace("{call:build_query}", texts[dim])
                        for dim in MODES}
        for dim, query in self.queries.items():
            if query.count("<image>") != 2:
                raise ScorerError(f"the {dim} prompt holds {query.count('<image>')} <image> "
                                  "places; EditHF's hold two (source, edited)")
        release_id = str(model) if model is not None else RELEASE
        root = release_folder(release_id, revision=revision)
        missing = [f for f in DIMENSION_FOLDERS.values() if not (root / f).is_dir()]
        if missing:
            present = sorted(p.name for p in root.iterdir() if p.is_dir())
            raise ScorerError(f"{root} lacks {', '.join(missing)} (it holds "
                              f"{', '.join(present) or 'no folders'}); an EditHF release has "
                              f"one folder per dimension: {', '.join(DIMENSION_FOLDERS.values())}")
        backend = TransformersVLM(base_model if base_model is not None else BASE_MODEL,
                                  revision=base_revision, device=device, dtype=dtype,
                                  share_prefix=False)
        adapters, heads = {}, {}
        for dim, sub in DIMENSION_FOLDERS.items():
            vision_config, vision = read_lora(root / sub / "vision_lora")
            language_config, language = read_lora(root / sub / "llm_lora")
            adapters[dim] = (vision_config, language_config, convert_lora(vision, language))
            heads[dim] = mlp_head(load_head_state(root / sub / "mlp_head.pth"))
        self.peft = add_adapters(backend.model, adapters)
        backend.model = self.peft.get_base_model()
        device_now = backend.input_device
        self.peft.to(device_now)
        self.heads = {dim: head.to(device_now) for dim, head in heads.items()}
        self.release_files = {"release": release_id, "revision": revision,
                              "folders": dict(DIMENSION_FOLDERS)}
        self.package_dir = str(root)
        super().__init__(backend=backend, template="editreward", dimensions=tuple(MODES),
                         batch_size=batch_size, max_instruction_chars=max_instruction_chars)

    def release_config(self) -> dict[str, Any]:
        return {"image_size": SIZE, "anchor": ANCHOR}

    def prompt(self, item: LoadedSample, dimension: str) -> Prompt:
        """The input of one edit and dimension: the authors' text, read as written, with
        the source and the edited image (448 x 448) in place of its two ``<image>``."""
        if item.source is None:
            raise ScorerError(f"sample {item.sample.id!r} has no source image")
        before, middle, after = self.queries[dimension].replace(
            "{instruction}", item.sample.instruction).split("<image>")
        source, edited = (im.resize((SIZE, SIZE), Image.Resampling.BICUBIC)
                          for im in (item.source, item.edited))
        return Prompt(parts=(before, source, middle, edited, after), chat=False)

    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        values: dict[str, list[float]] = {}
        for dim in MODES:
            self.peft.set_adapter(dim)
            hidden = self.backend.forward([self.prompt(item, dim) for item in items],
                                          logits=False, anchor=ANCHOR).hidden
            with torch.inference_mode():
                out = self.heads[dim](hidden.float().to(self.heads[dim][0].weight.device))
            values[dim] = (out.abs() * 100).squeeze(-1).cpu().tolist()
        results = []
        for k, item in enumerate(items):
            scores = {dim: values[dim][k] for dim in MODES}
            if not all(math.isfinite(v) for v in scores.values()):
                results.append(ScoreResult.failed(item.sample.id, f"the heads returned {scores}: "
                                                  "not finite"))
                continue
            scores["overall"] = sum(scores.values()) / len(MODES)
            results.append(ScoreResult(id=item.sample.id, scores=scores))
        return results
