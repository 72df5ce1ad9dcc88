from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from pydantic import ValidationError

from ieqa import BBox, EditSample, Group, Preference, PreferenceLabel, Rating, group_samples


def test_bbox_round_trip_and_iou():
    b = BBox.from_xyxy(10, 20, 50, 60, width=100, height=200)
    assert (b.x, b.y, b.w, b.h) == pytest.approx((0.3, 0.2, 0.4, 0.2))
    assert b.to_xyxy(100, 200) == pytest.approx((10, 20, 50, 60))
    # two 0.4x0.4 squares overlapping on a 0.2x0.4 strip: IoU = 0.08 / (0.16+0.16-0.08) = 1/3
    a = BBox(x=0.3, y=0.5, w=0.4, h=0.4)
    c = BBox(x=0.5, y=0.5, w=0.4, h=0.4)
    assert a.iou(c) == pytest.approx(1 / 3)
    assert a.iou(a) == pytest.approx(1.0)
    assert a.iou(BBox(x=0.9, y=0.9, w=0.1, h=0.1)) == 0.0
    with pytest.raises(ValueError):
        BBox.from_xyxy(0, 0, 120, 10, width=100, height=100)
    with pytest.raises(ValueError):
        BBox(x=1.5, y=0.5, w=0.1, h=0.1)


def test_sample_image_refs_and_validation():
    arr = np.zeros((4, 4, 3), np.uint8)
    s = EditSample(id=7, source="a/src.png", edited=arr, mask=Image.new("L", (4, 4)))
    assert s.id == "7" and s.source == Path("a/src.png")
    assert s.image_paths() == {"source": Path("a/src.png")}
    with pytest.raises(ValueError):
        EditSample(id="", edited="e.png")
    with pytest.raises(ValidationError, match="an image must be"):
        EditSample(id="x", edited=3.14)
    with pytest.raises(ValidationError, match="scores must be a dict"):
        EditSample(id="x", edited="e.png", scores=[1.0])
    with pytest.raises(ValueError):
        EditSample(id="x", edited="e.png", instruction_kind="command")
    r = Rating(rater="r1", dimension="SC", value=1)
    assert r.dimension == "instruction_alignment"


def test_preference_labels_and_swap():
    a = EditSample(id="a", edited="a.png")
    b = EditSample(id="b", edited="b.png")
    p = Preference(a=a, b=b, label="A", dimension="PQ")
    assert p.label is PreferenceLabel.A and p.dimension == "visual_quality"
    q = p.swapped()
    assert q.a.id == "b" and q.label is PreferenceLabel.B
    assert Preference(a=a, b=b, label="bothbad").label is PreferenceLabel.BOTH_BAD
    assert Preference(a=a, b=b, label="tie").swapped().label is PreferenceLabel.TIE
    with pytest.raises(ValueError):
        Preference(a=a, b=b, label="a>>>b")


def test_group_samples():
    s = [EditSample(id=str(i), source="s.png", edited=f"{i}.png", instruction="x", group_id=f"g{i % 2}")
         for i in range(5)]
    groups = group_samples(s)
    assert [g.id for g in groups] == ["g0", "g1"] and [len(g) for g in groups] == [3, 2]
    plain = [x.model_copy(update={"group_id": None}) for x in s]
    assert [len(g) for g in group_samples(plain, key="request")] == [5]
    with pytest.raises(ValueError, match="another group"):
        group_samples(s, key="request")  # group ids contradict the requests
    with pytest.raises(ValueError, match="group_id"):
        group_samples([EditSample(id="z", edited="z.png")])
    with pytest.raises(ValueError, match="another group"):
        Group(id="g0", samples=[s[1]])
