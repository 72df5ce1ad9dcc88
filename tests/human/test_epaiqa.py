"""EPAIQA's cleaning (ieqa.human.epaiqa) on hand-worked ratings.

Edit e1, eight raters r1..r8 (numpy's quartiles: linear interpolation at (n-1)p):

* overall 2,2,2,2,2,2,1,1 -> sorted 1,1,2,2,2,2,2,2: Q1 = x[1.75] = 1.75, Q3 = x[5.25] = 2,
  IQR 0.25, fences [1.375, 2.375]: r7 and r8 (1) are outliers; MOS = 2 (plain mean 1.75).
* prompt completion 2,2,2,1,1,3,1,1. r7's and r8's go with their overall ratings, so the
  vote is over r1..r6: {2: 3, 1: 2, 3: 1} -> **2**. A vote over all eight ratings,
  {1: 4, 2: 3, 3: 1}, gives **1**.
* harmony 3,3,3,3,3,3,3,5 -> Q1 = Q3 = 3, IQR 0: r8 (5) is an outlier; MOS 3.
* naturalness 4,4,4,4,3,3,4,4 -> sorted 3,3,4,4,4,4,4,4: Q1 = x[1.75] = 3.75, Q3 = 4,
  fences [3.375, 4.375]: r5 and r6 (3) are outliers; MOS 4. (Harmony and naturalness
  outliers leave the completion ratings alone.)

Edit e2, four raters, overall and completion only: overall 4,5,4,4, completion 3,3,3,2.
r4 rates completion 2 (partly followed) with overall 4 > 2: a conflict, both removed.
The rest, overall 4,5,4: Q1 = x[0.5] = 4, Q3 = x[1.5] = 4.5, fences [3.25, 5.25], no
outlier; MOS 13/3; completion 3,3,3 -> 3. Without the conflict rule, overall 4,5,4,4 has
Q3 = x[2.25] = 4.25, IQR 0.25, upper fence 4.625: r2's 5 is an outlier (and r2's
completion goes with it), MOS 4, completion 3,3,2 -> 3.

Edit e3, two raters: overall 2,2, completion 1,3: a tied vote, the lower level (1) wins.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ieqa.human import RatingTable, majority_vote
from ieqa.human.epaiqa import RemovedRating, epaiqa_mos
from ieqa.metrics import MetricInputError

RATERS = [f"r{j}" for j in range(1, 9)]
E1 = {
    "overall": [2, 2, 2, 2, 2, 2, 1, 1],
    "prompt completion": [2, 2, 2, 1, 1, 3, 1, 1],
    "harmony": [3, 3, 3, 3, 3, 3, 3, 5],
    "naturalness": [4, 4, 4, 4, 3, 3, 4, 4],
}
E2 = {"overall": [4, 5, 4, 4], "prompt completion": [3, 3, 3, 2]}
E3 = {"overall": [2, 2], "prompt completion": [1, 3]}


def table(extra: list[tuple[str, str, str, float]] = ()) -> RatingTable:
    rows = []
    for item, dims in (("e1", E1), ("e2", E2), ("e3", E3)):
        for dim, values in dims.items():
            rows += [(item, RATERS[j], dim, float(v)) for j, v in enumerate(values)]
    rows += list(extra)
    item, rater, dim, value = zip(*rows, strict=True)
    return RatingTable(np.asarray(item), np.asarray(rater), np.asarray(dim), np.asarray(value))


def test_the_paper_rule_gives_2_where_voting_on_every_rating_gives_1():
    res = epaiqa_mos(table())
    assert res.scores("prompt_completion")["e1"] == 2
    all_votes = np.asarray([E1["prompt completion"]], dtype=float)
    assert majority_vote(all_votes)[0] == 1
    assert res.scores("overall")["e1"] == 2.0


def test_hand_worked_scores_and_every_removal_listed():
    res = epaiqa_mos(table())
    assert list(res.dimensions) == ["overall", "harmony", "local_naturalness", "prompt_completion"]
    overall = res.scores("overall")
    assert overall["e1"] == 2.0 and math.isclose(overall["e2"], 13 / 3) and overall["e3"] == 2.0
    assert res.scores("harmony") == {"e1": 3.0}
    assert res.scores("local_naturalness") == {"e1": 4.0}
    assert res.scores("prompt_completion") == {"e1": 2.0, "e2": 3.0, "e3": 1.0}
    assert res.tied_votes == ("e3",)
    assert res.removed == (
        RemovedRating("overall", "e1", "r7", 1.0, "iqr"),
        RemovedRating("overall", "e1", "r8", 1.0, "iqr"),
        RemovedRating("overall", "e2", "r4", 4.0, "conflict"),
        RemovedRating("harmony", "e1", "r8", 5.0, "iqr"),
        RemovedRating("local_naturalness", "e1", "r5", 3.0, "iqr"),
        RemovedRating("local_naturalness", "e1", "r6", 3.0, "iqr"),
        RemovedRating("prompt_completion", "e1", "r7", 1.0, "overall_removed"),
        RemovedRating("prompt_completion", "e1", "r8", 1.0, "overall_removed"),
        RemovedRating("prompt_completion", "e2", "r4", 2.0, "conflict"),
    )
    assert res.removed_counts() == {
        "overall": {"iqr": 2, "conflict": 1}, "harmony": {"iqr": 1}, "local_naturalness": {"iqr": 2},
        "prompt_completion": {"overall_removed": 2, "conflict": 1},
    }
    pc = res.dimensions["prompt_completion"].result
    assert pc.n_ratings.tolist() == [6, 3, 2] and pc.n_dropped == 3 and np.isnan(pc.std).all()
    ov = res.dimensions["overall"].result
    assert ov.n_dropped == 3 and ov.n_outliers == 2 and ov.n_input_ratings == 14


def test_without_the_conflict_rule_the_iqr_sees_the_conflicting_rating():
    res = epaiqa_mos(table(), conflicts=False)
    assert res.scores("overall")["e2"] == 4.0
    assert res.scores("prompt_completion")["e2"] == 3.0
    e2 = [r for r in res.removed if r.item == "e2"]
    assert e2 == [RemovedRating("overall", "e2", "r2", 5.0, "iqr"),
                  RemovedRating("prompt_completion", "e2", "r2", 3.0, "overall_removed")]


def test_a_completion_without_an_overall_rating_is_kept_and_tie_break_is_used():
    res = epaiqa_mos(table([("e3", "r9", "prompt completion", 3.0)]), tie_break="higher")
    assert res.scores("prompt_completion")["e3"] == 3.0 and res.tied_votes == ()
    res = epaiqa_mos(table(), tie_break="higher")
    assert res.scores("prompt_completion")["e3"] == 3.0 and res.tied_votes == ("e3",)


@pytest.mark.parametrize(("extra", "kw", "message"), [
    ([("e1", "r1", "visual_quality", 3.0)], {}, "--method iqr"),
    ([("e1", "r1", "prompt completion", 4.0)], {"duplicates": "last"}, "conflicts=False"),
    ([], {"k": -1}, "k must be >= 0"),
])
def test_errors_say_what_to_do(extra, kw, message):
    with pytest.raises(MetricInputError, match=message.replace("(", r"\(")):
        epaiqa_mos(table(extra), **kw)


def test_overall_ratings_are_required():
    t = RatingTable(np.asarray(["e1", "e1"]), np.asarray(["a", "b"]), np.asarray(["harmony"] * 2),
                    np.asarray([3.0, 4.0]))
    with pytest.raises(MetricInputError, match="needs overall ratings.*--method iqr"):
        epaiqa_mos(t)
