"""Offline stand-ins of editor benchmarks' data for tests and docs examples.

:func:`build_gedit_fixture` writes a small dataset in the layout of the hub dataset
``stepfun-ai/GEdit-Bench`` (one Parquet file with its columns; images as ``{"bytes",
"path"}`` structs, as ``datasets`` stores an ``Image`` feature) and, optionally, an
editor's outputs in the benchmark's layout. :func:`build_imgedit_fixture` does the same
for ImgEdit-Bench (the annotation ``singleturn.json`` and JPEG sources in folders, as the
hub archive unpacks; optionally the archive itself), :func:`build_rise_fixture` for
RISEBench (its JSON list and image folders, one item of each kind its judge treats
differently), :func:`build_kris_fixture` for KRIS-Bench (category folders with
``annotation.json``, one item of each kind its judge treats differently),
:func:`build_emu_fixture` for the Emu Edit test set (one Parquet file per split),
:func:`build_magicbrush_fixture` for the MagicBrush test set (sessions of 1-3 turns). The
pictures
are random blocks: what
a test checks is the protocol and the arithmetic, not the edits.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from ieqa.data.loaders.gedit_bench import TASK_TYPES
from ieqa.data.loaders.imgedit_bench import EDIT_TYPES

__all__ = ["build_gedit_fixture", "gedit_fixture_items", "write_gedit_outputs",
           "imgedit_fixture_items", "build_imgedit_fixture", "write_imgedit_outputs",
           "rise_fixture_items", "build_rise_fixture", "write_rise_outputs",
           "kris_fixture_items", "build_kris_fixture", "write_kris_outputs",
           "emu_fixture_items", "build_emu_fixture", "write_emu_outputs",
           "build_magicbrush_fixture", "write_magicbrush_outputs",
           "uniredit_fixture_items", "build_uniredit_fixture", "write_uniredit_outputs",
           "structedit_fixture_items", "build_structedit_fixture", "write_structedit_outputs",
           "STRUCTEDIT_PLAN"]


def gedit_fixture_items(per_type: int = 1, languages: Sequence[str] = ("en",),
                        shared_key: bool = True) -> list[dict[str, object]]:
    """Item records (task_type, key, instruction, instruction_language,
    Intersection_exist, size): ``per_type`` items per task type and language; with
    ``shared_key`` the first subject-remove and subject-replace items share their key, as in
    the real data."""
    items = []
    for lang in languages:
        for t, task in enumerate(TASK_TYPES):
            for k in range(per_type):
                key = f"{t:02d}{k:02d}"
                if shared_key and k == 0 and task in ("subject-remove", "subject-replace"):
                    key = "shared0"
                items.append({"task_type": task, "key": key, "instruction_language": lang,
                              "instruction": f"{task.replace('_', ' ')} number {k} ({lang})",
                              "Intersection_exist": (t + k) % 2 == 0,
                              "size": (48 + 8 * (t % 3), 40 + 8 * (k % 2))})
    return items


def _png(seed: int, size: tuple[int, int], fmt: str = "PNG") -> bytes:
    rng = np.random.default_rng(seed)
    arr = np.kron(rng.integers(0, 256, (size[1] // 8 + 1, size[0] // 8 + 1, 3)),
                  np.ones((8, 8, 1)))[: size[1], : size[0]].astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt)
    return buf.getvalue()


def build_gedit_fixture(folder: str | os.PathLike[str], items: Sequence[dict[str, object]]
                        ) -> Path:
    """Write ``items`` (from :func:`gedit_fixture_items`) as
    ``folder/data/train-00000-of-00001.parquet``; returns ``folder``."""
    folder = Path(folder)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    rows = {"task_type": [], "key": [], "instruction": [], "instruction_language": [],
            "input_image": [], "input_image_raw": [], "Intersection_exist": []}
    for n, item in enumerate(items):
        for col in ("task_type", "key", "instruction", "instruction_language",
                    "Intersection_exist"):
            rows[col].append(item[col])
        size = item["size"]
        rows["input_image"].append({"bytes": _png(n, size), "path": None})  # type: ignore[arg-type]
        rows["input_image_raw"].append({"bytes": _png(n, (2 * size[0], 2 * size[1])),  # type: ignore[index]
                                        "path": None})
    table = pa.table({k: (pa.array(v, image) if k.startswith("input_image") else pa.array(v))
                      for k, v in rows.items()})
    pq.write_table(table, folder / "data" / "train-00000-of-00001.parquet")
    return folder


def write_gedit_outputs(folder: str | os.PathLike[str], items: Sequence[dict[str, object]],
                        *, seed: int = 1000, skip: Sequence[int] = ()) -> Path:
    """An editor's outputs of ``items`` in GEdit's layout under ``folder`` (each a random
    picture of another size than its source, so the judge's resize is exercised), except
    the indices in ``skip``; returns ``folder``."""
    folder = Path(folder)
    for n, item in enumerate(items):
        if n in skip:
            continue
        path = (folder / "fullset" / str(item["task_type"]) / str(item["instruction_language"])
                / f"{item['key']}.png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_png(seed + n, (64, 64)))
    return folder


def imgedit_fixture_items(per_type: int = 1, *, old_names: bool = False
                          ) -> list[dict[str, object]]:
    """Item records (key, id, prompt, edit_type, size): ``per_type`` items per edit type,
    keys numbered from 1 as in the real annotation; ``old_names`` spells ``adjust`` as
    ``alter``, as copies made before June 2025 do."""
    items = []
    for t, etype in enumerate(EDIT_TYPES):
        for k in range(per_type):
            name = "alter" if old_names and etype == "adjust" else etype
            items.append({"key": str(1 + t * per_type + k), "id": f"cat{t % 3}/{t:02d}{k:03d}.jpg",
                          "prompt": f"{etype} edit number {k}", "edit_type": name,
                          "size": (48 + 8 * (t % 3), 40 + 8 * (k % 2))})
    return items


def build_imgedit_fixture(folder: str | os.PathLike[str], items: Sequence[dict[str, object]],
                          *, archive: bool = False) -> Path:
    """Write ``items`` (from :func:`imgedit_fixture_items`) as the unpacked
    ``folder/Benchmark/singleturn/`` (``singleturn.json`` and JPEG sources); with
    ``archive``, also pack it as ``folder/Benchmark.tar`` and return that path, else
    return ``folder/Benchmark/singleturn``."""
    folder = Path(folder)
    root = folder / "Benchmark" / "singleturn"
    root.mkdir(parents=True, exist_ok=True)
    annotation = {}
    for n, item in enumerate(items):
        path = root / str(item["id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_png(n, item["size"], "JPEG"))  # type: ignore[arg-type]
        annotation[str(item["key"])] = {"id": item["id"], "prompt": item["prompt"],
                                        "edit_type": item["edit_type"]}
    (root / "singleturn.json").write_text(json.dumps(annotation, indent=4))
    if not archive:
        return root
    tar_path = folder / "Benchmark.tar"
    with tarfile.open(tar_path, "w") as tar:
        tar.add(folder / "Benchmark", arcname="Benchmark")
    return tar_path


def write_imgedit_outputs(folder: str | os.PathLike[str], items: Sequence[dict[str, object]],
                          *, seed: int = 2000, skip: Sequence[int] = ()) -> Path:
    """An editor's outputs of ``items`` in ImgEdit's layout (``folder/{key}.png``), except
    the indices in ``skip``; returns ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for n, item in enumerate(items):
        if n not in skip:
            (folder / f"{item['key']}.png").write_bytes(_png(seed + n, (64, 56)))
    return folder


def rise_fixture_items() -> list[dict[str, object]]:
    """One RISEBench item of each kind its judge treats differently: temporal (plain, and
    with ``reasoning_img``), causal ``consistency_free``, spatial (plain, with
    ``reasoning_img``, with an answer image) and logical (answer text, answer image)."""
    kinds = [("temporal_reasoning", {}), ("temporal_reasoning", {"reasoning_img": "yes"}),
             ("causal_reasoning", {"consistency_free": True}),
             ("spatial_reasoning", {}), ("spatial_reasoning", {"reasoning_img": "yes"}),
             ("spatial_reasoning", {"reference_img": True}),
             ("logical_reasoning", {"reference_txt": "B3"}),
             ("logical_reasoning", {"reference_img": True})]
    items = []
    for n, (category, extra) in enumerate(kinds, 1):
        item: dict[str, object] = {"index": f"{category}_{n}", "category": category,
                                   "instruction": f"{category.split('_')[0]} task {n}",
                                   "image": f"{category}_images/{n}.png"}
        if category != "logical_reasoning":
            item["reference"] = f"what a correct edit {n} shows"
        if extra.get("reference_img"):
            item["reference_img"] = f"{category}_images/{n}_ref.png"
        for key in ("reasoning_img", "consistency_free", "reference_txt"):
            if key in extra:
                item[key] = extra[key]
        items.append(item)
    return items


def build_rise_fixture(folder: str | os.PathLike[str], items: Sequence[dict[str, object]]
                       ) -> Path:
    """Write ``items`` (from :func:`rise_fixture_items`) as ``folder/data/data_total.json``
    with their images beside it, as the repository's RISEBench-64; returns the JSON path."""
    root = Path(folder) / "data"
    for n, item in enumerate(items):
        for key, size in (("image", (40 + 8 * (n % 3), 48)), ("reference_img", (56, 40))):
            if key in item:
                path = root / str(item[key])
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(_png(3000 + 10 * n + len(key), size))
    (root / "data_total.json").write_text(json.dumps(list(items), indent=2))
    return root / "data_total.json"


def write_rise_outputs(folder: str | os.PathLike[str], items: Sequence[dict[str, object]],
                       *, seed: int = 4000, skip: Sequence[int] = ()) -> Path:
    """An editor's outputs of ``items`` in RISEBench's layout
    (``folder/images/{category}/{index}.png``), except the indices in ``skip``."""
    folder = Path(folder)
    for n, item in enumerate(items):
        if n in skip:
            continue
        path = folder / "images" / str(item["category"]) / f"{item['index']}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_png(seed + n, (900, 600)))  # larger than 768: the thumbnail shrinks it
    return folder


def kris_fixture_items() -> list[dict[str, object]]:
    """One KRIS-Bench item of each kind its judge treats differently, as ``{"category",
    "index", "ori_img", "gt_img", "ins_en", "explain_en"}``: a plain one (count change),
    anomaly correction (with an explanation the released judge does not send), viewpoint
    change (with its reference view), a knowledge item (two scores in one answer), another
    knowledge item, multi-element composition (three sources) and temporal prediction
    (frames 1, 2 and 4: frame 3 is predicted)."""
    kinds = [("count_change", 1, ""), ("anomaly_correction", 1, "what is wrong"),
             ("viewpoint_change", 1, ""), ("chemistry", 1, "a reaction"),
             ("abstract_reasoning", 1, "a rule"), ("multi-element_composition", 3, ""),
             ("temporal_prediction", 3, "")]
    items: list[dict[str, object]] = []
    for n, (category, n_src, explain) in enumerate(kinds, 1):
        index = str(n)
        if category == "temporal_prediction":
            ori: object = [f"{index}-{f}.jpg" for f in (1, 2, 4)]
        elif n_src > 1:
            ori = [f"{index}_{k}.jpg" for k in range(1, n_src + 1)]
        else:
            ori = f"{index}.jpg"
        items.append({"category": category, "index": index, "ori_img": ori,
                      "gt_img": f"{index}_gt.jpg" if category == "viewpoint_change" else "",
                      "ins_en": f"{category.replace('_', ' ')} task {n}",
                      "explain_en": explain})
    return items


def build_kris_fixture(folder: str | os.PathLike[str], items: Sequence[dict[str, object]]
                       ) -> Path:
    """Write ``items`` (from :func:`kris_fixture_items`) as ``folder/KRIS_Bench/{category}/
    annotation.json`` with their JPEG images, as the hub dataset; returns ``folder``."""
    root = Path(folder) / "KRIS_Bench"
    by_cat: dict[str, dict[str, object]] = {}
    for n, item in enumerate(items):
        cat = str(item["category"])
        names = item["ori_img"] if isinstance(item["ori_img"], list) else [item["ori_img"]]
        for k, name in enumerate([*names, item["gt_img"]]):
            if name:
                path = root / cat / str(name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(_png(5000 + 10 * n + k, (48, 40 + 8 * k), fmt="JPEG"))
        by_cat.setdefault(cat, {})[str(item["index"])] = {
            k: item[k] for k in ("ori_img", "gt_img", "ins_en", "explain_en")}
    for cat, rows in by_cat.items():
        (root / cat / "annotation.json").write_text(json.dumps(rows, indent=2))
    return Path(folder)


def write_kris_outputs(folder: str | os.PathLike[str], items: Sequence[dict[str, object]],
                       *, seed: int = 6000, skip: Sequence[int] = (), fmt: str = "PNG") -> Path:
    """An editor's outputs of ``items`` in KRIS-Bench's layout (``folder/{category}/
    {index}.png``, or ``.jpg`` with ``fmt="JPEG"``), except the indices in ``skip``."""
    folder = Path(folder)
    suffix = "jpg" if fmt == "JPEG" else "png"
    for n, item in enumerate(items):
        if n in skip:
            continue
        path = folder / str(item["category"]) / f"{item['index']}.{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_png(seed + n, (64, 48), fmt=fmt))
    return folder


def emu_fixture_items(per_task: int = 1) -> list[dict[str, object]]:
    """Emu Edit test set rows (idx, instruction, task, split, hash, input_caption,
    output_caption): ``per_task`` test items per task and one validation item."""
    from ieqa.data.loaders.emu_edit import TASKS

    rows: list[dict[str, object]] = []
    for n in range(per_task * len(TASKS) + 1):
        task = TASKS[n % len(TASKS)]
        rows.append({"idx": n, "instruction": f"{task} edit {n}", "task": task,
                     "split": "validation" if n == per_task * len(TASKS) else "test",
                     "hash": f"h{n}", "input_caption": f"a photo {n}",
                     "output_caption": f"a {task} photo {n}"})
    return rows


def build_emu_fixture(folder: str | os.PathLike[str], items: Sequence[dict[str, object]]
                      ) -> Path:
    """Write ``items`` as the hub dataset's Parquet files (``data/{split}-00000-of-00001
    .parquet``, sources as image cells); returns ``folder``."""
    root = Path(folder) / "data"
    root.mkdir(parents=True, exist_ok=True)
    for split in ("test", "validation"):
        rows = [{**item, "image": {"bytes": _png(7000 + int(item["idx"]),  # type: ignore[call-overload]
                                                 (56, 48)), "path": None}}
                for item in items if item["split"] == split]
        if rows:
            pq.write_table(pa.Table.from_pylist(rows),
                           root / f"{split}-00000-of-00001.parquet")
    return Path(folder)


def write_emu_outputs(folder: str | os.PathLike[str], items: Sequence[dict[str, object]],
                      *, seed: int = 8000, skip: Sequence[int] = ()) -> Path:
    """An editor's outputs of the test items in the layout ``folder/{idx}.png``, except
    the indices in ``skip``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for n, item in enumerate(items):
        if n not in skip and item["split"] == "test":
            (folder / f"{item['idx']}.png").write_bytes(_png(seed + n, (56, 48)))
    return folder


def build_magicbrush_fixture(folder: str | os.PathLike[str],
                             turns: Sequence[int] = (1, 2, 3)) -> Path:
    """Write MagicBrush's test layout under ``folder/test``: one session per entry of
    ``turns`` (its number of turns; ids 100, 101, ...), ``edit_sessions.json``, the
    images (``{id}-input.png``, ``{id}-output{k}.png``, masks) and
    ``global_descriptions.json`` (a caption per image); returns ``folder/test``."""
    root = Path(folder) / "test"
    sessions: dict[str, list[dict[str, str]]] = {}
    captions: dict[str, dict[str, str]] = {}
    for n, k_turns in enumerate(turns):
        sid = str(100 + n)
        images = root / "images" / sid
        images.mkdir(parents=True, exist_ok=True)
        names = [f"{sid}-input.png"] + [f"{sid}-output{k}.png" for k in range(1, k_turns + 1)]
        for j, name in enumerate(names):
            (images / name).write_bytes(_png(9000 + 10 * n + j, (64, 48)))
        sessions[sid] = []
        for k in range(1, k_turns + 1):
            (images / f"{sid}-mask{k}.png").write_bytes(_png(9500 + 10 * n + k, (64, 48)))
            sessions[sid].append({"input": names[k - 1], "mask": f"{sid}-mask{k}.png",
                                  "output": names[k], "instruction": f"edit {k} of {sid}"})
        captions[sid] = {name: f"a picture {j} of {sid}" for j, name in enumerate(names)}
    (root / "edit_sessions.json").write_text(json.dumps(sessions, indent=1))
    (root / "global_descriptions.json").write_text(json.dumps(captions, indent=1))
    return root


def write_magicbrush_outputs(folder: str | os.PathLike[str], items: Sequence[object], *,
                             seed: int = 9800, iterative: bool = True,
                             skip: Sequence[str] = ()) -> Path:
    """An editor's outputs of ``items`` (:func:`ieqa.data.loaders.magicbrush.read_magicbrush`)
    in MagicBrush's layout, the iterative ones only with ``iterative``, except the item
    ids in ``skip``."""
    from ieqa.data.loaders.magicbrush import output_path

    for n, item in enumerate(items):
        if item.id in skip or (item.setting == "iterative" and not iterative):  # type: ignore[attr-defined]
            continue
        path = output_path(folder, item)  # type: ignore[arg-type]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_png(seed + n, (60, 44)))
    return Path(folder)


def uniredit_fixture_items() -> list[dict[str, object]]:
    """Nine UniREditBench items in three evaluation dimensions of unequal sizes (4, 2, 3),
    one game-world item with ``rules``, as ``data.json`` rows."""
    spec = [("physics", 4, ""), ("biology", 2, ""), ("sudoku", 3, "Fill each row with 1-4.")]
    items: list[dict[str, object]] = []
    for name, count, rules in spec:
        for idx in range(count):
            item: dict[str, object] = {
                "original_image_path": f"original_image/{name}_{idx}.png",
                "reference_image_path": f"reference_image/{name}_{idx}.png",
                "instruction": f"show the {name} case {idx} after the change",
                "name": name, "idx": idx,
                "reference_effect": f"the {name} case {idx} as it should look"}
            if rules and idx == 2:
                item["rules"] = rules
            items.append(item)
    return items


def build_uniredit_fixture(folder: str | os.PathLike[str], items: Sequence[dict[str, object]]
                           ) -> Path:
    """Write ``items`` as ``folder/data.json`` with their images (the unpacked zips);
    returns ``folder``."""
    folder = Path(folder)
    for n, item in enumerate(items):
        for key, size in (("original_image_path", (40 + 8 * (n % 3), 48)),
                          ("reference_image_path", (56, 40))):
            path = folder / str(item[key])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_png(5000 + 10 * n + len(key), size))
    (folder / "data.json").write_text(json.dumps(list(items), indent=2))
    return folder


def write_uniredit_outputs(folder: str | os.PathLike[str], items: Sequence[dict[str, object]],
                           *, seed: int = 6000, skip: Sequence[int] = ()) -> Path:
    """An editor's outputs of ``items`` in UniREditBench's layout (``folder/{name}/{idx}.png``),
    except the indices in ``skip``."""
    folder = Path(folder)
    for n, item in enumerate(items):
        if n in skip:
            continue
        path = folder / str(item["name"]) / f"{item['idx']}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_png(seed + n, (900, 600)))  # larger than 768: the thumbnail shrinks it
    return folder


#: StructEditBench stand-in: question -> (the answer a scripted judge gives, its judgement)
STRUCTEDIT_PLAN: dict[str, tuple[str, str]] = {
    "q0 title?": ("Sales", "Correct"), "q1 bars?": ("3", "Incorrect"),
    "q2 axis?": ("years", "Correct"), "q3 legend?": ("none", "Correct."),
    "q4 color?": ("red", "correct"), "q6 max?": ("9", "Correct"),
    "q7 min?": ("1", "The answer is Correct"), "q8 x?": ("2", "Correct"),
    "q9 y?": ("4", "Correct"), "q10 z?": ("5", "Incorrect"), "q11 cell?": ("7", "Incorrect")}


def structedit_fixture_items() -> list[dict[str, object]]:
    """Four StructEditBench rows: a chart item (two editing and two maintain questions), one
    with a fine-grained chart tag as its category (a question without its text, a question
    without a label), a math item and a table item with one question; ``qa_list`` as JSON
    text, as some copies hold it."""
    def qa(question: object, label: str | None = None) -> dict[str, object]:
        out: dict[str, object] = {"question": question, "answer": f"truth of {question}"}
        if label:
            out["label"] = label
        return out

    return [
        {"category": "chart", "instruction": "make the bars blue", "qa_list": [
            qa("q0 title?", "editing"), qa("q1 bars?", "editing"), qa("q2 axis?", "maintain"),
            qa("q3 legend?", "maintain")]},
        {"category": "color", "instruction": "recolour the line", "qa_list": [
            qa("q4 color?", "editing"), qa(None, "editing"), qa("q6 max?", "editing"),
            qa("q7 min?")]},
        {"category": "math", "instruction": "move the point", "qa_list": [
            qa("q8 x?", "editing"), qa("q9 y?", "editing"), qa("q10 z?", "maintain")]},
        {"category": "table", "instruction": "change a cell", "qa_list": [
            qa("q11 cell?", "editing")]},
    ]


def build_structedit_fixture(folder: str | os.PathLike[str], items: Sequence[dict[str, object]]
                             ) -> Path:
    """Write ``items`` as ``folder/data/train-00000-of-00001.parquet`` (``qa_list`` as JSON
    text, the source images embedded); returns ``folder``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"category": item["category"], "instruction": item["instruction"],
             "qa_list": json.dumps(item["qa_list"]),
             "source_image": {"bytes": _png(7000 + n, (64, 48)), "path": None}}
            for n, item in enumerate(items)]
    out = Path(folder) / "data"
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), out / "train-00000-of-00001.parquet")
    return Path(folder)


def write_structedit_outputs(folder: str | os.PathLike[str], items: Sequence[dict[str, object]],
                             *, sizes: Sequence[tuple[int, int]] = ((120, 60), (60, 60),
                                                                    (50, 100), (80, 80))
                             ) -> Path:
    """An editor's outputs of ``items`` as ``folder/{row}.png``, of the given sizes (wide,
    square, tall: each crops to another bucket)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for n, _ in enumerate(items):
        (folder / f"{n}.png").write_bytes(_png(8000 + n, sizes[n % len(sizes)]))
    return folder
