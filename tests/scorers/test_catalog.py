"""The scorer registry: listing, filtering, building with overrides, clear errors."""

from __future__ import annotations

import pytest

import ieqa
from ieqa.registry import SCORERS
from ieqa.scorers import ScorerError, create_scorer, list_scorers, scorer_info
from ieqa.scorers.catalog import PUBLISHED_TABLE, SCORER_TABLE, VLM_TABLE


def test_every_table_row_is_registered_and_builds() -> None:
    assert list_scorers() == sorted(info.name for info in (*SCORER_TABLE, *VLM_TABLE,
                                                           *PUBLISHED_TABLE))
    for name in (info.name for info in SCORER_TABLE):  # VLM rows need a model (test_vlm_*)
        scorer = create_scorer(name)
        assert scorer.info is scorer_info(name)
        assert scorer.name == name and scorer.dimensions == scorer_info(name).dimensions
        assert SCORERS.get(name).info is scorer_info(name)


def test_filters() -> None:
    assert set(list_scorers(kind="no-reference")) == {"niqe", "piqe"}
    assert set(list_scorers(kind="full-reference")) == {"psnr", "ssim", "ms_ssim", "gmsd", "vif", "fsim",
                                                        "l1", "l2"}
    assert set(list_scorers(kind="learned")) >= {"clip-i", "clip-t", "clip-dir", "dino"}
    assert "classic" in list_scorers(dimension="PQ")  # aliases resolve
    assert "psnr" not in list_scorers(dimension="visual_quality")
    assert list_scorers(needs_source=False) == ["clip-t", "ensemble", "niqe", "piqe",
                                                "shapesedit-judge", "structscore"]
    assert set(list_scorers(kind="vlm")) == {"vlm-judge", "vlm-levels", "vlm-digits", "vlm-head",
                                             "vlm-gaussian", "vlm-dual", "vlm-pairwise", "critique",
                                             "editreward", "editscore", "viescore",
                                             "unifiedreward-edit", "reasonedit", "re-reward",
                                             "edithf", "gedit-judge", "imgedit-judge", "rise-judge",
                                             "kris-judge", "ie-critic-r1", "uniredit-judge",
                                             "structscore", "imgedit-judge-7b"}
    assert ieqa.list_scorers() == list_scorers()


def test_direction_and_units() -> None:
    assert not scorer_info("gmsd").higher_better and not scorer_info("niqe").higher_better
    assert scorer_info("psnr").units == "dB" and scorer_info("classic").score_range == (1.0, 5.0)
    d = scorer_info("classic").to_dict()
    assert d["dimensions"] == ["visual_quality", "content_preservation", "instruction_alignment"]


def test_errors_name_what_to_do() -> None:
    with pytest.raises(KeyError, match="known: classic"):
        create_scorer("nope")
    with pytest.raises(ScorerError, match="accepts"):
        create_scorer("ssim", bogus=1)
    with pytest.raises(ScorerError, match="accepts"):
        create_scorer("classic", bogus=1)
