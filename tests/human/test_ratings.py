"""RatingTable: long form <-> items x raters matrices."""

from __future__ import annotations

import numpy as np
import pytest

from ieqa.data.schema import EditSample, Rating
from ieqa.human import DuplicateRatingsError, RatingTable, as_rating_matrix, csv_columns
from ieqa.metrics import MetricInputError


def _sample(sid: str, *ratings: tuple[str, str, float]) -> EditSample:
    return EditSample(id=sid, edited=f"{sid}.png",
                      ratings=[Rating(rater=r, dimension=d, value=v) for r, d, v in ratings])


def test_from_samples_canonicalises_and_builds_matrix():
    samples = [
        _sample("e1", ("ann", "SC", 4), ("bob", "SC", 2), ("ann", "PQ", 5)),
        _sample("e2", ("bob", "semantic consistency", 3)),
        _sample("e3"),
    ]
    table = RatingTable.from_samples(samples)
    assert len(table) == 4
    assert table.dimensions == ["instruction_alignment", "visual_quality"]
    items, raters, m = table.to_matrix("SC")
    assert items.tolist() == ["e1", "e2"] and raters.tolist() == ["ann", "bob"]
    np.testing.assert_array_equal(m, [[4, 2], [np.nan, 3]])
    items, raters, m = table.to_matrix("visual quality")
    assert items.tolist() == ["e1"] and m.shape == (1, 1)


def test_to_matrix_needs_dimension_when_several_and_known_dimension():
    table = RatingTable(["a", "a"], ["r", "r"], ["PQ", "SC"], [1, 2])
    with pytest.raises(MetricInputError, match="dimension must be given"):
        table.to_matrix()
    with pytest.raises(MetricInputError, match="no ratings for dimension 'overall'"):
        table.to_matrix("overall")
    assert table.select("pq").to_matrix()[2].tolist() == [[1.0]]


def test_duplicates_raise_mean_first_last():
    # a rated 1, 3, 2 by r (in file order); b once
    table = RatingTable(["a", "b", "a", "a"], ["r"] * 4, ["overall"] * 4, [1.0, 5.0, 3.0, 2.0])
    with pytest.raises(DuplicateRatingsError, match=r"\('a', 'r'\)") as err:
        table.to_matrix()
    assert err.value.count == 1 and err.value.pairs == [("a", "r")]
    assert table.to_matrix(duplicates="mean")[2][:, 0].tolist() == [2.0, 5.0]
    assert table.to_matrix(duplicates="first")[2][:, 0].tolist() == [1.0, 5.0]
    assert table.to_matrix(duplicates="last")[2][:, 0].tolist() == [2.0, 5.0]
    with pytest.raises(MetricInputError, match="duplicates must be"):
        table.to_matrix(duplicates="median")


def test_outside_and_clipped():
    table = RatingTable(["a", "b", "c", "d"], ["r"] * 4, ["overall"] * 4, [0.5, 3.0, np.nan, 99.0])
    assert table.outside(1, 5).tolist() == [0, 3]
    assert np.array_equal(table.clipped(1, 5).value, [1.0, 3.0, np.nan, 5.0], equal_nan=True)


def test_table_validation():
    with pytest.raises(MetricInputError, match="length mismatch"):
        RatingTable(["a"], ["r", "s"], ["overall"], [1.0])
    with pytest.raises(MetricInputError, match="infinite"):
        RatingTable(["a"], ["r"], ["overall"], [np.inf])


def test_from_csv_custom_columns_tsv_and_missing_cells(tmp_path):
    path = tmp_path / "r.tsv"
    path.write_text("edit\tjudge\tscore\n e1 \tA\t4\ne1\tB\t\ne2\tA\tNA\ne2\tB\t2.5\n")
    table = RatingTable.from_csv(path, "edit", "judge", "score", dimension="PQ")
    assert table.n_missing == 2 and table.dimensions == ["visual_quality"]
    items, raters, m = table.to_matrix()
    assert items.tolist() == ["e1", "e2"] and raters.tolist() == ["A", "B"]
    np.testing.assert_array_equal(m, [[4, np.nan], [np.nan, 2.5]])
    assert csv_columns(path) == ["edit", "judge", "score"]


def test_from_csv_errors_name_the_problem(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("item,rater,value,dimension\ne1,A,4,SC\ne1,B,high,SC\n")
    with pytest.raises(MetricInputError, match=r"item_col='edit'.*columns \['item'"):
        RatingTable.from_csv(path, item_col="edit")
    with pytest.raises(MetricInputError, match=r"r.csv:3: column 'value' is not a number: 'high'"):
        RatingTable.from_csv(path, dimension_col="dimension")
    with pytest.raises(MetricInputError, match="does not exist"):
        RatingTable.from_csv(tmp_path / "nope.csv")
    path.write_text("item,rater,value,dimension\ne1,A,4,flavour\n")
    with pytest.raises(ValueError, match="flavour"):  # unknown dimension names are an error
        RatingTable.from_csv(path, dimension_col="dimension")


def test_as_rating_matrix_checks():
    assert as_rating_matrix([[1, np.nan]]).dtype == np.float64
    with pytest.raises(MetricInputError, match="2-D"):
        as_rating_matrix([1, 2, 3])
    with pytest.raises(MetricInputError, match="infinite"):
        as_rating_matrix([[1, np.inf]])
    with pytest.raises(MetricInputError, match="no items"):
        as_rating_matrix(np.zeros((0, 3)))
    with pytest.raises(MetricInputError, match="at least 2 rater"):
        as_rating_matrix([[1.0]], min_raters=2)
