"""``ieqa generate`` with a stand-in pipeline object (no diffusers, no model): the seeds
each candidate is made with, the manifest rows, and the counts of a resumed run."""

from __future__ import annotations

import json
from types import SimpleNamespace

from PIL import Image

from ieqa.curate.generate import generate_candidates


class SeedEcho:
    """A pipeline stand-in: records each call's seed and returns an image coloured by it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, *, prompt, image, num_inference_steps, generator, **options):
        seed = generator.initial_seed()
        self.calls.append((prompt, seed, num_inference_steps))
        return SimpleNamespace(images=[Image.new("RGB", image.size, (seed % 256, 0, 0))])


def _requests(folder):
    rows = []
    for i in range(2):
        Image.new("RGB", (8, 6), (0, 90 * i, 0)).save(folder / f"src{i}.png")
        rows.append({"id": f"item{i}", "source": f"src{i}.png", "instruction": f"edit {i}", "task": "recolor"})
    path = folder / "requests.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_default_seeds_are_zero_to_k_minus_one_and_a_rerun_counts_what_it_kept(tmp_path):
    data, out = _requests(tmp_path), tmp_path / "out"
    pipe = SeedEcho()
    record = generate_candidates(pipe, data, out, num_candidates=3, steps=1, progress=False)
    # 2 items x 3 candidates, candidate k made with seed k
    assert (record["generated"], record["kept"], record["candidates"]) == (6, 0, 6)
    assert pipe.calls == [(f"edit {i}", k, 1) for i in range(2) for k in range(3)]
    rows = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    assert [(r["id"], r["group_id"], r["meta"]["seed"]) for r in rows] == [
        (f"item{i}#{k}", f"item{i}", k) for i in range(2) for k in range(3)]
    with Image.open(out / "images" / "item1" / "candidate-2.png") as im:
        assert im.getpixel((0, 0)) == (2, 0, 0)
    # one candidate lost: the re-run makes only it (seed 2) and keeps the other 5
    (out / "images" / "item1" / "candidate-2.png").unlink()
    again = SeedEcho()
    record = generate_candidates(again, data, out, num_candidates=3, steps=1, progress=False)
    assert (record["generated"], record["kept"]) == (1, 5)
    assert again.calls == [("edit 1", 2, 1)]
