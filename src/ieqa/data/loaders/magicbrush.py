"""The MagicBrush test set (Zhang et al. 2023): its edit sessions, its output layout and its
two settings.

The test set is the authors' archive (``test/``; the hub dataset ``osunlp/MagicBrush``
holds the train and dev splits only): ``edit_sessions.json`` maps a session id to its
turns, each ``{"input", "mask", "output", "instruction"}`` (file names under
``images/{session}/``; a turn's input is the previous turn's ground-truth output), and a
captions file (``global_descriptions.json``; ``local_captions.json`` and
``global_description.json`` are read too) maps a session id to ``{file name: caption}``.

An editor's outputs follow the released evaluation's layout, one folder per session:
``{session}/{session}_1.png`` for the first turn, ``{session}_inde_{k}.png`` for turn k
edited from the ground-truth input (the **single-turn** or "all turn" setting), and
``{session}_iter_{k}.png`` for turn k edited from the editor's own previous output (the
**multi-turn** or "final turn" setting, which reads the last turn only).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ieqa.data.loaders.base import BenchmarkFormatError, EnglishItem, read_json

__all__ = ["CAPTION_FILES", "MagicBrushItem", "output_path", "read_magicbrush", "resolve_root"]

#: the captions files the released evaluation has read, in the order they are tried
CAPTION_FILES: tuple[str, ...] = ("global_descriptions.json", "global_description.json",
                                  "local_captions.json")


@dataclass(frozen=True)
class MagicBrushItem(EnglishItem):
    """One turn of a session, or a multi-turn session's final turn (``final``).

    Attributes:
        session: the session id.
        turn: the turn (1-based).
        turns: how many turns the session has.
        setting: ``"single"`` (the turn edited from its ground-truth input) or
            ``"iterative"`` (the session's last turn, edited turn after turn from the
            editor's own outputs; only for sessions of several turns).
        final: the item counts in the final-turn setting (a one-turn session's only turn,
            or the iterative item).
        instruction: the turn's instruction.
        source: the turn's input (the session's first input for an iterative item).
        target: the turn's ground-truth output.
        input_caption: the caption of the source, or None.
        output_caption: the caption of the target, or None.
    """

    session: str
    turn: int
    turns: int
    setting: str
    final: bool
    instruction: str
    source: Path
    target: Path
    input_caption: str | None = None
    output_caption: str | None = None

    @property
    def id(self) -> str:
        kind = "iter" if self.setting == "iterative" else "turn"
        return f"{self.session}/{kind}-{self.turn}"

    @property
    def key(self) -> str:
        return self.id

    @property
    def task_type(self) -> str:
        return f"turn-{self.turn}" if self.setting == "single" else "iterative"

    def meta(self) -> dict[str, Any]:
        """What the metrics compare with (an EditSample's ``meta``)."""
        out: dict[str, Any] = {"target_image": str(self.target), "session": self.session,
                               "turn": self.turn, "final": self.final}
        if self.output_caption:
            out["output_caption"] = self.output_caption
        if self.input_caption:
            out["input_caption"] = self.input_caption
        return out


def output_path(outputs: str | os.PathLike[str], item: MagicBrushItem) -> Path:
    """Where an editor's output of ``item`` lies (see the module docstring)."""
    folder = Path(outputs) / item.session
    if item.setting == "iterative":
        return folder / f"{item.session}_iter_{item.turn}.png"
    if item.turn == 1:
        return folder / f"{item.session}_1.png"
    return folder / f"{item.session}_inde_{item.turn}.png"


def resolve_root(data: str | os.PathLike[str] | None) -> Path:
    """The folder holding ``edit_sessions.json`` and ``images/``: ``data`` or its
    ``test/``."""
    if data is None:
        raise BenchmarkFormatError(
            "the MagicBrush test set is not on the Hugging Face hub (osunlp/MagicBrush holds "
            "train and dev): download the test archive as the authors' README says "
            "(github.com/OSU-NLP-Group/MagicBrush), unpack it and pass --data DIR")
    path = Path(data)
    for root in (path, path / "test"):
        if (root / "edit_sessions.json").is_file():
            return root
    raise BenchmarkFormatError(f"--data {path}: no edit_sessions.json in it or in its test/; "
                               "pass the unpacked MagicBrush test folder")


def _captions(root: Path) -> dict[str, Any]:
    for name in CAPTION_FILES:
        if (root / name).is_file():
            return read_json(root / name, dict, "an object of captions")
    return {}


def _caption(captions: dict[str, Any], session: str, name: str) -> str | None:
    by_session = captions.get(session)
    value = by_session.get(name) if isinstance(by_session, dict) else captions.get(name)
    return value if isinstance(value, str) and value.strip() else None


def read_magicbrush(data: str | os.PathLike[str] | None) -> list[MagicBrushItem]:
    """Every turn of every session (the single-turn setting) and, for each session of
    several turns, its iterative final turn, in the file's order.

    Raises:
        BenchmarkFormatError: no ``edit_sessions.json``, a turn without its fields, or
            images that are not there (listed).
    """
    root = resolve_root(data)
    path = root / "edit_sessions.json"
    sessions = read_json(path, dict, "an object of sessions (id -> turns)", nonempty=True)
    captions = _captions(root)
    items: list[MagicBrushItem] = []
    absent: list[str] = []
    for session, turns in sessions.items():
        if not isinstance(turns, list) or not turns:
            raise BenchmarkFormatError(f"{path}, session {session!r}: expected a list of turns")
        folder = root / "images" / str(session)
        first_input: Path | None = None
        for k, turn in enumerate(turns, 1):
            where = f"{path}, session {session!r}, turn {k}"
            if not isinstance(turn, dict) or not all(isinstance(turn.get(f), str) and turn[f]
                                                     for f in ("input", "output",
                                                               "instruction")):
                raise BenchmarkFormatError(f"{where}: needs input, output and instruction")
            source, target = folder / turn["input"], folder / turn["output"]
            absent += [str(p) for p in (source, target) if not p.is_file()]
            first_input = first_input or source
            items.append(MagicBrushItem(
                session=str(session), turn=k, turns=len(turns), setting="single",
                final=len(turns) == 1, instruction=turn["instruction"], source=source,
                target=target, input_caption=_caption(captions, str(session), turn["input"]),
                output_caption=_caption(captions, str(session), turn["output"])))
        if len(turns) > 1:
            last = items[-1]
            items.append(MagicBrushItem(
                session=last.session, turn=last.turn, turns=last.turns, setting="iterative",
                final=True, instruction=last.instruction, source=first_input or last.source,
                target=last.target, output_caption=last.output_caption))
    if absent:
        raise BenchmarkFormatError(f"{len(absent)} images of {root} are missing, e.g. "
                                   f"{', '.join(absent[:3])}; they are relative to "
                                   "images/{session}/")
    return items
