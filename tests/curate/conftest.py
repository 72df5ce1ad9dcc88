"""Score files written by hand for the curation tests."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from ieqa.scorers.run import output_schema


def score_row(ident: str, overall: float | None = None, *, task: str = "recolor", editor: str = "e1",
              group: str = "g1", source: str | None = None, instruction: str = "make it red",
              sigma: float | None = None, flags: list[str] | None = None, error: str | None = None,
              **dims: float) -> dict:
    """One row of an ``ieqa score`` output (JSONL form)."""
    scores = dict(dims)
    if overall is not None:
        scores["overall"] = overall
    row = {"id": ident, "source": source or f"/data/{group}_src.png", "edited": f"/data/{ident}.png",
           "instruction": instruction, "editor": editor, "task": task, "group_id": group,
           "flags": flags or [], "sigma": None if sigma is None else {"overall": sigma},
           "unavailable": None, "explanation": None, "region": None, "raw": None,
           "error": error, "input_key": f"k-{ident}"}
    if error is None:
        row.update(scores)
    return row


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_parquet(path: Path, rows: list[dict], dims: tuple[str, ...] = ("overall",)) -> Path:
    flat = []
    for r in rows:
        r = dict(r)
        for key in ("sigma", "unavailable", "raw"):
            r[key] = None if r.get(key) is None else json.dumps(r[key])
        flat.append({f.name: r.get(f.name) for f in output_schema(dims)})
    pq.write_table(pa.Table.from_pylist(flat, schema=output_schema(dims)), path)
    return path


@pytest.fixture
def images(tmp_path: Path) -> Path:
    """A folder with small PNGs named like the rows' images (for copy/link and thumbnails)."""
    folder = tmp_path / "data"
    folder.mkdir()
    return folder


def with_images(rows: list[dict], folder: Path) -> list[dict]:
    """``rows`` with their image paths moved into ``folder``, where the PNGs are written."""
    out = []
    for r in rows:
        r = dict(r)
        for key in ("source", "edited"):
            p = folder / Path(r[key]).name
            if not p.exists():
                Image.new("RGB", (8, 8), (len(p.name) * 9 % 255, 40, 90)).save(p)
            r[key] = str(p)
        out.append(r)
    return out
