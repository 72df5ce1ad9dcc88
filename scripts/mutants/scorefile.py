"""Mutants of the one score-file reader (ieqa.data.scorefile): each changes a score that
is read, a row that is accepted or refused, or a count or row number that is reported."""

from mutants import Mutation

_SF = "src/ieqa/data/scorefile.py"
_TESTS = ("tests/test_scorefile.py",)

MUTATIONS: tuple[Mutation, ...] = (
    Mutation("scorefile-inf-accepted", "an infinite score (+inf or -inf) read as a prediction",
             _SF, "if not math.isfinite(v))", "if math.isnan(v))", _TESTS),
    Mutation("scorefile-neg-inf-accepted", "a score of -inf read as a prediction (NaN and "
             "+inf still refused)", _SF, "if not math.isfinite(v))",
             "if math.isnan(v) or v == math.inf)", _TESTS),
    Mutation("scorefile-failed-keeps-scores", "a failed row (NaN score) keeps its other "
             "scores", _SF, "            scores = {}\n            self.n_failed += 1",
             "            self.n_failed += 1", _TESTS),
    Mutation("scorefile-failed-dropped", "failed rows dropped from the rows read, uncounted",
             _SF, "        if row is not None:\n            yield row",
             "        if row is not None and row.failed is None:\n            yield row", _TESTS),
    Mutation("scorefile-no-score-zero", "an empty score (null, an empty CSV cell) read as 0",
             _SF, "            if value is not None:\n                scores[dim] = _number(",
             "            if True:\n                scores[dim] = 0.0 if value is None else _number(",
             _TESTS),
    Mutation("scorefile-unknown-sigma-zero", "a row without sigma read as sigma 0 for each "
             "score", _SF, "        inputs = {c: raw.get(c) for c in INPUT_COLUMNS}",
             '        if columns.get("sigma") is None:\n'
             '            columns["sigma"] = dict.fromkeys(scores, 0.0)\n'
             "        inputs = {c: raw.get(c) for c in INPUT_COLUMNS}", _TESTS),
    Mutation("scorefile-sigma-text", "sigma stored as JSON text (CSV, Parquet) not decoded: "
             "the sigma is lost", _SF, "    if key in JSON_COLUMNS and isinstance(value, str):",
             "    if key in JSON_COLUMNS[1:] and isinstance(value, str):", _TESTS),
    Mutation("scorefile-duplicate-unchecked", "a duplicate id accepted (the first id is not "
             "remembered)", _SF, "            self._seen[ident] = where\n",
             "", _TESTS),
    Mutation("scorefile-csv-row-off-by-one", "CSV rows numbered from 1 (the header is row 1, "
             "the first data row 2)", _SF, "for rowno, row in enumerate(reader, 2):",
             "for rowno, row in enumerate(reader, 1):", _TESTS),
    Mutation("scorefile-jsonl-lines-skip-blank", "JSONL line numbers that skip blank lines",
             "src/ieqa/data/textfile.py",
             "    for lineno, line in text_lines(path, error=error):\n        if not line.strip():\n"
             "            continue\n",
             "    lineno = 0\n    for _, line in text_lines(path, error=error):\n"
             "        if not line.strip():\n            continue\n        lineno += 1\n", _TESTS),
    Mutation("scorefile-error-ignored", "a row with an error but scores read as a prediction",
             _SF, '        if raw.get("error"):\n            failed',
             '        if raw.get("error") and not scores:\n            failed', _TESTS),
)
