"""Mutation check: do the tests catch a broken central formula?

Each mutation below breaks one formula the project depends on (metrics, MOS, losses,
readouts, reward rules, curation) the way a plausible bug would, by replacing one exact
piece of source text. For each, one at a time, the script copies the checkout (without
.git and the virtual environments) to a temporary folder, applies the mutation there,
runs the mutation's test files with pytest against that copy, and reports the tests that
failed. A mutation that no test catches is a hole in the suite. The checkout itself is
never modified.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/mutation_check.py            # all
    .venv/bin/python scripts/mutation_check.py --only bt500-boundary --only iqr-nearest
    .venv/bin/python scripts/mutation_check.py --list
    .venv/bin/python scripts/mutation_check.py --area bench_editor   # one file of scripts/mutants/
    .venv/bin/python scripts/mutation_check.py --markdown table.md          # the docs table

It is not part of CI: the fast mutations take a few minutes; the ones marked slow break a
training stage and run a learning test each (minutes apiece), only with ``--slow``.
Exit status: 0 when every mutation run was caught, 1 when one was missed, 2 when a
mutation no longer applies (its source text is gone: update the list).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))


from mutants import ALL as MUTATIONS  # noqa: E402
from mutants import Mutation  # noqa: E402


def _copy_checkout(dest: Path) -> None:
    skip = {".git", ".venv", ".venv-latest", "site", ".pytest_cache", "__pycache__", ".whl"}
    shutil.copytree(ROOT, dest, ignore=lambda d, names: [n for n in names if n in skip
                                                          or n.endswith(".egg-info")])


def _node_id(copy: Path, classname: str, name: str) -> str:
    """pytest's node id from a JUnit ``classname`` (``tests.human.test_mos[.TestX]``)."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        if (copy / Path(*parts[:cut])).with_suffix(".py").is_file():
            return "::".join(["/".join(parts[:cut]) + ".py", *parts[cut:], name])
    return f"{classname}::{name}"


def run_one(m: Mutation, copy: Path, python: str, slow: bool) -> tuple[str, list[str], float]:
    """Apply ``m`` in ``copy``, run its tests, restore; (status, failed test ids, seconds)."""
    if m.slow and not slow:
        return "not run", ["(a training test: --slow runs it)"], 0.0
    path = copy / m.file
    original = path.read_text(encoding="utf-8")
    if original.count(m.old) != 1:
        return "stale", [f"{m.file} holds the old text {original.count(m.old)} times"], 0.0
    path.write_text(original.replace(m.old, m.new), encoding="utf-8")
    report = copy / "mutation-junit.xml"
    # --claims=run: a mutant is exactly what tests/claims-record.json must not vouch for
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
           "--claims=run", *m.tests]
    if not slow:
        cmd += ["-m", "not slow"]
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    try:
        subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, check=False)
    finally:
        path.write_text(original, encoding="utf-8")
    seconds = time.perf_counter() - t0
    failed: list[str] = []
    if report.exists():
        for case in ET.parse(report).iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(_node_id(copy, case.get("classname", ""), case.get("name", "")))
        report.unlink()
    else:
        failed.append("(pytest wrote no report)")
    return ("caught" if failed else "MISSED"), failed, seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", default=[], help="run this mutation (repeatable)")
    ap.add_argument("--area", action="append", default=[],
                    help="run the mutations of this module of scripts/mutants/ (repeatable), "
                         "e.g. bench_editor")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--slow", action="store_true", help="also run slow-marked tests")
    ap.add_argument("--markdown", default=None, help="also write the table to this file")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs pytest")
    args = ap.parse_args()
    known = {m.name for m in MUTATIONS}
    unknown = [n for n in args.only if n not in known]
    if unknown:
        print(f"unknown mutation {unknown}; --list shows the names", file=sys.stderr)
        return 2
    from mutants import AREAS, area_of

    bad = [a for a in args.area if a not in AREAS]
    if bad:
        print(f"unknown area {bad}; the areas are {', '.join(AREAS)}", file=sys.stderr)
        return 2
    chosen = [m for m in MUTATIONS if (not args.only or m.name in args.only)
              and (not args.area or area_of(m) in args.area)]
    if args.list:
        for m in chosen:
            print(f"{m.name:28} {m.what}  [{m.file}]")
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="ieqa-mutants-") as tmp:
        copy = Path(tmp) / "ieqa"
        _copy_checkout(copy)
        for m in chosen:
            status, failed, seconds = run_one(m, copy, args.python, args.slow)
            shown = failed
            print(f"{status:7} {m.name:28} {seconds:6.1f} s  "
                  + (", ".join(shown[:4]) + (" ..." if len(shown) > 4 else "")), flush=True)
            rows.append((m, status, shown))
    table = ["| mutation | what it breaks | status | tests that fail |", "|---|---|---|---|"]
    for m, status, failed in rows:
        names = "<br>".join(f"`{f}`" for f in failed[:3]) + (
            f" (+{len(failed) - 3} more)" if len(failed) > 3 else "")
        table.append(f"| `{m.name}` | {m.what} | {status} | {names} |")
    if args.markdown:
        Path(args.markdown).write_text("\n".join(table) + "\n", encoding="utf-8")
    statuses = {status for _, status, _ in rows}
    return 2 if "stale" in statuses else 1 if "MISSED" in statuses else 0


if __name__ == "__main__":
    sys.exit(main())
