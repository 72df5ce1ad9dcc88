"""Outside CI: UniREditBench's released ``eval/gpt_eval_uniredit.py`` (Maplebb/UniREditBench at
a7015c5, run as released) aggregating one recorded set of judge answers covering every answer
shape, to record its official numbers for tests/bench/test_editor_uniredit.py.

Setup: ``git --git-dir=/work/.mirror/Maplebb+UniREditBench/repo show a7015c5:eval/gpt_eval_uniredit.py
> /tmp/harness/uniredit/gpt_eval_uniredit.py`` and the same for ``eval/utils.py``; a
virtualenv with pandas, numpy, pillow, openai, xlsxwriter (``/tmp/harness/venv_er``). The
released script resumes from its ``{model}.pkl`` (one entry per ``name#idx``), so writing
the answers there makes it aggregate them without calling any API. Run:
``/tmp/harness/venv_er/bin/python scripts/harness/uniredit_official_vs_released.py``.
"""
import json
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path("/tmp/harness/uniredit")
F = "**Final Score:** **{}**"
#: name#idx -> the three answers (judge1 consistency, judge2 reasoning, judge3 plausibility)
ANSWERS = {
    "physics#0": [F.format(5), "Final Score: 5", "final score: 5"],
    "physics#1": ["Final Score: 4", "Final Score: 3, 5", "Final Score: 2"],
    "physics#2": ["Final Score: 7", "Final Score: 4", "Final Score: 5"],
    "physics#3": ["Final Score: 3", "The image is good.", "Final Scores: none"],
    "biology#0": ["Final Scores: 3", "final score: 2", "FINAL SCORE: 1"],
    "biology#1": ["Final Score: 5", "Final Score: 2", "**Final Score**: 4"],
    # sudoku#0: no output image; sudoku#1: the consistency request failed (API error)
    "sudoku#2": ["Final Score: 5", "Final Score: 4", "Final Score: 4"],
}
MISSING = {"sudoku#0": "Cannot find edited image at: out/sudoku/0.png",
           "sudoku#1": "BadRequestError('filtered')"}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        items = []
        for name, count in (("physics", 4), ("biology", 2), ("sudoku", 3)):
            for idx in range(count):
                items.append({"original_image_path": f"o/{name}_{idx}.png",
                              "reference_image_path": f"r/{name}_{idx}.png",
                              "instruction": "x", "name": name, "idx": idx,
                              "reference_effect": "y"})
        (tmp / "data.json").write_text(json.dumps(items))
        out = tmp / "out"
        out.mkdir()
        result = {k: {"judge1": a[0], "judge2": a[1], "judge3": a[2]} for k, a in ANSWERS.items()}
        for k, error in MISSING.items():
            result[k] = {"judge1": "", "judge2": "", "judge3": "", "error": error}
        with open(out / "editor.pkl", "wb") as f:
            pickle.dump(result, f)
        # the script builds an Azure client at start-up and never calls it (every answer is
        # in the pkl); the installed openai refuses to build one without credentials, so
        # AzureOpenAI is replaced by a stand-in before the script imports it
        runner = ("import openai, runpy, sys; openai.AzureOpenAI = lambda **kw: None; "
                  f"sys.path.insert(0, {str(HERE)!r}); sys.argv = sys.argv[1:]; "
                  f"runpy.run_path({str(HERE / 'gpt_eval_uniredit.py')!r}, run_name='__main__')")
        subprocess.run([sys.executable, "-c", runner, "gpt_eval_uniredit.py", "--data",
                        str(tmp / "data.json"), "--input", str(tmp), "--output", str(out),
                        "--model", "editor"], check=True, cwd=tmp, stdout=subprocess.DEVNULL)
        print((out / "editor_judge.csv").read_text())
        by_name = out / "editor_by_name.json"
        if by_name.exists():
            print(by_name.read_text())


if __name__ == "__main__":
    main()
