"""Outside CI: GEdit-Bench's released mllm_output_to_dict (run as released, from the pinned
commit) beside ieqa.prompts.answers.released_vie_reading, on hand-picked shapes and fuzz."""
import contextlib
import io
import math
import random
import sys

sys.path.insert(0, "/tmp/harness")  # the released files, extracted at the pinned commit
import json
import subprocess

import released_utils as R


def theirs(text, give_up):
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            d = R.mllm_output_to_dict(text, give_up_parsing=give_up)
    except Exception:  # the released reader raises (json on digits it cannot read)
        return ("fails", None)
    if d is False:
        return ("ask_again", None)
    if d == "rate_limit_exceeded":
        return ("fails", None)
    if isinstance(d, dict) and str(d.get("reasoning", "")).startswith("guess_if_cannot_parse"):
        return ("random", None)
    try:
        low = min(d["score"])
        low + 0  # a number (the product rule is per item)
        if isinstance(low, bool):
            return ("fails", None)  # bool survives evaluate, breaks calculate_statistics
        return ("read", float(low))
    except Exception:
        return ("fails", None)

_IEQA = {}
def ieqa_all(texts):
    code = ("import json,sys\nfrom ieqa.prompts.answers import released_vie_reading as r\n"
            "out=[]\nfor t in json.load(sys.stdin):\n for g in (False, True):\n"
            "  x=r(t, give_up=g); out.append([x.status, x.score])\nprint(json.dumps(out))")
    p = subprocess.run(["/work/main/.venv/bin/python", "-c", code], input=json.dumps(texts),
                       capture_output=True, text=True, check=True, env={"PYTHONPATH": "/work/main/src"})
    res = json.loads(p.stdout)
    for k, t in enumerate(texts):
        _IEQA[(t, False)] = tuple(res[2 * k])
        _IEQA[(t, True)] = tuple(res[2 * k + 1])
def mine(text, give_up):
    return _IEQA[(text, give_up)]

SHAPES = ['{"reasoning": "ok", "score": [6, 8]}', '[12, 11]', '{"score": 7}', '{"score": [6]}',
          '[6]', '{"score": [6, 4, 9]}', 'I give it 7', '', '7', ' 7 ', '11', '-1', '[6, 4]',
          '[6,4]', '[6, 4, 9]', '||V^=^V||{"score": [3, 5]}||V^=^V||', '{score: 7}',
          '{"score": [5, 6],}', '{reasoning: fine, score: 8}', '{"score": []}', '{"reasoning": "x"}',
          '{"score": "7"}', '{"score": [true, 5]}', '{"score": [null]}', 'rate_limit_exceeded',
          '```json\n{"reasoning": "a", "score": [4, 9]}\n```', '}{', '{"score": [7.5, 8]}',
          '{"score": [-3, 2]}', '||V^=^V||[6, 4]||V^=^V||', '||V^=^V||||V^=^V||', '{"score": NaN}',
          'Score: [8, 9] and {"score": [1, 2]}', '{"score": [3, 4]} {"score": [9, 9]}',
          '\u201c{\u201cscore\u201d: [3, 4]}', '{\n"score":\n[2,\n3]\n}', '0_7', '+7', '[ 6, 4]',
          '[\u0661, \u0662]', '[\u0663, 4]']
FRAGS = ['{', '}', '[', ']', '"score"', 'score', ':', ',', ' ', '7', '12', '-2', '3.5', '"x"',
         'true', 'null', '\n', '||V^=^V||', 'reasoning', '"reasoning"', 'abc', '[6, 4]']
rng = random.Random(0)
fuzz = ["".join(rng.choice(FRAGS) for _ in range(rng.randint(1, 9))) for _ in range(20000)]
bad = 0
ieqa_all(SHAPES + fuzz)
for give_up in (False, True):
    for t in SHAPES + fuzz:
        a, b = theirs(t, give_up), mine(t, give_up)
        if a != b and not (a[1] is not None and b[1] is not None and math.isnan(a[1]) and math.isnan(b[1])):
            bad += 1
            if bad < 15:
                print("DIFF", give_up, repr(t), a, b)
print(f"{2 * (len(SHAPES) + len(fuzz))} answers compared, {bad} differ")
for t in SHAPES:
    print(f"{t!r:60} first pass {theirs(t, False)}  give-up pass {theirs(t, True)[0]}")
