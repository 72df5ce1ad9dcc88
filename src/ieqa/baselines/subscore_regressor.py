"""EPAIQA's "best competitor regressor": a random forest from two sub-scores to overall.

EPAIQA (001) compares its overall score with a regressor fitted on the sub-scores other
methods produce: a scikit-learn :class:`~sklearn.ensemble.RandomForestRegressor` mapping
e.g. (harmony, local naturalness) to the overall rating, fitted on a training split and
evaluated on the test split. This module is that baseline for any scorer:

* the **features** (sub-scores) come from any score file of ``ieqa score`` or predictions
  file (:mod:`ieqa.bench.predictions`), or from a manifest's ``scores`` (the truth);
* the **target** comes from a manifest's ``scores`` (``truth=``; default: the same file);
* the **split**: a separate test file, or a seeded split by group (``group_id`` of the
  truth manifest; all candidates of one source and instruction stay on one side, so the
  test split holds unseen groups), by id when no groups are known;
* the **metrics**: SRCC, KRCC, PLCC (raw, no logistic fit) and RMSE of
  :mod:`ieqa.metrics` on the test split, next to the same metrics of each feature alone.

A fitted model is saved with skops (``.skops``; a safe, non-pickle format that
:meth:`SubscoreRegressor.load` reads with only the random forest's own types trusted)
and its settings (features, target, ieqa and scikit-learn versions) inside the same file.
Needs the ``baselines`` extra: ``pip install 'ieqa[baselines]'``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ieqa.data.dimensions import canonical_dimension
from ieqa.errors import IeqaError

__all__ = ["BaselineError", "SubscoreRegressor", "SubscoreTable", "evaluate_predictions",
           "load_subscore_table", "run_subscore_baseline", "split_by_group"]

_FORMAT = "ieqa-subscore-rf"
# the types a saved model may hold; anything else in a .skops file is refused on load
_TRUSTED = ("sklearn.ensemble._forest.RandomForestRegressor",
            "sklearn.tree._classes.DecisionTreeRegressor", "sklearn.tree._tree.Tree",
            "numpy.random.mtrand.RandomState", "numpy.random._mt19937.MT19937",
            "builtins.int", "builtins.float", "builtins.str", "builtins.list", "builtins.dict",
            "builtins.tuple", "builtins.NoneType", "builtins.bool", "numpy.ndarray",
            "numpy.dtype", "numpy.float64", "numpy.int64", "numpy.intp")


class BaselineError(IeqaError, ValueError):
    """A baseline cannot be fitted, evaluated, saved or loaded from the given inputs."""


def _sklearn() -> Any:
    try:
        import sklearn.ensemble
    except ImportError as exc:
        raise BaselineError("the random-forest baseline needs scikit-learn and skops: "
                            "pip install 'ieqa[baselines]'") from exc
    return sklearn.ensemble


@dataclass
class SubscoreTable:
    """Aligned rows: ``ids``, ``x`` (one column per feature), ``y`` (the target) and the
    ``groups`` (group id, or the edit id when it has none)."""

    ids: list[str]
    x: np.ndarray
    y: np.ndarray
    groups: list[str]
    features: tuple[str, ...]
    target: str
    dropped: dict[str, str] = field(default_factory=dict)

    def subset(self, keep: Sequence[int]) -> SubscoreTable:
        """The rows at positions ``keep``."""
        idx = list(keep)
        return SubscoreTable([self.ids[i] for i in idx], self.x[idx], self.y[idx],
                             [self.groups[i] for i in idx], self.features, self.target)


def _read_scores(path: Path, scorer: str | None = None
                 ) -> tuple[dict[str, dict[str, float]], dict[str, str], dict[str, str],
                            dict[str, dict[str, Any]]]:
    """``(scores by id, group by id, failed by id, inputs by id)`` of a manifest or
    predictions file (``scorer``: the rows of that scorer only)."""
    from ieqa.bench.predictions import is_predictions_file, read_predictions

    if not path.is_file():
        raise BaselineError(f"{path}: no such file; give a manifest or a score file of `ieqa score`")
    if is_predictions_file(path):
        preds = read_predictions(path, scorer=scorer)
        return {k: dict(v) for k, v in preds.items()}, {}, dict(preds.failed), preds.inputs
    if scorer is not None:
        raise BaselineError(f"{path} is a manifest, which holds one set of scores: "
                            "--from-scorer chooses among the scorers of a score file; drop it")
    from ieqa.data.manifest import iter_manifest
    from ieqa.data.scorefile import join_fields

    scores: dict[str, dict[str, float]] = {}
    groups: dict[str, str] = {}
    inputs: dict[str, dict[str, Any]] = {}
    for sample in iter_manifest(path):
        scores[sample.id] = dict(sample.scores)
        inputs[sample.id] = join_fields(sample)
        if sample.group_id:
            groups[sample.id] = sample.group_id
    return scores, groups, {}, inputs


def load_subscore_table(data: str | os.PathLike[str], features: Sequence[str],
                        target: str = "overall", *,
                        truth: str | os.PathLike[str] | None = None,
                        scorer: str | None = None, max_mismatch: float = 0.0) -> SubscoreTable:
    """The feature/target table of the edits both files score.

    Args:
        data: where the features come from: a score/predictions file or a manifest.
        features: the sub-score dimensions (aliases accepted), e.g. ``harmony,
            local_naturalness``.
        target: the dimension to predict (from ``truth``).
        truth: the manifest holding the target (default: ``data``); its ``group_id``
            drives the split. Joined with ``data`` by id after checking that the ids name
            the same edits (:func:`ieqa.data.scorefile.check_join`).
        scorer: read only this scorer's rows of a ``data`` score file that holds several.
        max_mismatch: the share of joined edits whose inputs may differ (default 0).

    Raises:
        BaselineError: a file is missing, or no edit has every feature and the target.
    """
    feats = tuple(canonical_dimension(f) for f in features)
    tgt = canonical_dimension(target)
    if not feats:
        raise BaselineError("give at least one feature dimension, e.g. --features "
                            "harmony,local_naturalness")
    if tgt in feats:
        raise BaselineError(f"the target {tgt!r} is also a feature; predict it from other dimensions")
    x_scores, x_groups, dropped, x_inputs = _read_scores(Path(data), scorer)
    if truth is None:
        y_scores, y_groups = x_scores, x_groups
    else:
        y_scores, y_groups, failed, y_inputs = _read_scores(Path(truth))
        dropped.update({k: f"truth: {v}" for k, v in failed.items()})
        from ieqa.data.scorefile import check_join

        check_join(x_inputs, y_inputs, sides=(str(data), str(truth)), max_mismatch=max_mismatch,
                   error=BaselineError)
    groups = {**x_groups, **y_groups}
    ids, rows, ys = [], [], []
    for ident, scores in x_scores.items():
        lacking = [f for f in feats if f not in scores]
        if ident not in y_scores or tgt not in y_scores[ident]:
            lacking.append(f"{tgt} (target)")
        if lacking:
            dropped[ident] = f"no {', '.join(lacking)}"
            continue
        ids.append(ident)
        rows.append([scores[f] for f in feats])
        ys.append(y_scores[ident][tgt])
    if not ids:
        have = sorted({d for s in x_scores.values() for d in s})
        raise BaselineError(f"no edit of {data} has every feature ({', '.join(feats)}) and the "
                            f"target {tgt!r}{' in ' + str(truth) if truth else ''}; {data} "
                            f"scores {', '.join(have) or 'nothing'}")
    return SubscoreTable(ids, np.asarray(rows, dtype=float), np.asarray(ys, dtype=float),
                         [groups.get(i, i) for i in ids], feats, tgt, dropped)


def split_by_group(table: SubscoreTable, test_fraction: float = 0.2,
                   seed: int = 0) -> tuple[SubscoreTable, SubscoreTable]:
    """A seeded train/test split of ``table`` by group (whole groups on one side)."""
    if not 0.0 < test_fraction < 1.0:
        raise BaselineError(f"test fraction must be between 0 and 1, got {test_fraction}")
    names = sorted(set(table.groups))
    if len(names) < 2:
        raise BaselineError("a split needs at least two groups (or edits); give --test FILE")
    order = np.random.default_rng(seed).permutation(len(names))
    n_test = min(len(names) - 1, max(1, round(test_fraction * len(names))))
    test_groups = {names[i] for i in order[:n_test]}
    test = [i for i, g in enumerate(table.groups) if g in test_groups]
    train = [i for i, g in enumerate(table.groups) if g not in test_groups]
    return table.subset(train), table.subset(test)


def evaluate_predictions(pred: Sequence[float] | np.ndarray,
                         target: Sequence[float] | np.ndarray) -> dict[str, float]:
    """SRCC, KRCC, PLCC (raw) and RMSE of ``pred`` against ``target`` (:mod:`ieqa.metrics`);
    a correlation of a constant prediction is NaN."""
    from ieqa.metrics import MetricInputError, krcc, plcc, rmse, srcc

    out: dict[str, float] = {"n": float(len(target))}
    for name, fn in (("srcc", srcc), ("krcc", krcc), ("plcc", plcc)):
        try:
            out[name] = float(fn(pred, target))
        except MetricInputError:
            out[name] = float("nan")
    out["rmse"] = float(rmse(pred, target))
    return out


class SubscoreRegressor:
    """A random forest from sub-scores (``features``) to ``target``.

    Args:
        features: the sub-score dimensions, in the column order of ``fit``/``predict``.
        target: the predicted dimension.
        n_estimators, max_depth, min_samples_leaf, seed: the forest's settings
            (scikit-learn's ``RandomForestRegressor``; ``seed`` is its ``random_state``).
    """

    def __init__(self, features: Sequence[str], target: str = "overall", *,
                 n_estimators: int = 200, max_depth: int | None = None,
                 min_samples_leaf: int = 1, seed: int = 0) -> None:
        self.features = tuple(canonical_dimension(f) for f in features)
        self.target = canonical_dimension(target)
        self.params: dict[str, Any] = {"n_estimators": int(n_estimators), "max_depth": max_depth,
                                       "min_samples_leaf": int(min_samples_leaf),
                                       "random_state": int(seed)}
        self.model: Any = None

    @property
    def fitted(self) -> bool:
        """True once :meth:`fit` ran (or the model was loaded)."""
        return self.model is not None

    def fit(self, x: np.ndarray | SubscoreTable, y: np.ndarray | None = None) -> SubscoreRegressor:
        """Fit on ``x`` (rows x features) and ``y``, or on a :class:`SubscoreTable`."""
        if isinstance(x, SubscoreTable):
            self._check_table(x)
            x, y = x.x, x.y
        if y is None:
            raise BaselineError("fit needs the targets y (or a SubscoreTable)")
        x = self._check_x(x)
        if len(y) != len(x) or len(x) < 2:
            raise BaselineError(f"fit needs at least 2 rows and one target per row, got {len(x)} "
                                f"rows and {len(y)} targets")
        self.model = _sklearn().RandomForestRegressor(**self.params).fit(x, np.asarray(y, float))
        return self

    def predict(self, x: np.ndarray | SubscoreTable) -> np.ndarray:
        """Predicted targets of ``x`` (rows x features) or of a :class:`SubscoreTable`."""
        if not self.fitted:
            raise BaselineError("the regressor is not fitted; call fit() or load a saved model")
        if isinstance(x, SubscoreTable):
            self._check_table(x)
            x = x.x
        return np.asarray(self.model.predict(self._check_x(x)), dtype=float)

    def evaluate(self, table: SubscoreTable) -> dict[str, float]:
        """:func:`evaluate_predictions` of this model on ``table``."""
        return evaluate_predictions(self.predict(table), table.y)

    def _check_x(self, x: Any) -> np.ndarray:
        arr = np.asarray(x, dtype=float)
        if arr.ndim != 2 or arr.shape[1] != len(self.features):
            raise BaselineError(f"expected rows of {len(self.features)} features "
                                f"({', '.join(self.features)}), got shape {arr.shape}")
        if not np.isfinite(arr).all():
            raise BaselineError("the features hold NaN or infinite values; drop those rows")
        return arr

    def _check_table(self, table: SubscoreTable) -> None:
        if table.features != self.features or table.target != self.target:
            raise BaselineError(f"the table has features {table.features} -> {table.target}; this "
                                f"model maps {self.features} -> {self.target}")

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the fitted model and its settings to ``path`` (skops format, ``.skops``)."""
        import sklearn
        import skops.io as sio

        import ieqa

        if not self.fitted:
            raise BaselineError("fit the regressor before saving it")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        sio.dump({"format": _FORMAT, "features": list(self.features), "target": self.target,
                  "params": {k: v for k, v in self.params.items() if v is not None},
                  "ieqa_version": ieqa.__version__, "sklearn_version": sklearn.__version__,
                  "model": self.model}, str(path))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SubscoreRegressor:
        """Read a model written by :meth:`save`; a file holding any type other than the
        forest's own (and plain data) is refused, never executed."""
        _sklearn()
        import skops.io as sio

        path = Path(path)
        if not path.is_file():
            raise BaselineError(f"{path}: no such model file; fit one with `ieqa baseline "
                                "subscore-rf DATA -o MODEL.skops`")
        try:
            untrusted = [t for t in sio.get_untrusted_types(file=str(path)) if t not in _TRUSTED]
            if untrusted:
                raise BaselineError(f"{path} holds types a subscore-rf model never holds "
                                    f"({', '.join(untrusted)}); refusing to load it")
            record = sio.load(str(path), trusted=list(_TRUSTED))
        except BaselineError:
            raise
        except Exception as exc:  # noqa: BLE001 - any decoding failure: say what the file is not
            raise BaselineError(f"{path} is not a subscore-rf model saved by ieqa: {exc}") from exc
        forest = _sklearn().RandomForestRegressor
        if (not isinstance(record, Mapping) or record.get("format") != _FORMAT
                or not isinstance(record.get("model"), forest)
                or not isinstance(record.get("features"), list)
                or not isinstance(record.get("target"), str)):
            raise BaselineError(f"{path} is not a subscore-rf model saved by ieqa (format "
                                f"{_FORMAT!r}: features, target and a RandomForestRegressor "
                                "expected)")
        params = dict(record.get("params", {}))
        out = cls(record["features"], record["target"],
                  n_estimators=params.get("n_estimators", 200),
                  max_depth=params.get("max_depth"),
                  min_samples_leaf=params.get("min_samples_leaf", 1),
                  seed=params.get("random_state", 0))
        out.model = record["model"]
        return out


def run_subscore_baseline(data: str | os.PathLike[str], features: Sequence[str],
                          target: str = "overall", *, truth: str | os.PathLike[str] | None = None,
                          test: str | os.PathLike[str] | None = None,
                          test_truth: str | os.PathLike[str] | None = None,
                          test_fraction: float = 0.2, seed: int = 0,
                          model: SubscoreRegressor | None = None,
                          scorer: str | None = None, max_mismatch: float = 0.0,
                          **forest: Any) -> dict[str, Any]:
    """Fit (unless ``model`` is given) and evaluate the baseline.

    Args:
        data, features, target, truth, scorer, max_mismatch: as
            :func:`load_subscore_table` (``scorer`` and ``max_mismatch`` apply to ``test``
            too).
        test: a separate test file (its features; target from ``test_truth``, default
            ``test``); without it a seeded split of ``data`` by group (``test_fraction``).
        model: a fitted regressor to evaluate on all of ``data`` (or ``test``) instead.
        forest: settings of :class:`SubscoreRegressor` (``n_estimators`` ...).

    Returns:
        ``{"model", "train", "test", "metrics", "features_alone", "n_train", "n_test",
        "dropped", "predictions"}``: the metrics of the model on the test split and of each
        feature alone (its raw score as the prediction), and the test predictions by id.
    """
    if model is not None:
        features, target = model.features, model.target
    join = {"scorer": scorer, "max_mismatch": max_mismatch}
    table = load_subscore_table(data, features, target, truth=truth, **join)
    if model is not None:
        train_t, test_t = None, (table if test is None else
                                 load_subscore_table(test, features, target, truth=test_truth,
                                                     **join))
    elif test is not None:
        train_t, test_t = table, load_subscore_table(test, features, target, truth=test_truth,
                                                     **join)
    else:
        train_t, test_t = split_by_group(table, test_fraction, seed)
    if model is None:
        assert train_t is not None
        model = SubscoreRegressor(features, target, seed=seed, **forest).fit(train_t)
    pred = model.predict(test_t)
    alone = {f: evaluate_predictions(test_t.x[:, j], test_t.y) for j, f in enumerate(model.features)}
    return {"model": model, "train": train_t, "test": test_t,
            "metrics": evaluate_predictions(pred, test_t.y), "features_alone": alone,
            "n_train": 0 if train_t is None else len(train_t.ids), "n_test": len(test_t.ids),
            "dropped": dict(table.dropped), "predictions": dict(zip(test_t.ids, pred.tolist(), strict=True))}
