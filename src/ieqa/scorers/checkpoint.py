"""Trained-evaluator checkpoints: base model reference + adapter + head + prompt/readout config.

A checkpoint is a folder::

    ieqa_evaluator.json   format, version, scorer name, base model (hub id, absolute path,
                          or a path relative to the checkpoint folder for a model shipped
                          inside it),
                          constructor arguments (template as a full dict, dimensions,
                          readout settings), ieqa version
    adapter/              optional PEFT (LoRA) adapter of the base model
    head/                 optional regression head (head.safetensors + head.json)

:func:`save_evaluator` writes one from a built VLM scorer; :func:`load_evaluator` (or
``ieqa.create_scorer(name, checkpoint=DIR)``) rebuilds the scorer, giving identical
scores, from any working directory. The base model is not copied: a local folder is
recorded as an absolute path (or relative to the checkpoint when it lies inside it), a hub
id as given; ``model=`` overrides the recorded reference, e.g. to point at a local copy of
the hub model.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ieqa.scorers.base import Scorer, ScorerError

__all__ = ["save_evaluator", "load_evaluator", "read_evaluator_config", "model_reference",
           "CHECKPOINT_FILE"]

CHECKPOINT_FILE = "ieqa_evaluator.json"
_FORMAT = "ieqa-evaluator"
_VERSION = 1


def model_reference(model: str, folder: str | Path) -> str:
    """How a checkpoint in ``folder`` records the base model ``model``: a local folder
    inside the checkpoint relative to it (POSIX form), another relative local folder as
    an absolute path (so the checkpoint loads from any working directory), an absolute
    path and anything else (a hub id) as given."""
    path = Path(model)
    if not path.is_dir():
        return str(model)
    try:
        return path.resolve().relative_to(Path(folder).resolve()).as_posix()
    except ValueError:
        return str(model) if path.is_absolute() else str(path.resolve())


def save_evaluator(scorer: Scorer, folder: str | Path, *, adapter: Any = None,
                   base_model: str | None = None, overwrite: bool = False) -> Path:
    """Write ``scorer`` as an evaluator checkpoint in ``folder``.

    Args:
        scorer: a built VLM scorer (``vlm-head``, ``vlm-gaussian``, ``vlm-levels``, ...).
        adapter: a PEFT adapter folder, or a PEFT model (saved with ``save_pretrained``);
            default: the adapter the scorer's backend was loaded with, if any.
        base_model: the base model to record (default: what the backend loaded); a
            local folder is recorded as :func:`model_reference` says.
        overwrite: replace an existing checkpoint.
    """
    from ieqa.scorers.vlm.base import VLMScorer
    from ieqa.scorers.vlm.heads import HeadScorer
    from ieqa.version import __version__

    if not isinstance(scorer, VLMScorer):
        raise ScorerError(f"only VLM scorers are saved as evaluator checkpoints, not "
                          f"{type(scorer).__name__}")
    folder = Path(folder)
    if (folder / CHECKPOINT_FILE).exists() and not overwrite:
        raise ScorerError(f"{folder} already holds an evaluator; pass overwrite=True")
    backend_cfg = scorer.backend.config()
    model = base_model or backend_cfg.get("model")
    if model is None:
        raise ScorerError("the backend records no model; pass base_model=")
    folder.mkdir(parents=True, exist_ok=True)
    args: dict[str, Any] = {"template": scorer.template.to_dict(),
                            "dimensions": list(scorer.score_dimensions),
                            **scorer.checkpoint_args()}
    options = {k: backend_cfg[k] for k in ("min_pixels", "max_pixels")
               if backend_cfg.get(k) is not None}
    adapter = adapter if adapter is not None else backend_cfg.get("adapter")
    if adapter is not None:
        target = folder / "adapter"
        if target.exists():
            shutil.rmtree(target)
        if hasattr(adapter, "save_pretrained"):
            adapter.save_pretrained(str(target))
        else:
            shutil.copytree(Path(adapter), target)
        options["adapter"] = "adapter"
    if options:
        args["backend_options"] = options
    if isinstance(scorer, HeadScorer):
        scorer.head.save(folder / "head")
        args["head"] = "head"
    record = {"format": _FORMAT, "version": _VERSION, "scorer": scorer.name,
              "base_model": model_reference(str(model), folder), "args": args,
              "ieqa_version": __version__}
    (folder / CHECKPOINT_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return folder


def read_evaluator_config(folder: str | Path) -> dict[str, Any]:
    """The parsed ``ieqa_evaluator.json`` of a checkpoint folder (validated)."""
    path = Path(folder) / CHECKPOINT_FILE
    if not path.exists():
        raise ScorerError(f"{folder} is not an ieqa evaluator checkpoint ({CHECKPOINT_FILE} "
                          "missing); save one with ieqa.save_evaluator or `ieqa train`")
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ScorerError(f"{path} is not valid JSON: {exc}") from exc
    if record.get("format") != _FORMAT:
        raise ScorerError(f"{path}: format is {record.get('format')!r}, expected {_FORMAT!r}")
    if record.get("version", 0) > _VERSION:
        raise ScorerError(f"{path} was written by a newer ieqa (format version "
                          f"{record['version']}); upgrade ieqa")
    for key in ("scorer", "base_model", "args"):
        if key not in record:
            raise ScorerError(f"{path} lacks {key!r}")
    return record


def load_evaluator(folder: str | Path, *, name: str | None = None, **overrides: Any) -> Scorer:
    """Rebuild the scorer saved in ``folder``.

    Args:
        folder: checkpoint folder.
        name: expected scorer name (an error when the checkpoint holds another).
        overrides: constructor arguments replacing the recorded ones (``model=`` a local
            copy of the base model, ``device=``, ``batch_size=``...).
    """
    from ieqa.scorers.build import build_scorer

    folder = Path(folder)
    record = read_evaluator_config(folder)
    if name is not None and name != record["scorer"]:
        raise ScorerError(f"{folder} holds a {record['scorer']!r} evaluator, not {name!r}; load it "
                          f"with name={record['scorer']!r} or without a name")
    args = dict(record["args"])
    if "head" in args:
        args["head"] = str(folder / args["head"])
    options = dict(args.pop("backend_options", {}))
    if "adapter" in options:
        options["adapter"] = str(folder / options["adapter"])
    options.update(overrides.pop("backend_options", None) or {})
    if options:
        args["backend_options"] = options
    base = record["base_model"]
    if (folder / base).is_dir():  # a fully fine-tuned model shipped inside the checkpoint
        base = str(folder / base)
    elif "model" not in overrides and base.startswith((".", "/", "~")) and not Path(base).exists():
        raise ScorerError(f"{folder} records its base model as {base!r}, which does not exist here "
                          "(a relative path is from the directory training ran in, as written by "
                          "older ieqa versions); give the base model with --model DIR on the "
                          "command line, or model=DIR in Python")
    args["model"] = base
    args.update(overrides)
    return build_scorer(record["scorer"], **args)
