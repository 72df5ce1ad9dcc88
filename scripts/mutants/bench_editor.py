"""Mutants of the editor benchmarks (``ieqa.bench.editor``): each breaks one number that
``bench-editor`` reports (the official or ieqa blocks, per-type / per-dimension numbers,
coverage, intervals, the mean and std over repeats) the way a plausible bug would."""

from mutants import Mutation

_E = "src/ieqa/bench/editor/"
_AGG = ("tests/bench/test_editor_aggregate.py",)
_GEDIT = ("tests/bench/test_editor_gedit.py",)
_IMGEDIT = ("tests/bench/test_editor_imgedit.py",)
_KRIS = ("tests/bench/test_editor_kris.py",)
_RISE = ("tests/bench/test_editor_rise.py",)
_EMU = ("tests/bench/test_editor_emu.py",)
_MB = ("tests/bench/test_editor_magicbrush.py",)
_RUN = ("tests/bench/test_editor_aggregate.py", "tests/bench/test_editor_gedit.py")

MUTATIONS: tuple[Mutation, ...] = (
    # ---- aggregate.py: the shared aggregations
    Mutation("editor-per-type-median", "a task type's score is the median of its items, not "
             "the mean", _E + "aggregate.py",
             "out[t] = float(np.mean(chosen)) if chosen else math.nan",
             "out[t] = float(np.median(chosen)) if chosen else math.nan",
             (*_AGG, *_GEDIT, *_IMGEDIT)),
    Mutation("editor-macro-nanmean", "GEdit's macro mean silently drops a task type without "
             "items (nanmean) instead of being NaN", _E + "aggregate.py",
             "return float(np.mean(list(per_type.values()))), per_type",
             "return float(np.nanmean(list(per_type.values()))), per_type",
             (*_AGG, *_GEDIT)),
    Mutation("editor-imgedit-weighted-rounding", "ImgEdit's item-weighted Overall rounded to 1 "
             "decimal, not 2", _E + "aggregate.py",
             "for t in type_scores) / n, 2)", "for t in type_scores) / n, 1)",
             (*_AGG, *_IMGEDIT)),
    Mutation("editor-bootstrap-tail", "stratified bootstrap tail 1 - ci: a 90 % interval "
             "labelled 95 %", _E + "aggregate.py",
             "    tail = (1 - ci) / 2\n    return float(np.quantile(means, tail)), "
             "float(np.quantile(means, 1 - tail))\n\n\ndef repeat_summary",
             "    tail = 1 - ci\n    return float(np.quantile(means, tail)), "
             "float(np.quantile(means, 1 - tail))\n\n\ndef repeat_summary",
             (*_AGG, *_GEDIT, *_IMGEDIT, *_RISE, *_EMU)),
    Mutation("editor-bootstrap-off-by-one", "stratified bootstrap never draws a type's last "
             "item (integers(0, n - 1))", _E + "aggregate.py",
             "draws = rng.integers(0, group.size, size=(n_boot, group.size))",
             "draws = rng.integers(0, max(group.size - 1, 1), size=(n_boot, group.size))",
             (*_AGG, *_GEDIT, *_IMGEDIT, *_RISE, *_EMU)),
    Mutation("editor-repeat-std-ddof0", "the std over repeats with ddof 0 (population) instead "
             "of the sample std", _E + "aggregate.py",
             '"std": float(np.std(v, ddof=1)) if len(v) > 1 else math.nan',
             '"std": float(np.std(v)) if len(v) > 1 else math.nan', _RUN),
    # ---- protocol.py: the CI as tables print it
    Mutation("editor-ci-text-digits", "the tables' CI printed with 2 decimals by default, not 3",
             _E + "protocol.py", "def ci_text(ci: Sequence[float] | None, digits: int = 3)",
             "def ci_text(ci: Sequence[float] | None, digits: int = 2)",
             (*_GEDIT, *_IMGEDIT)),
    Mutation("editor-ci-text-nan", "an undefined (NaN) interval printed as numbers instead "
             "of '–'", _E + "protocol.py",
             "if not ci or any(not math.isfinite(v) for v in ci):", "if not ci:",
             (*_GEDIT, *_IMGEDIT)),
    # ---- gedit.py
    Mutation("editor-gedit-no-intersection-filter", "GEdit's -I numbers over every item (the "
             "Intersection_exist filter dropped)", _E + "gedit.py",
             'inter = [r for r in rows if r["intersection"]]', "inter = list(rows)", _GEDIT),
    Mutation("editor-gedit-per-task-is-overall", "GEdit's per-task numbers are the mean of "
             "types", _E + "gedit.py",
             'table["per_task"].setdefault(t, {})[name] = per[t]',
             'table["per_task"].setdefault(t, {})[name] = g', _GEDIT),
    Mutation("editor-gedit-item-mean-official", "GEdit's ieqa item mean over the released "
             "readings instead of ieqa's", _E + "gedit.py",
             'out["item_mean"][name] = item_mean([r[f"ieqa_{key}"] for r in ok])',
             'out["item_mean"][name] = item_mean([r[key] for r in read])', _GEDIT),
    Mutation("editor-gedit-official-is-ieqa-reading", "GEdit's official numbers over the "
             "items ieqa's reading scored", _E + "gedit.py",
             'read = [r for r in entries if r["sc"] is not None]',
             'read = [r for r in entries if r["error"] is None and r["sc"] is not None]',
             _GEDIT),
    Mutation("editor-gedit-standin-o-arithmetic", "a stand-in's GEdit O is (SC + PQ) / 2, "
             "not sqrt(SC * PQ)", _E + "gedit.py",
             "o = viescore(sc, pq)", "o = (sc + pq) / 2 if sc >= 0 and pq >= 0 else math.nan",
             _GEDIT),
    Mutation("editor-gedit-ci-point", "GEdit's CI reported as (point, point)", _E + "gedit.py",
             "out[\"ci\"][name] = [low, high]",
             "out[\"ci\"][name] = [out[\"official\"][name]] * 2", _GEDIT),
    Mutation("editor-gedit-coverage-random-unread-swapped", "GEdit's coverage counts the "
             "randomised items as unread", _E + "gedit.py",
             'ids[r["official_status"]].add((r["task_type"], r["key"]))',
             'ids["unread" if r["official_status"] == "random" else r["official_status"]]'
             '.add((r["task_type"], r["key"]))', _GEDIT),
    # ---- imgedit.py
    Mutation("editor-imgedit-type-rounding", "ImgEdit's type scores rounded to 1 decimal, not 2",
             _E + "imgedit.py",
             "per_type = {t: round(v, 2) if math.isfinite(v) else math.nan",
             "per_type = {t: round(v, 1) if math.isfinite(v) else math.nan", _IMGEDIT),
    Mutation("editor-imgedit-counts-dropped-items", "ImgEdit's item-weighted Overall counts "
             "the items the released reading dropped", _E + "imgedit.py",
             'counts = {t: sum(1 for e in released if e["task_type"] == t) for t in EDIT_TYPES}',
             'counts = {t: sum(1 for e in entries if e["task_type"] == t) for t in EDIT_TYPES}',
             _IMGEDIT),
    Mutation("editor-imgedit-ieqa-nan-dropped", "ieqa's mean of ImgEdit types drops a type "
             "without items (NaN) but divides by 9", _E + "imgedit.py",
             '"overall_mean_of_types": (sum(mine.values()) / len(mine)),',
             '"overall_mean_of_types": (sum(v for v in mine.values() if math.isfinite(v))'
             ' / len(mine)),', _IMGEDIT),
    Mutation("editor-imgedit-ieqa-item-mean-released", "ieqa's ImgEdit item mean over the "
             "released scores (failed items in)", _E + "imgedit.py",
             '"item_mean": item_mean([e["score"] for e in ok])},',
             '"item_mean": item_mean([e["released_score"] for e in released])},', _IMGEDIT),
    Mutation("editor-imgedit-standin-unrounded", "a stand-in's released ImgEdit item score "
             "not rounded to 2 decimals", _E + "imgedit.py",
             "released = None if overall is None else round(overall, 2)",
             "released = overall", _IMGEDIT),
    # ---- kris.py
    Mutation("editor-kris-scale", "KRIS maps a 1-5 score by 25 * s, not 25 * (s - 1)",
             _E + "kris.py", "return 100.0 * (float(value) - lo) / (hi - lo)",
             "return 100.0 * float(value) / (hi - lo)", _KRIS),
    Mutation("editor-kris-group-avg-of-judgements", "KRIS group AVG the mean of its judgement "
             "means, not the flat pool", _E + "kris.py",
             'groups[group]["AVG"] = _mean(flat[group])',
             'groups[group]["AVG"] = _mean([v for v in groups[group].values() '
             'if v == v])', _KRIS),
    Mutation("editor-kris-category-avg-of-judgements", "KRIS category AVG the mean of its "
             "judgement means, not the flat pool", _E + "kris.py",
             '"AVG": _mean([x for v in d.values() for x in v])} for c, d in by_cat.items()}',
             '"AVG": _mean([_mean(v) for v in d.values() if v])} for c, d in by_cat.items()}',
             _KRIS),
    Mutation("editor-kris-unread-all-judgements", "KRIS 'unread' counts KP of non-knowledge "
             "items too", _E + "kris.py",
             'official["unread"] = sum(1 for e in entries for j in _required(e["task_type"])',
             'official["unread"] = sum(1 for e in entries for j in JUDGEMENTS', _KRIS),
    Mutation("editor-kris-ci-unstratified", "KRIS's ieqa CI resamples all items together, "
             "not within categories", _E + "kris.py",
             'sums, counts, [e["task_type"] for e in ok], n_boot=n_boot))',
             'sums, counts, ["all"] * len(ok), n_boot=n_boot))', _KRIS),
    Mutation("editor-kris-ci-counts-required", "KRIS's CI divides by the required judgements, "
             "a missing one counted", _E + "kris.py",
             "counts.append(len(present))",
             'counts.append(len(_required(e["task_type"])))', _KRIS),
    Mutation("editor-kris-flat-bootstrap-tail", "KRIS's flat bootstrap tail 1 - ci: a 90 % "
             "interval labelled 95 %", _E + "kris.py",
             "    tail = (1 - ci) / 2\n", "    tail = 1 - ci\n", _KRIS),
    # ---- rise.py
    Mutation("editor-rise-dimension-constant", "RISE dimensions 25 * mean, not 25 * (mean - 1)",
             _E + "rise.py", "return 25 * (sum(v) / len(v) - 1) if v else math.nan",
             "return 25 * (sum(v) / len(v)) if v else math.nan", _RISE),
    Mutation("editor-rise-threshold", "RISE counts consistency 4 as solved (>= 4, not == 5)",
             _E + "rise.py", "    return cons == 5 and rea == 5 and qua == 5",
             "    return cons >= 4 and rea == 5 and qua == 5", _RISE),
    Mutation("editor-rise-ieqa-category-failed-in", "RISE's ieqa per-category share counts "
             "failed items as unsolved", _E + "rise.py",
             'ok = [e for e in mine_c if e["error"] is None]', "ok = mine_c", _RISE),
    Mutation("editor-rise-overall-mean-of-categories", "RISE's Overall the mean of the "
             "categories, not pooled", _E + "rise.py",
             'official["overall"] = _pct([released_solved(e, "2026-04") for e in entries])',
             'official["overall"] = sum(official["per_category"].values()) / len(CATEGORIES)',
             _RISE),
    Mutation("editor-rise-unreadable-with-stops", "RISE's 'unreadable' also counts the "
             "answers that stop the script", _E + "rise.py",
             'official["unreadable"] = sum(1 for e in entries if e["released"] == "failed")',
             'official["unreadable"] = sum(1 for e in entries if isinstance(e["released"], str))',
             _RISE),
    Mutation("editor-rise-dimension-none-as-one", "RISE dimensions count a missing judgement "
             "(None) as the lowest score", _E + "rise.py",
             "v = [x for x in values if x is not None]\n    return 25",
             "v = [1.0 if x is None else x for x in values]\n    return 25", _RISE),
    # ---- emu.py
    Mutation("editor-emu-none-as-zero", "Emu Edit averages a missing metric as 0",
             _E + "emu.py", "v = [x for x in values if x is not None]",
             "v = [0.0 if x is None else x for x in values]", _EMU),
    Mutation("editor-emu-failed-averaged", "Emu Edit averages the failed items' metrics",
             _E + "emu.py", 'ok = [e for e in entries if e["error"] is None]',
             "ok = list(entries)", _EMU),
    Mutation("editor-emu-ci-column", "Emu Edit's CLIP-dir CI computed from CLIP-I",
             _E + "emu.py",
             'dirs = [e["clip_dir"] for e in ok if e["clip_dir"] is not None]',
             'dirs = [e["clip_i"] for e in ok if e["clip_i"] is not None]', _EMU),
    # ---- magicbrush.py
    Mutation("editor-mb-final-turn-iterative-only", "MagicBrush's final turn leaves out the "
             "one-turn sessions", _E + "magicbrush.py",
             '"final_turn": [e for e in ok if e["final"]]}',
             '"final_turn": [e for e in ok if e["final"] and e["setting"] != "single"]}', _MB),
    Mutation("editor-mb-items-count", "MagicBrush's per-setting item count is every scored "
             "item", _E + "magicbrush.py", 'out[part]["items"] = len(rows)',
             'out[part]["items"] = len(ok)', _MB),
    Mutation("editor-mb-per-turn-failed-in", "MagicBrush's per-turn means include failed "
             "items' metrics", _E + "magicbrush.py",
             't: {k: _mean([e[k] for e in ok if e["task_type"] == t]) for k in COLUMNS}',
             't: {k: _mean([e[k] for e in entries if e["task_type"] == t]) for k in COLUMNS}',
             _MB),
    # ---- report.py
    Mutation("editor-report-std-shows-mean", "the report's std-over-repeats table shows the "
             "means", _E + "report.py",
             'for k, v in r[part]["std"].items()}}',
             'for k, v in r[part].items() if k in r[part]["std"]}}', _GEDIT),
    Mutation("editor-report-coverage-column", "the table's coverage column out of the items "
             "with an output, not all items", _E + "report.py",
             '"coverage": r["coverage"]["text"]}',
             '"coverage": f"{r[\'coverage\'][\'scored\']} of {r[\'coverage\'][\'with_output\']}'
             ' items"}', (*_GEDIT, *_IMGEDIT)),
    # ---- run.py
    Mutation("editor-run-coverage-all-languages", "coverage counts the outputs of every "
             "language as each language's", _E + "run.py",
             "n_present = sum(1 for i in present[editor] if i.language == lang)",
             "n_present = len(present[editor])", _RUN),
    Mutation("editor-run-failed-per-repeat", "an item failing in two repeats is counted as "
             "two failures", _E + "run.py", "failed_ids[item.language].add(item.id)",
             "failed_ids[item.language].add((item.id, r))", _RUN),
    Mutation("editor-run-repeat-first", "with repeats, the numbers are the first repeat's, "
             "not the mean", _E + "run.py",
             'return repeat_summary(values)["mean"]', "return first", _RUN),
    # ---- the judge log and judge-diff
    Mutation("judge-log-resume-serves-failures", "a re-run serves the failures recorded in "
             "the judge log instead of asking again", "src/ieqa/backends/judge_log.py",
             'if mode == "resume" and entry.get("response") is None:',
             'if mode == "resume" and entry.get("response") is None and False:', _GEDIT),
    Mutation("judge-log-context-ignored", "the judge log serves an answer recorded for "
             "another editor or repeat", "src/ieqa/backends/judge_log.py",
             "queue = self._queues.get((_context_key(self.context), key))",
             "queue = next((q for (c, k), q in self._queues.items() if k == key and q), None)",
             _GEDIT),
    Mutation("judge-diff-unpaired", "judge-diff draws other items for run B than for run A "
             "(an unpaired interval)", _E + "diff.py",
             "xb = _aggregate(protocol, [first_b[keys[i]] for i in pick])[part]",
             "xb = _aggregate(protocol, [first_b[keys[i]] for i in reversed(pick)][::-1]"
             "[:len(pick) // 2] * 2)[part]", _GEDIT),
    Mutation("judge-diff-noise-one-sd", "judge-diff's noise bar is one standard deviation, "
             "not two", _E + "diff.py", "noise = 2 * max(std_a, std_b)",
             "noise = max(std_a, std_b)", _GEDIT),
    # ---- UniREditBench
    Mutation("uniredit-weights-swapped", "UniREditBench item score with the consistency and "
             "reasoning weights swapped", "src/ieqa/bench/editor/uniredit.py",
             "return 0.3 * cons + 0.5 * rea + 0.2 * qua,", "return 0.5 * cons + 0.3 * rea + 0.2 * qua,",
             ("tests/bench/test_editor_uniredit.py::"
              "test_unireditbench_requests_and_the_released_numbers",)),
    Mutation("uniredit-last-number", "UniREditBench's released reading keeps the last number "
             "of an answer instead of the first", "src/ieqa/scorers/published/uniredit_judge.py",
             "return parts[0][0], parts[1][0], parts[2][0]",
             "return parts[0][-1], parts[1][-1], parts[2][-1]",
             ("tests/bench/test_editor_uniredit.py::"
              "test_unireditbench_requests_and_the_released_numbers",)),
    Mutation("uniredit-no-rules", "UniREditBench's judge leaves out a game-world item's rules",
             "src/ieqa/scorers/published/uniredit_judge.py",
             "if meta.get(\"rules\"):", "if False:",
             ("tests/bench/test_editor_uniredit.py::"
              "test_unireditbench_requests_and_the_released_numbers",)),
    # ---- StructEditBench
    Mutation("structscore-missing-not-counted", "StructScore's released tally leaves out an "
             "unjudged question instead of counting it as a wrong editing one",
             "src/ieqa/scorers/published/structscore.py",
             "        else:\n            asked[\"editing\"] += 1", "        else:\n            pass",
             ("tests/bench/test_editor_structedit.py::"
              "test_structscore_requests_and_the_released_report",)),
    Mutation("structscore-no-crop", "StructScore sends the edited image uncropped",
             "src/ieqa/scorers/published/structscore.py",
             "images.append(EncodedImage.png(center_crop(item.edited.convert(\"RGB\"), "
             "self.table)))",
             "images.append(EncodedImage.png(item.edited.convert(\"RGB\")))",
             ("tests/bench/test_editor_structedit.py::"
              "test_structscore_requests_and_the_released_report",)),
    Mutation("structscore-failed-request-tallied", "StructScore gives an item with a failed "
             "request the released tally of a skipped question",
             "src/ieqa/scorers/published/structscore.py",
             "released = None if failed else released_item_accuracy(results, labels)",
             "released = released_item_accuracy(results, labels)",
             ("tests/bench/test_editor_structedit.py::"
              "test_an_item_with_a_failed_request_is_left_out_of_the_official_numbers",)),
    Mutation("structscore-maintain-weight", "StructScore weighs maintain 0.9 and editing 0.1",
             "src/ieqa/scorers/published/structscore.py",
             "return e, m, (e if maintain[1] <= 0 else 0.1 * m + 0.9 * e)",
             "return e, m, (e if maintain[1] <= 0 else 0.9 * m + 0.1 * e)",
             ("tests/bench/test_editor_structedit.py::"
              "test_structscore_requests_and_the_released_report",)),
)
