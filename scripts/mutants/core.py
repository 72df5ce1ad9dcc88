"""Mutants of the central formulas: MOS and reliability, metrics, losses, readouts,
reward rules, curation's top-k, the classic scorer, the learning stages (slow) and the
explanation metrics."""

from mutants import Mutation

MUTATIONS: tuple[Mutation, ...] = (
    # ---- MOS and rater screening (ieqa.human)
    Mutation("bt500-boundary", "BT.500 rater rejection at >= 5 % outliers instead of > 5 %",
             "src/ieqa/human/mos.py", "rejected = frac > max_outlier_fraction",
             "rejected = frac >= max_outlier_fraction", ("tests/human/test_mos.py",)),
    Mutation("kept-rater-outliers", "outlier ratings of raters who are kept are kept too",
             "src/ieqa/human/mos.py", "kept = present & ~outlier & ~rejected[None, :]",
             "kept = present & ~rejected[None, :]", ("tests/human/test_mos.py",)),
    Mutation("iqr-nearest", "IQR quartiles with numpy's 'nearest' rule instead of linear",
             "src/ieqa/human/mos.py",
             "np.nanpercentile(x, [25.0, 75.0], axis=axis, keepdims=True)",
             'np.nanpercentile(x, [25.0, 75.0], axis=axis, keepdims=True, method="nearest")',
             ("tests/human/test_mos.py",)),
    Mutation("krippendorff-observed", "Krippendorff's alpha: observed disagreement without "
             "the m_u - 1 pairing", "src/ieqa/human/reliability.py",
             "observed = (2.0 * mu * ss_u / (mu - 1)).sum()",
             "observed = (2.0 * mu * ss_u / mu).sum()", ("tests/human/test_reliability.py",)),
    # ---- metrics
    Mutation("srcc-ordinal-ranks", "SRCC with ties broken by order instead of mean ranks",
             "src/ieqa/metrics/correlation.py",
             "return _pearson(stats.rankdata(p), stats.rankdata(t))",
             'return _pearson(stats.rankdata(p, method="ordinal"), '
             'stats.rankdata(t, method="ordinal"))', ("tests/metrics/test_correlation.py",)),
    Mutation("bootstrap-level", "bootstrap alpha = 1 - ci: a 90 % interval labelled 95 %",
             "src/ieqa/metrics/bootstrap.py", "alpha = (1.0 - ci) / 2.0", "alpha = 1.0 - ci",
             ("tests/metrics/test_bootstrap.py", "tests/bench/test_leaderboard.py")),
    Mutation("bootstrap-basic", "the basic bootstrap interval instead of the percentile one",
             "src/ieqa/metrics/bootstrap.py", "return point, float(low), float(high)",
             "return point, float(2 * point - high), float(2 * point - low)",
             ("tests/metrics/test_bootstrap.py", "tests/bench/test_leaderboard.py")),
    Mutation("leaderboard-misaligned", "leaderboard predictions joined in a shuffled order",
             "src/ieqa/bench/leaderboard.py", "rows = [predictions[i] for i in table.ids]",
             "rows = [predictions[i] for i in np.random.default_rng(3).permutation(table.ids)]",
             ("tests/bench/test_leaderboard.py",)),
    # ---- losses
    Mutation("bt-loss-sign", "Bradley-Terry loss pushing the loser up",
             "src/ieqa/train/losses/ranking.py", "F.softplus(s_lose - s_win)",
             "F.softplus(s_win - s_lose)", ("tests/train/test_losses.py",)),
    Mutation("tdrl-no-score-term", "TDRL without its digit-distance term",
             "src/ieqa/train/losses/tokens.py", "total = ce + score_weight * score",
             "total = ce + 0.0 * score", ("tests/train/test_losses.py",)),
    # ---- readouts
    Mutation("levels-weights", "level readout weights 4..0 instead of 5..1",
             "src/ieqa/scorers/vlm/levels.py", "_WEIGHTS = (5.0, 4.0, 3.0, 2.0, 1.0)",
             "_WEIGHTS = (4.0, 3.0, 2.0, 1.0, 0.0)",
             ("tests/scorers/test_vlm_readouts.py::test_level_expectation_by_hand",
              "tests/scorers/test_vlm_readouts.py::test_levels_expectation_equals_hand_computation")),
    Mutation("digits-place-values", "digit readout place values 1, 0.01, 0.1",
             "src/ieqa/scorers/vlm/digits.py", "_WEIGHTS = (1.0, 0.1, 0.01)",
             "_WEIGHTS = (1.0, 0.01, 0.1)",
             ("tests/scorers/test_vlm_readouts.py::test_digit_formulas_by_hand",
              "tests/scorers/test_vlm_readouts.py::"
              "test_digit_expectation_and_definition_value_by_hand")),
    # ---- reward rules
    Mutation("critique-weights", "critique reward with accuracy weighted like the others",
             "src/ieqa/scorers/critique.py",
             "DEFAULT_WEIGHTS: dict[str, float] = {LOGICALITY: 0.25, ACCURACY: 0.5, USEFULNESS: 0.25}",
             "DEFAULT_WEIGHTS: dict[str, float] = {LOGICALITY: 1 / 3, ACCURACY: 1 / 3, "
             "USEFULNESS: 1 / 3}",
             ("tests/scorers/test_critique.py::test_weighted_reward_defaults_and_normalisation",
              "tests/serve/test_critique.py")),
    # ---- curation and the classic scorer
    Mutation("curate-sigma-desc", "curate top-k ties broken by the highest sigma first",
             "src/ieqa/curate/select.py", "order = np.lexsort((s, -r))",
             "order = np.lexsort((-s, -r))", ("tests/curate/test_curate.py",)),
    Mutation("classic-preservation-half", "classic content preservation half point 0.2",
             "src/ieqa/scorers/classic/composite.py", "PRESERVATION_HALF = 0.1",
             "PRESERVATION_HALF = 0.2",
             ("tests/scorers/test_classic.py::test_preservation_mapping_at_hand_worked_points",
              "tests/scorers/test_classic.py::test_unrequested_second_change_lowers_preservation")),
    Mutation("classic-preservation-random", "classic content preservation replaced by a hash "
             "of the id", "src/ieqa/scorers/classic/composite.py",
             '"content_preservation": preservation_score(unintended)},',
             '"content_preservation": 1.0 + 4.0 * __import__("zlib").crc32(sample.id.encode())'
             ' / 2**32},', ("tests/curate/test_shapesedit.py",)),
    # ---- training stages that claim to learn (slow: run with --slow)
    Mutation("box-target-whole-image", "EPAIQA grounding trained on the whole-image box",
             "src/ieqa/prompts/answers/region.py",
             'return f" ({bbox.x:.2f}, {bbox.y:.2f}, {bbox.w:.2f}, {bbox.h:.2f})"',
             'return " (0.50, 0.50, 1.00, 1.00)"',
             ("tests/train/test_recipes_learn.py::"
              "test_epaiqa_grounding_then_levels_on_the_crop_learn",), slow=True),
    Mutation("bt-loss-zero", "EditHF's pairwise stage learns nothing (Bradley-Terry loss x 0)",
             "src/ieqa/train/losses/ranking.py", "F.softplus(s_lose - s_win)",
             "0.0 * F.softplus(s_lose - s_win)",
             ("tests/train/test_recipes_learn.py::test_edithf_levels_then_mse_then_bt_learns",),
             slow=True),
    Mutation("tdrl-untrained", "the FDMPO demo's evaluator learns nothing (TDRL loss x 0)",
             "src/ieqa/train/losses/tokens.py", "total = ce + score_weight * score",
             "total = 0.0 * (ce + score_weight * score)",
             ("tests/train/test_fdmpo_demo.py",), slow=True),
    Mutation("grpo-no-huber", "GRPO's auxiliary Huber loss never added",
             "src/ieqa/train/grpo.py", "loss = loss + self._aux_weight * aux.to(loss.device)",
             "loss = loss + 0.0 * aux.to(loss.device)",
             ("tests/train/test_grpo.py::"
              "test_grpo_raises_the_judges_reward_and_the_huber_term_keeps_the_head",),
             slow=True),
    # ---- training on several processes
    Mutation("dp-unsharded", "every process trains on the same micro-batch (no sharding)",
             "src/ieqa/train/trainer.py",
             "chunk = procs.shard(cursor.take(bs * procs.size), bs)", "chunk = cursor.take(bs)",
             ("tests/train/test_data_parallel.py::"
              "test_two_processes_train_as_one_with_twice_the_accumulation",)),
    Mutation("dp-every-writer", "every process appends to metrics.jsonl",
             "src/ieqa/train/trainer.py",
             "        if not self.procs.is_main:\n            return\n        with self.log_path",
             "        with self.log_path",
             ("tests/train/test_data_parallel.py::"
              "test_two_processes_train_as_one_with_twice_the_accumulation",)),
    Mutation("dp-seed-per-process", "loss sampling and dropout seeded by the process's "
             "micro-batch, not the step's",
             "src/ieqa/train/trainer.py", "place = micro * procs.size + procs.rank", "place = micro",
             ("tests/train/test_data_parallel.py::"
              "test_two_processes_train_as_one_with_twice_the_accumulation",)),
    Mutation("dp-dropout-per-process", "dropout drawn from each process's own generator",
             "src/ieqa/train/trainer.py",
             "torch.manual_seed(micro_batch_seed(seed, global_step + 1, place, DROPOUT_STREAM))",
             "pass",
             ("tests/train/test_data_parallel.py::"
              "test_two_processes_train_as_one_with_twice_the_accumulation",)),
    # ---- fast paths (issue 45)
    Mutation("varlen-one-segment", "packed vision attention over the whole sequence "
             "(windows and images attend to each other)",
             "src/ieqa/backends/attention.py",
             "by_length.setdefault(end - start, []).append(start)",
             "by_length.setdefault(tokens, [0]) if start == 0 else None",
             ("tests/backends/test_attention.py",)),
    Mutation("varlen-causal", "packed vision attention causal within a segment",
             "src/ieqa/backends/attention.py", "causal = bool(is_causal)", "causal = True",
             ("tests/backends/test_attention.py",)),
    Mutation("flops-no-windows", "Qwen2.5-VL's windowed vision blocks counted as full "
             "attention", "src/ieqa/backends/flops.py",
             "segments = full if block in full_blocks else windowed", "segments = full",
             ("tests/backends/test_flops.py",)),
    Mutation("flops-shared-past-ignored", "new tokens counted as attending to themselves only",
             "src/ieqa/backends/flops.py",
             "attention = 2 * 2 * new * (past + new) * heads * hd",
             "attention = 2 * 2 * new * new * heads * hd",
             ("tests/backends/test_flops.py",)),
    Mutation("seeded-rows-one-seed", "every pass of a seeded batch drawn with the same seed",
             "src/ieqa/backends/transformers_vlm.py",
             "[seed + k for _ in prompts for k in range(num_samples)]",
             "[seed for _ in prompts for k in range(num_samples)]",
             ("tests/backends/test_transformers_vlm.py::"
              "test_seeded_passes_in_one_batch_equal_the_released_loop",)),
    Mutation("seeded-rows-shared-generator", "the rows of a seeded batch share one generator",
             "src/ieqa/backends/transformers_vlm.py",
             "for r, g in enumerate(self.generators)])",
             "for r, g in enumerate([self.generators[0]] * len(self.generators))])",
             ("tests/backends/test_transformers_vlm.py::"
              "test_seeded_passes_in_one_batch_equal_the_released_loop",)),
    Mutation("dims-unshared", "the dimension prompts of one edit keep per-dimension keys",
             "src/ieqa/scorers/vlm/base.py",
             "if len(prompts) < 2 or not _differ_after_images(prompts):",
             "if True:",
             ("tests/scorers/test_vlm_readouts.py::"
              "test_the_dimensions_of_one_edit_share_both_images",)),
    Mutation("no-length-buckets", "samples batched in arrival order, not by length",
             "src/ieqa/scorers/vlm/base.py",
             "if self.length_buckets else 0.0,", "if False else 0.0,",
             ("tests/scorers/test_vlm_readouts.py::test_batches_are_bucketed_by_length",)),
    # ---- explanations
    Mutation("cosine-unclipped", "embedding cosine not clipped to [-1, 1]",
             "src/ieqa/explain/metrics.py", "cos.clamp(-1.0, 1.0)", "cos",
             ("tests/explain/test_explain_metrics.py",)),
)
