"""Outside CI: ieqa's GEdit-Bench official numbers beside the released
calculate_statistics.py (run as released, at the pinned commit) on the same answers: the
released per-item readings ieqa recorded (items.jsonl, official_status "read") are written
as the released scorer's per-group CSVs, then analyze_scores computes G_SC/G_PQ/G_O."""
import contextlib
import csv
import io
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, "/tmp/harness")  # the released files, extracted at the pinned commit
import calculate_statistics as released

run = Path(sys.argv[1])
items = [json.loads(line) for line in (run / "items.jsonl").read_text().splitlines()]
results = json.loads((run / "results.json").read_text())
left_out = {s: sum(1 for i in items if i["official_status"] == s) for s in ("random", "unread", "drawn")}
worst = 0.0
with tempfile.TemporaryDirectory() as tmp:
    for group in released.GROUPS:
        with open(Path(tmp) / f"mine_{group}_gpt_score.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, ["source_image", "edited_image", "instruction", "sementics_score",
                                    "quality_score", "intersection_exist", "instruction_language"])
            w.writeheader()
            for i in items:
                if i["task_type"] == group and i["official_status"] == "read":
                    w.writerow({"source_image": i["key"], "edited_image": i["key"], "instruction": "",
                                "sementics_score": i["sc"], "quality_score": i["pq"],
                                "intersection_exist": i["intersection"],
                                "instruction_language": i["language"]})
    for lang, rel_lang in (("en", "en"), ("cn", "cn")):
        with contextlib.redirect_stdout(io.StringIO()):
            sem, qua, ove, sem_i, qua_i, ove_i = released.analyze_scores(tmp, ["mine"], rel_lang)
        mine = results["editors"]["mine"][lang]
        pairs = [(mine["official"]["G_SC"], sem["mine"]["avg_semantics"]),
                 (mine["official"]["G_PQ"], qua["mine"]["avg_quality"]),
                 (mine["official"]["G_O"], ove["mine"]["avg_overall"]),
                 (mine["intersection"]["G_SC"], sem_i["mine"]["avg_semantics"]),
                 (mine["intersection"]["G_PQ"], qua_i["mine"]["avg_quality"]),
                 (mine["intersection"]["G_O"], ove_i["mine"]["avg_overall"])]
        names = ["G_SC", "G_PQ", "G_O", "G_SC-I", "G_PQ-I", "G_O-I"]
        for (a, b), name in zip(pairs, names, strict=True):
            worst = max(worst, abs(a - b))
            print(f"{lang} {name:7} ieqa {a:.12f}  released {b:.12f}  |diff| {abs(a - b):.1e}")
print(f"left out of both: {left_out}; largest |diff| {worst:.1e}")
