"""Helpers for the loader tests: tiny images and small fixture files written at test time."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image


def png_bytes(color: tuple[int, int, int] = (200, 30, 30), size: int = 4) -> bytes:
    """A tiny encoded PNG."""
    buf = io.BytesIO()
    Image.new("RGB", (size, size), color).save(buf, format="PNG")
    return buf.getvalue()


def write_png(path: Path, color: tuple[int, int, int] = (200, 30, 30)) -> Path:
    """Write a tiny PNG at ``path`` (parents created) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(color))
    return path


def write_jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


@pytest.fixture
def images(tmp_path: Path) -> dict[str, Path]:
    """Three tiny PNGs under ``tmp_path/img``: src, e1, e2."""
    return {name: write_png(tmp_path / "img" / f"{name}.png", color)
            for name, color in (("src", (10, 10, 10)), ("e1", (200, 0, 0)), ("e2", (0, 200, 0)))}
