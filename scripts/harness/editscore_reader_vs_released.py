"""Outside CI: EditScore's released mllm_output_to_dict (editscore/utils.py at the pinned
commit, run as released with json-repair 0.64.4) and what its evaluate() then takes from the
result, beside ieqa.prompts.answers.released_editscore_reading, on hand-picked shapes and
fuzz. Run with the harness virtualenv's python (see README.md)."""
import contextlib
import io
import json
import random
import subprocess
import sys

sys.path.insert(0, "/tmp/harness")  # the released file, extracted at the pinned commit
import editscore_utils as R  # noqa: E402


def theirs(text, give_up):
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            d = R.mllm_output_to_dict(text, give_up_parsing=give_up, score_range=25)
    except Exception:  # the released reader raises (json on digits it cannot read)
        return ("fails", None)
    if d is False:
        return ("ask_again", None)
    if d == "rate_limit_exceeded":
        return ("fails", None)
    if isinstance(d, dict) and str(d.get("reasoning", "")).startswith("guess_if_cannot_parse"):
        return ("random", None)
    try:  # what evaluate() does with it: min(score) / 2.5 and each score / 2.5
        scores = d["score"]
        min(scores) / 2.5
        values = tuple(float(s / 2.5) * 2.5 for s in scores)
        if not isinstance(scores, list):
            return ("fails", None)  # a str or dict that min() happens to take
        return ("read", values + ("reasoning" in d,))  # evaluate() needs the last reasoning
    except Exception:
        return ("fails", None)


def ieqa_all(texts):
    code = ("import json,sys\nfrom ieqa.prompts.answers import released_editscore_reading as r\n"
            "out=[]\nfor t in json.load(sys.stdin):\n for g in (False, True):\n"
            "  x=r(t, give_up=g); out.append([x.status, [*x.scores, x.reasoning] if x.scores "
            "else None])\n"
            "print(json.dumps(out))")
    p = subprocess.run(["/work/main/.venv/bin/python", "-c", code], input=json.dumps(texts),
                       capture_output=True, text=True, check=True,
                       env={"PYTHONPATH": "/work/main/src"})
    res = json.loads(p.stdout)
    return {(t, g): (res[2 * k + g][0], tuple(res[2 * k + g][1]) if res[2 * k + g][1] else None)
            for k, t in enumerate(texts) for g in (0, 1)}


SHAPES = ['{"reasoning": "ok", "score": [20, 15]}', '[12, 11]', '{"score": 7}', '{"score": [6]}',
          '[6]', '{"score": [6, 4, 9]}', 'I give it 7', '', '7', ' 7 ', '11', '-1', '[6, 4]',
          '[6,4]', '[6, 4, 9]', '||V^=^V||{"score": [3, 5]}||V^=^V||', '{score: 7}',
          '{"score": [5, 6],}', '{reasoning: fine, score: 8}', '{"score": []}', '{"reasoning": "x"}',
          '{"score": "7"}', '{"score": [true, 5]}', '{"score": [null]}', 'rate_limit_exceeded',
          '```json\n{"reasoning": "a", "score": [4, 9]}\n```', '}{', '{"score": [7.5, 8]}',
          '{"score": [-3, 2]}', '||V^=^V||[6, 4]||V^=^V||', '||V^=^V||||V^=^V||',
          '{"score": NaN}', 'Score: [8, 9] and {"score": [1, 2]}',
          '{"score": [3, 4]} {"score": [9, 9]}', '\u201c{\u201cscore\u201d: [3, 4]}',
          '{\n"score":\n[2,\n3]\n}', '0_7', '+7', '[ 6, 4]',
          '{"reasoning": "He said "hi"", "score": [3, 4]}', '{"reasoning": "x", "score": [20, 15]',
          '{"score": [25, 25]} trailing', "{'score': [10, 12]}", '{"score": {"a": 1}}',
          '{"score": [[1, 2]]}', '{"reasoning": "a, b", score: [9, 8]}', '{"score": "20, 15"}',
          "I'm sorry, but I can't assist with that request.", '[\u0661, \u0662]',
          '{"score": [20, 18]}', '[\u0663, 4]']
FRAGS = ['{', '}', '[', ']', '"score"', 'score', ':', ',', ' ', '7', '12', '-2', '3.5', '"x"',
         'true', 'null', '\n', '||V^=^V||', 'reasoning', '"reasoning"', 'abc', '[6, 4]', "'",
         '\u201c', '"']
rng = random.Random(0)
fuzz = ["".join(rng.choice(FRAGS) for _ in range(rng.randint(1, 9))) for _ in range(20000)]
texts = SHAPES + fuzz
mine = ieqa_all(texts)
bad = 0
for give_up in (False, True):
    for t in texts:
        a, b = theirs(t, give_up), mine[(t, int(give_up))]
        same_nan = a[0] == b[0] == "read" and len(a[1]) == len(b[1]) and all(
            x == y or (x != x and y != y) for x, y in zip(a[1], b[1], strict=True))
        if a != b and not same_nan:
            bad += 1
            if bad < 20:
                print("DIFF", give_up, repr(t), a, b)
print(f"{2 * len(texts)} answers compared, {bad} differ")
for t in SHAPES:
    print(f"{t!r:60} {theirs(t, False)}")
