"""Mutants of curation (ieqa.curate: every module), the studio's admin numbers and rater
flags (ieqa.studio.analysis) and the small-panel rater screen (ieqa.human.screening).

Each one is a single realistic slip an outside auditor would plant: an off-by-one at a
top-k cut, ``<`` for ``<=`` at a threshold, a mean for a median, a swapped pair, a count
over the wrong rows, the wrong ICC form, a consensus that includes the rater judged.
Every one changes a number that is reported or a rater/item that is flagged or kept."""

from mutants import Mutation

_CURATE = ("tests/curate/test_curate.py",)
_DPO = ("tests/curate/test_groups_dpo.py",)
_STUDIO = ("tests/studio/test_screening.py", "tests/studio/test_analysis.py")
_HUMAN = ("tests/human/test_screening.py", "tests/studio/test_screening.py")

MUTATIONS: tuple[Mutation, ...] = (
    # ---- ieqa.curate.select: the kept set
    Mutation("curate-topk-tie-extra", "top-k keeps one row too many when the cut falls in a tie",
             "src/ieqa/curate/select.py", "keep_mask[by_id[:m]] = True",
             "keep_mask[by_id[:m + 1]] = True", _CURATE),
    Mutation("curate-quota-ignored-with-topk", "--quota ignored when --keep is top-k (min(k, quota) dropped)",
             "src/ieqa/curate/select.py",
             "limit = quota if limit is None else min(limit, quota)",
             "limit = quota if limit is None else limit", _CURATE),
    Mutation("curate-max-sigma-boundary", "--max-sigma drops a row whose sigma equals it (>= for >)",
             "src/ieqa/curate/select.py", "row.reward.sigma > max_sigma)",
             "row.reward.sigma >= max_sigma)", _CURATE),
    Mutation("curate-unknown-sigma-kept", "--max-sigma keeps rows whose sigma is unknown",
             "src/ieqa/curate/select.py",
             "(row.reward.sigma is None or row.reward.sigma > max_sigma)",
             "(row.reward.sigma is not None and row.reward.sigma > max_sigma)", _CURATE),
    Mutation("curate-threshold-strict", "threshold=X keeps rewards > X instead of >= X",
             "src/ieqa/curate/select.py", "chosen = idx[reward[idx] >= keep.value]",
             "chosen = idx[reward[idx] > keep.value]", _CURATE),
    Mutation("curate-quantile-global", "quantile=Q with --per: the quantile of every eligible row, "
             "not the partition's", "src/ieqa/curate/select.py",
             "thr = float(np.quantile(reward[idx], keep.value)) if idx.size else None",
             "thr = float(np.quantile(reward[eligible], keep.value)) if idx.size else None", _CURATE),
    # ---- ieqa.curate.columns: pass 1's numbers
    Mutation("curate-columns-dim-unpadded", "a dimension first seen at row n is not padded: its "
             "scores shift onto earlier rows", "src/ieqa/curate/columns.py",
             'col = self.dims[d] = array("f", [math.nan]) * n', 'col = self.dims[d] = array("f")',
             _CURATE),
    Mutation("curate-columns-unknown-sigma-first", "unknown sigma stored as 0: it sorts before every "
             "known sigma", "src/ieqa/curate/columns.py",
             "self.sigma.append(math.inf if rw.sigma is None else rw.sigma)",
             "self.sigma.append(0.0 if rw.sigma is None else rw.sigma)", _CURATE),
    # ---- ieqa.curate.report
    Mutation("curate-report-not-selected", "report counts not_selected over every row, errors included",
             "src/ieqa/curate/report.py", '"not_selected": int((eligible & ~kept).sum())',
             '"not_selected": int((~kept).sum())', _CURATE),
    Mutation("curate-report-std-ddof1", "score distributions' std with ddof=1 (documented: numpy's ddof=0)",
             "src/ieqa/curate/report.py", '("std", np.std)',
             '("std", lambda x: np.std(x, ddof=1))', _CURATE + _DPO),
    # ---- ieqa.curate.source
    Mutation("curate-source-batch-offset", "a selected Parquet row of a later batch gets its position "
             "within the batch", "src/ieqa/curate/source.py",
             "positions = (start + hits).tolist()", "positions = hits.tolist()", _CURATE),
    # ---- ieqa.curate.groups: best-of-n and the groups of dpo-pairs
    Mutation("curate-groups-flagged-eligible", "drop_flagged ignored by best-of-n / dpo-pairs",
             "src/ieqa/curate/groups.py",
             "g.add(row, row.ok and not (drop_flagged and row.result.flags))",
             "g.add(row, row.ok)", _DPO),
    Mutation("curate-bestofn-candidates-ok", "best-of-n meta.candidates counts only the scored "
             "candidates, not the group's size", "src/ieqa/curate/groups.py",
             '"candidates": g.n}', '"candidates": g.n_ok}', _DPO),
    Mutation("curate-groups-empty-key", "a row with an empty group field is grouped (only null left out)",
             "src/ieqa/curate/groups.py", 'if any(v is None or v == "" for v in key):',
             "if any(v is None for v in key):", _DPO),
    # ---- ieqa.curate.dpo
    Mutation("curate-dpo-swapped", "DPO pair with chosen and rejected swapped",
             "src/ieqa/curate/dpo.py", "DpoPair(g.key, g.task, g.best, g.worst, margin, p)",
             "DpoPair(g.key, g.task, g.worst, g.best, margin, p)", _DPO),
    Mutation("curate-dpo-rank-by-margin", "pairs ranked per task by margin instead of the chosen "
             "edit's score before the top-half cut", "src/ieqa/curate/dpo.py",
             "items.sort(key=lambda pr: pr.chosen.key)", "items.sort(key=lambda pr: -pr.margin)", _DPO),
    Mutation("curate-dpo-keep-floor", "top half per task rounded down (floor) instead of up",
             "src/ieqa/curate/dpo.py", "k = math.ceil(keep_fraction * len(items))",
             "k = int(keep_fraction * len(items))", _DPO),
    Mutation("curate-dpo-threshold-boundary", "a group whose best reward equals --threshold dropped as low",
             "src/ieqa/curate/dpo.py", "g.best.reward < threshold:", "g.best.reward <= threshold:", _DPO),
    Mutation("curate-dpo-margin-boundary", "a pair whose margin equals --min-margin dropped",
             "src/ieqa/curate/dpo.py", "if margin < min_margin:", "if margin <= min_margin:", _DPO),
    Mutation("curate-dpo-accuracy-ties", "reference accuracy leaves ties out (documented: ties count as wrong)",
             "src/ieqa/curate/dpo.py", '"accuracy": agree / n if n else None',
             '"accuracy": agree / (agree + disagree) if agree + disagree else None',
             _DPO + ("tests/curate/test_commands.py",)),
    # ---- ieqa.curate.generate
    Mutation("curate-generate-seeds-from-1", "default seeds 1..K instead of 0..K-1",
             "src/ieqa/curate/generate.py", "seeds = list(range(num_candidates)) if seeds is None",
             "seeds = list(range(1, num_candidates + 1)) if seeds is None",
             ("tests/curate/test_generate_items.py",)),
    Mutation("curate-generate-kept-count", "generate's 'kept' counts items, not candidates",
             "src/ieqa/curate/generate.py", '"kept": len(items) * num_candidates - len(todo)',
             '"kept": len(items) - len(todo) // num_candidates',
             ("tests/curate/test_generate_items.py",)),
    # ---- ieqa.studio.analysis: agreement on the admin page
    Mutation("studio-icc-not-widened", "raters added later do not widen the panel: ICC(2,1) on a "
             "panel whose raters differ per item (the bug fixed in f9e9729)",
             "src/ieqa/studio/analysis.py",
             "if config.per_item >= max(config.raters, m.shape[1]):",
             "if config.per_item >= config.raters:", ("tests/studio/test_analysis.py",)),
    Mutation("studio-icc1-as-icc2", "raters differ per item: ICC(2,1) of the rating slots reported "
             "as ICC(1,1)", "src/ieqa/studio/analysis.py", 'lambda s=slots: icc(s, "ICC(1,1)")',
             'lambda s=slots: icc(s, "ICC(2,1)")', ("tests/studio/test_analysis.py",)),
    Mutation("studio-icc2-as-icc3", "full panel: consistency ICC(3,1) reported as ICC(2,1)",
             "src/ieqa/studio/analysis.py", 'lambda m=m: icc(m, "ICC(2,1)")',
             'lambda m=m: icc(m, "ICC(3,1)")', ("tests/studio/test_analysis.py",)),
    Mutation("studio-training-in-agreement", "training answers enter the agreement statistics",
             "src/ieqa/studio/analysis.py",
             '        if it.role == "training":\n            continue\n        if config.protocol in',
             "        if config.protocol in", ("tests/studio/test_analysis.py",)),
    Mutation("studio-rank-w-median", "rank: Kendall's W median over the groups reported as their mean",
             "src/ieqa/studio/analysis.py", "float(np.mean(ws)) if ws else None",
             "float(np.median(ws)) if ws else None", ("tests/studio/test_analysis.py",)),
    # ---- ieqa.studio.analysis: gold agreement
    Mutation("studio-gold-min-boundary", "gold agreement equal to gold_min flagged (<= for <)",
             "src/ieqa/studio/analysis.py", "if score < config.gold_min:", "if score <= config.gold_min:",
             _STUDIO),
    Mutation("studio-gold-rank-reversed", "rank gold: place 1 read as the worst",
             "src/ieqa/studio/analysis.py", "(g[i] > g[j]) == (place[i] < place[j])",
             "(g[i] > g[j]) == (place[i] > place[j])", _STUDIO),
    Mutation("studio-gold-rank-margin", "rank gold: candidates exactly tie_margin apart are judged",
             "src/ieqa/studio/analysis.py", "if abs(g[i] - g[j]) > config.tie_margin:",
             "if abs(g[i] - g[j]) >= config.tie_margin:", _STUDIO),
    Mutation("studio-gold-both-bad", "pairwise gold: 'both bad' no longer counts as the tie",
             "src/ieqa/studio/analysis.py",
             'got = "tie" if r["answer"] == "both-bad" else r["answer"]', 'got = r["answer"]', _STUDIO),
    Mutation("studio-gold-label-margin", "pairwise gold: values exactly tie_margin apart are a preference",
             "src/ieqa/studio/analysis.py", "if a - b > margin:", "if a - b >= margin:", _STUDIO),
    # ---- ieqa.studio.analysis: behaviour flags
    Mutation("studio-straight-boundary", "straight-lining at exactly max_share flagged (>= for >)",
             "src/ieqa/studio/analysis.py", "same / len(full) > config.max_share",
             "same / len(full) >= config.max_share", _STUDIO),
    Mutation("studio-rank-straight-share", "rank straight-lining share over every ranking, unknown "
             "(untouched None) ones counted as touched", "src/ieqa/studio/analysis.py",
             'known = [bool(r["untouched"]) for r in mine if r.get("untouched") is not None]',
             'known = [bool(r["untouched"]) for r in mine]', _STUDIO),
    Mutation("studio-constant-boundary", "constant answers at exactly max_share flagged (>= for >)",
             "src/ieqa/studio/analysis.py", "if share > config.max_share:",
             "if share >= config.max_share:", _STUDIO),
    Mutation("studio-too-fast-mean", "too fast judged on the mean time per answer, not the median",
             "src/ieqa/studio/analysis.py", "median = float(np.median(times))",
             "median = float(np.mean(times))", _STUDIO),
    Mutation("studio-too-fast-per-slider", "too fast counts one time per slider, not per answer",
             "src/ieqa/studio/analysis.py",
             'times = [float(d) for d in {r["submission"]: r.get("duration") for r in mine}.values() '
             'if d is not None]',
             'times = [float(r["duration"]) for r in mine if r.get("duration") is not None]', _STUDIO),
    Mutation("studio-bias-one-sided", "position bias: one-sided binomial p (half the two-sided one)",
             "src/ieqa/studio/analysis.py", "p = float(stats.binomtest(k, n, 0.5).pvalue)",
             'p = float(stats.binomtest(k, n, 0.5, alternative="greater" if 2 * k > n else "less").pvalue)',
             _STUDIO),
    Mutation("studio-bias-ties-decisive", "position bias: ties and both-bad counted as decisive",
             "src/ieqa/studio/analysis.py", 'n, k = sum(v in ("a>b", "b>a") for v in verdicts)',
             "n, k = len(verdicts)", _STUDIO),
    # ---- ieqa.studio.analysis: leave-one-out agreement
    Mutation("studio-loo-includes-self", "the leave-one-out consensus includes the rater judged",
             "src/ieqa/studio/analysis.py",
             "scores = {j: _loo_median_srcc(m, j, [k for k in active if k != j], MIN_SHARED_ITEMS)",
             "scores = {j: _loo_median_srcc(m, j, list(active), MIN_SHARED_ITEMS)", _STUDIO),
    Mutation("studio-loo-mean", "the consensus is the per-item mean of the others, not the median",
             "src/ieqa/studio/analysis.py", "ref = np.nanmedian(ref_cols[use], axis=1)",
             "ref = np.nanmean(ref_cols[use], axis=1)", _STUDIO),
    Mutation("studio-loo-flagged-kept", "raters flagged by another rule stay in the consensus",
             "src/ieqa/studio/analysis.py",
             "active = [j for j, r in enumerate(raters) if r not in skip]",
             "active = list(range(len(raters)))", _STUDIO),
    Mutation("studio-prefer-both-bad-as-b", "pairwise screen codes 'both bad' as a vote for B",
             "src/ieqa/studio/analysis.py", "_PREFER_A = np.array([1.0, -1.0, 0.0, 0.0])",
             "_PREFER_A = np.array([1.0, -1.0, 0.0, -1.0])", _STUDIO),
    # ---- ieqa.human.screening
    Mutation("screening-reject-boundary", "agreement screen rejects an SRCC equal to min_srcc (<= for <)",
             "src/ieqa/human/screening.py", "rejected = srcc < min_srcc", "rejected = srcc <= min_srcc",
             _HUMAN),
    Mutation("screening-n-shared-alone", "n_shared counts items nobody else rated",
             "src/ieqa/human/screening.py", "n_shared = (present & (others > 0)).sum(axis=0)",
             "n_shared = present.sum(axis=0)", _HUMAN),
    Mutation("screening-min-flaggable-boundary", "fewest flaggable ratings: a rating exactly sigma "
             "SDs away counted as flaggable", "src/ieqa/human/screening.py",
             "while max_deviation(n, ddof) <= sigma:", "while max_deviation(n, ddof) < sigma:", _HUMAN),
    Mutation("screening-min-items-ignored", "agreement screen judges on the default 10 shared items "
             "whatever min_items says", "src/ieqa/human/screening.py",
             "leave_one_out_ceiling(m, min_items=int(min_items))",
             "leave_one_out_ceiling(m, min_items=MIN_SHARED_ITEMS)", _HUMAN),
)
