"""MMRB2 (Multimodal RewardBench 2, facebookresearch/MMRB2), image-editing subset: 1,000
expert preference pairs between two editors' outputs for one instruction and input image.

Layout, as the authors' ``benchmark/build_from_hf.py`` writes it (checked at 7ff0552): a
folder with ``edit.json`` (``{"pairs": [...]}``), ``input_images/`` and ``images/``. Each
pair has ``id``, ``prompt_content`` (a list of ``["text", str]`` / ``["image", relative
path]``), ``prompt_source`` (``emu-edit``, ``dreambench``, ``new_synthetic_edit``,
``text_heavy_edit``, ``risebench``, ``hq-edit``), ``prompt_metadata``, ``response_a`` and
``response_b`` (``model_name``, ``response_content`` in the same list form), ``chosen``
(``"A"`` or ``"B"``) and ``human_annotations`` (the experts' 1-6 ratings).

A pair is scorable by an edit scorer (source, edited, instruction) when its prompt holds
exactly one image and each response exactly one image and no text: then it becomes a
:class:`~ieqa.data.schema.Preference` (``a`` = response A, ``meta["task_type"]`` = the
prompt source, so results are also given per source). The other pairs (2 of the 1,000 in
the released response files have several output images; prompts with several input
images exist among the subject-driven ones) are listed in ``meta["unscorable"]`` with the
reason, and counted by the official aggregation as missing pairs, as the authors'
``compute_accuracy.py`` counts a pair without a prediction (:mod:`ieqa.bench.mmrb2`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ieqa.data.loaders.base import (
    BenchmarkData,
    BenchmarkFormatError,
    PathLike,
    distinct_samples,
    image_ref,
    read_json,
    register_format,
    require,
    resolve_root,
    row_error,
)
from ieqa.data.schema import EditSample, Preference, PreferenceLabel

__all__ = ["NAME", "load_mmrb2_edit", "pair_parts", "read_pairs"]

NAME = "mmrb2-edit"
FILE = "edit.json"
PAIR_FIELDS = ("id", "prompt_content", "response_a", "response_b", "chosen")
_HINT = ("Build it with the authors' script: `git clone https://github.com/facebookresearch/MMRB2 "
         "&& cd MMRB2/benchmark && pip install datasets && python build_from_hf.py --output-dir "
         "<root>` (downloads rl-research/multimodal-rewardbench-2; writes edit.json, images/ "
         "and input_images/), then pass root=<root>.")


def pair_parts(content: Any, path: Path, where: str, what: str) -> tuple[list[str], list[str]]:
    """``(texts, image paths)`` of one ``[["text", ...], ["image", ...]]`` content list."""
    if not isinstance(content, list):
        raise row_error(path, where, f"{what} must be a list of [type, content] pairs, got "
                                     f"{type(content).__name__}")
    texts, images = [], []
    for k, part in enumerate(content):
        if not (isinstance(part, (list, tuple)) and len(part) == 2
                and part[0] in ("text", "image") and isinstance(part[1], str)):
            raise row_error(path, where, f"{what}[{k}] must be ['text', str] or ['image', path], "
                                         f"got {part!r}")
        (texts if part[0] == "text" else images).append(part[1])
    return texts, images


def _side(pair: Mapping[str, Any], side: str, path: Path, where: str) -> Mapping[str, Any]:
    """``response_{side}`` of a pair, checked to hold ``response_content``."""
    value = pair[f"response_{side}"]
    if not isinstance(value, Mapping) or "response_content" not in value:
        raise row_error(path, where, f"response_{side} must be an object with response_content")
    return value


def _response(pair: Mapping[str, Any], side: str, path: Path, where: str
              ) -> tuple[list[str], list[str], str]:
    value = _side(pair, side, path, where)
    texts, images = pair_parts(value["response_content"], path, where,
                               f"response_{side}.response_content")
    return texts, images, str(value.get("model_name", ""))


def _read_task(root: PathLike | None) -> tuple[Path, list[Any]]:
    """``edit.json`` and its ``pairs`` list (non-empty)."""
    path = resolve_root(root, NAME, _HINT)
    file = path / FILE if path.is_dir() else path
    if not file.is_file():
        raise BenchmarkFormatError(f"{path} holds no {FILE}. {_HINT}")
    pairs = read_json(file, dict, "an MMRB2 task file").get("pairs")
    if not isinstance(pairs, list) or not pairs:
        raise BenchmarkFormatError(f"{file}: no 'pairs' list (is it an MMRB2 task file?). {_HINT}")
    return file, pairs


def read_pairs(root: PathLike | None) -> list[dict[str, Any]]:
    """Every pair of ``edit.json`` as the authors' judging script takes it: ``id``,
    ``chosen``, and ``prompt_content``, ``response_a``, ``response_b`` as lists of
    ``("text", str)`` / ``("image", absolute path)`` (relative paths joined to the file's
    folder, as their ``fix_relative_path`` does); images that are not there are listed."""
    file, pairs = _read_task(root)
    out, absent = [], []

    def content(value: Any, where: str, what: str) -> list[tuple[str, str]]:
        pair_parts(value, file, where, what)  # checks the shape
        texts_images = []
        for kind, item in ((str(p[0]), str(p[1])) for p in value):
            if kind == "image":
                path = Path(item) if Path(item).is_absolute() else file.parent / item
                if not path.is_file():
                    absent.append(str(path))
                item = str(path)
            texts_images.append((kind, item))
        return texts_images

    for i, pair in enumerate(pairs):
        where = f"pairs[{i}]"
        if not isinstance(pair, Mapping):
            raise row_error(file, where, "a pair must be an object")
        require(pair, PAIR_FIELDS, file, where)
        out.append({"id": str(pair["id"]), "chosen": str(pair["chosen"] or "").strip().upper(),
                    "prompt_source": str(pair.get("prompt_source") or ""),
                    "prompt_content": content(pair["prompt_content"], where, "prompt_content"),
                    **{f"response_{s}": content(_side(pair, s, file, where)["response_content"],
                                                where, f"response_{s}.response_content")
                       for s in ("a", "b")}})
    if absent:
        raise BenchmarkFormatError(f"{len(absent)} images of {file} are missing, e.g. "
                                   f"{', '.join(absent[:3])}. {_HINT}")
    return out


def load_mmrb2_edit(root: PathLike | None = None) -> BenchmarkData:
    """The image-editing pairs of MMRB2 from the folder ``build_from_hf.py`` wrote (or its
    ``edit.json``); see the module docstring."""
    file, pairs = _read_task(root)
    base = file.parent
    prefs: list[Preference] = []
    unscorable: dict[str, str] = {}
    ids: set[str] = set()
    for i, pair in enumerate(pairs):
        where = f"pairs[{i}]"
        if not isinstance(pair, Mapping):
            raise row_error(file, where, "a pair must be an object")
        require(pair, PAIR_FIELDS, file, where)
        pid = str(pair["id"])
        if pid in ids:
            raise row_error(file, where, f"pair id {pid!r} appears twice")
        ids.add(pid)
        texts, inputs = pair_parts(pair["prompt_content"], file, where, "prompt_content")
        (a_texts, a_images, a_model), (b_texts, b_images, b_model) = (
            _response(pair, side, file, where) for side in ("a", "b"))
        chosen = str(pair["chosen"] or "").strip().upper()
        reasons = []
        if len(inputs) != 1:
            reasons.append(f"the prompt has {len(inputs)} input images")
        for side, t, im in (("A", a_texts, a_images), ("B", b_texts, b_images)):
            if len(im) != 1 or t:
                reasons.append(f"response {side} has {len(im)} images and {len(t)} texts")
        if chosen not in ("A", "B"):
            reasons.append(f"chosen is {pair['chosen']!r}, not A or B")
        if reasons:
            unscorable[pid] = "; ".join(reasons)
            continue
        source = image_ref(inputs[0], base, file, where, "prompt image")
        instruction = "\n".join(t.strip() for t in texts if t.strip())
        task = str(pair.get("prompt_source") or "")

        a, b = (EditSample(id=f"{pid}:{side}", source=source,
                           edited=image_ref(image, base, file, where, f"response {side}"),
                           instruction=instruction, group_id=pid, task=task or None,
                           meta={"model": model, "side": side})
                for side, image, model in (("A", a_images[0], a_model),
                                           ("B", b_images[0], b_model)))
        prefs.append(Preference(
            a=a, b=b,
            label=PreferenceLabel.A if chosen == "A" else PreferenceLabel.B,
            meta={"group_id": pid, "pair_id": pid, "task_type": task,
                  "human_annotations": pair.get("human_annotations")}))
    if not prefs:
        raise BenchmarkFormatError(f"{file}: none of the {len(pairs)} pairs is scorable by an edit "
                                   f"scorer (one input image, one output image per response)")
    return BenchmarkData(
        name=NAME, protocol="pairwise", samples=distinct_samples(prefs), preferences=prefs,
        dimensions=["overall"],
        meta={"source": str(file), "pairs": len(pairs), "pair_ids": [str(p["id"]) for p in pairs],
              "unscorable": unscorable,
              "labels": "a = response A, b = response B; chosen A -> a>b, B -> b>a",
              "citation": "Multimodal RewardBench 2 (facebookresearch/MMRB2), image editing",
              "metric": "ieqa.bench.mmrb2.official_accuracy (compute_accuracy.py)"})


def _sniff(path: Path) -> bool:
    file = path / FILE if path.is_dir() else path
    if not file.is_file() or file.suffix != ".json" or file.stat().st_size > (1 << 30):
        return False
    with file.open("rb") as f:
        head = f.read(1 << 16).decode("utf-8", "replace")
    return '"pairs"' in head and '"prompt_content"' in head and '"response_a"' in head \
        and '"chosen"' in head


def _load(path: Path, **_: Any) -> BenchmarkData:
    return load_mmrb2_edit(path)


register_format(NAME, "MMRB2 image-editing pairs (edit.json: pairs with prompt_content, "
                "response_a/response_b, chosen; images/ and input_images/)", _sniff, _load,
                priority=33, summary="MMRB2 image editing: 1,000 expert preference pairs (A or "
                "B) between two editors' outputs, six prompt sources; pairwise accuracy over "
                "both presentation orders", tags=("pairwise", "human", "public"),
                benchmark=load_mmrb2_edit)
