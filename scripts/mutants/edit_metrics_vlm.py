"""Mutants of the editing papers' metrics (ieqa.scorers.edit_metrics) and of the released
judges' protocols (ieqa.scorers.vlm: VIEScore and its family, GEdit-, ImgEdit-, KRIS- and
RISEBench's judges, EditScore, UnifiedReward-Edit, EditReward) with the answer readers
they use (ieqa.prompts.answers): each changes a number a table prints or whether an answer
is accepted."""

from mutants import Mutation

_EM = "src/ieqa/scorers/edit_metrics.py"
_EM_TESTS = ("tests/scorers/test_edit_metrics.py",)
_VIE = "src/ieqa/scorers/published/vie_judge.py"
_VIE_TESTS = ("tests/scorers/test_published_judges.py",
              "tests/scorers/test_editscore.py::test_scores_follow_editscore_rules_given_the_same_answers",
              "tests/scorers/test_editscore.py::test_reductions_differ_on_these_answers",
              "tests/scorers/test_editscore.py::test_malformed_answers_are_recorded_and_counted")

MUTATIONS: tuple[Mutation, ...] = (
    # ---- the pixel distances (MagicBrush's L1 / L2)
    Mutation("metric-resize-nearest", "L1/L2: the edit resized to the reference with nearest "
             "instead of Pillow's bicubic", _EM, "gen = gen.resize(reference.size)",
             "gen = gen.resize(reference.size, Image.NEAREST)", _EM_TESTS),
    Mutation("metric-resize-reference", "L1/L2: the reference resized to the edit's size "
             "instead of the edit to the reference's", _EM,
             "    if gen.size != reference.size:\n        gen = gen.resize(reference.size)\n"
             "    diff = np.asarray(gen, dtype=np.float32) / 255.0 - ref",
             "    if gen.size != reference.size:\n        ref = np.asarray(reference.convert("
             "\"RGB\").resize(gen.size), dtype=np.float32) / 255.0\n"
             "    diff = np.asarray(gen, dtype=np.float32) / 255.0 - ref", _EM_TESTS),
    Mutation("metric-reference-256", "L1/L2: the reference divided by 256 instead of 255",
             _EM, 'ref = np.asarray(reference.convert("RGB"), dtype=np.float32) / 255.0',
             'ref = np.asarray(reference.convert("RGB"), dtype=np.float32) / 256.0', _EM_TESTS),
    Mutation("metric-l2-rmse", "L2 reported as the root mean square instead of the mean "
             "square", _EM, 'else np.mean(diff * diff))', 'else np.sqrt(np.mean(diff * diff)))',
             _EM_TESTS),
    # ---- preprocessing of the embedders
    Mutation("metric-clip-bilinear", "CLIP/DINO preprocessing resized bilinear instead of "
             "bicubic", _EM, "img = img.resize(size, Image.BICUBIC)",
             "img = img.resize(size, Image.BILINEAR)", _EM_TESTS),
    Mutation("metric-crop-floor", "centre crop offset (size - crop) // 2 (transformers') "
             "instead of torchvision's round((size - crop) / 2)", _EM,
             "left, top = int(round((w - crop) / 2.0)), int(round((h - crop) / 2.0))",
             "left, top = (w - crop) // 2, (h - crop) // 2", _EM_TESTS),
    Mutation("metric-dino-no-256", "DINO: shorter side straight to the crop size instead of "
             "256/224 of it", _EM, "int(round(size * 256 / 224))", "size", _EM_TESTS),
    Mutation("metric-clip-imagenet-std", "CLIP pixels normalised with ImageNet's std",
             _EM, "_CLIP_MEAN, _CLIP_STD)", "_CLIP_MEAN, _IMAGENET_STD)", _EM_TESTS),
    # ---- the embedding metrics
    Mutation("metric-direction-raw-text", "CLIP-dir: the text embeddings not L2-normalised "
             "before their difference", _EM,
             "unit(output_text) - unit(input_text))",
             "np.ravel(output_text) - np.ravel(input_text))", _EM_TESTS),
    Mutation("metric-target-ignored", "reference=target ignored: the edit compared with the "
             "source", _EM, 'if self.reference == "source":',
             'if self.reference in ("source", "target"):', _EM_TESTS),
    Mutation("metric-clip-t-input", "CLIP-T against the input caption instead of the output "
             "caption", _EM, 'self._text_features([meta["output_caption"]])[0])',
             'self._text_features([meta["input_caption"]])[0])', _EM_TESTS),
    Mutation("metric-multi-reference-source", "edit-metrics: L1/L2/CLIP-I/DINO compared with "
             "the source although reference=target", _EM,
             "ref = self._clip._reference(sample)", "ref = source", _EM_TESTS),
    Mutation("metric-multi-clip-i-source", "edit-metrics: CLIP-I of the edit against the "
             "source instead of the reference", _EM,
             'metrics["clip-i"] = cosine(img[1], img[0])',
             'metrics["clip-i"] = cosine(img[1], img[2])', _EM_TESTS),
    Mutation("metric-multi-dino-source", "edit-metrics: DINO of the edit against the source "
             "instead of the reference", _EM,
             "dino = self._dino._image_features([ref, edited])",
             "dino = self._dino._image_features([source, edited])", _EM_TESTS),
    Mutation("metric-multi-clip-t-input", "edit-metrics: CLIP-T against the input caption "
             "instead of the output caption", _EM,
             'metrics["clip-t"] = cosine(img[1], txt[-1])',
             'metrics["clip-t"] = cosine(img[1], txt[0])', _EM_TESTS),
    Mutation("metric-multi-direction-swapped", "edit-metrics: CLIP-dir with source and edit "
             "swapped (the sign flips)", _EM,
             "clip_direction(img[2], img[1], txt[0], txt[1])",
             "clip_direction(img[1], img[2], txt[0], txt[1])", _EM_TESTS),
    Mutation("metric-multi-nan-accepted", "edit-metrics: a NaN metric (an edit identical to "
             "its source) reported instead of failing the sample", _EM,
             "if v is not None and math.isnan(v)]", "if v is not None and math.isinf(v)]",
             _EM_TESTS),
    # ---- VIEScore's rules (VieJudge: viescore, gedit-judge, editscore, unifiedreward-edit)
    Mutation("judge-vie-sc-mean", "VIEScore SC = mean of its two scores instead of the min",
             _VIE, '"sc": min(sc),', '"sc": sum(sc) / len(sc),', _VIE_TESTS),
    Mutation("judge-vie-pq-first", "VIEScore PQ = its first score (naturalness) instead of "
             "the min", _VIE, '"pq": min(pq)}', '"pq": pq[0]}', _VIE_TESTS),
    Mutation("judge-vie-o-prompt-following", "VIEScore O = sqrt(prompt following * PQ) "
             "instead of sqrt(min SC * min PQ)", _VIE,
             'return sum(viescore(p["sc"], p["pq"]) for p in passes) / len(passes)',
             'return sum(viescore(p["prompt_following"], p["pq"]) for p in passes) '
             '/ len(passes)', _VIE_TESTS),
    Mutation("judge-vie-o-arithmetic", "VIEScore O = (SC + PQ) / 2 instead of sqrt(SC * PQ)",
             _VIE,
             'return sum(viescore(p["sc"], p["pq"]) for p in passes) / len(passes)',
             'return sum((p["sc"] + p["pq"]) / 2 for p in passes) / len(passes)', _VIE_TESTS),
    Mutation("judge-average-last-of-means", "EditScore average_last = sqrt(mean SC * mean PQ) "
             "instead of the mean of the per-pass O", _VIE,
             'return sum(viescore(p["sc"], p["pq"]) for p in passes) / len(passes)',
             'return viescore(mean("sc"), mean("pq"))', _VIE_TESTS),
    Mutation("judge-average-first-min-sc", "EditScore average_first with min SC instead of "
             "prompt following", _VIE,
             'return viescore(mean("prompt_following"), mean("pq"))',
             'return viescore(mean("sc"), mean("pq"))', _VIE_TESTS),
    Mutation("judge-vie-no-rescale", "0-25 answers not divided by 2.5 (score_range / 10)",
             _VIE, "unit = self.score_range_asked / 10", "unit = 1.0", _VIE_TESTS),
    Mutation("judge-vie-midpoint-unscaled", "on_malformed=midpoint substitutes 5 on the asked "
             "scale (2 on 0-10 for 0-25) instead of score_range / 2", _VIE,
             "read[name] = (self.score_range_asked / 2,) * 2", "read[name] = (5.0,) * 2",
             _VIE_TESTS),
    Mutation("judge-vie-reader-top-refused", "VIEScore reader: the top of the scale (10, 25) "
             "refused (< instead of <=)", "src/ieqa/prompts/answers/vie.py",
             "if not 0 <= value <= high:", "if not 0 <= value < high:",
             ("tests/prompts/test_answers.py", *_VIE_TESTS)),
    Mutation("judge-vie-reader-zero-refused", "VIEScore reader: a score of 0 refused",
             "src/ieqa/prompts/answers/vie.py",
             "if not 0 <= value <= high:", "if not 0 < value <= high:",
             ("tests/prompts/test_answers.py", *_VIE_TESTS)),
    Mutation("judge-unifiedreward-0-10", "UnifiedReward-Edit read on 0-10 instead of 0-25",
             "src/ieqa/scorers/published/unifiedreward.py",
             "MAX_TOKENS, JPEG_QUALITY, SCORE_RANGE = 4096, 95, 25",
             "MAX_TOKENS, JPEG_QUALITY, SCORE_RANGE = 4096, 95, 10",
             ("tests/scorers/test_published_judges.py",)),
    Mutation("judge-gedit-resize-nearest", "GEdit-Bench: the edit resized to the source with "
             "nearest instead of Pillow's bicubic", "src/ieqa/scorers/published/gedit_judge.py",
             "edited = edited.resize(item.source.size)",
             "edited = edited.resize(item.source.size, Image.NEAREST)",
             ("tests/scorers/test_published_judges.py",)),
    Mutation("judge-gedit-no-reask", "GEdit-Bench: an unparsable answer not asked again "
             "(the released code asks once more)", "src/ieqa/scorers/published/gedit_judge.py",
             "reask_unparsable: int = 1,", "reask_unparsable: int = 0,",
             ("tests/scorers/test_published_judges.py",)),
    Mutation("judge-gedit-released-first-not-min", "GEdit's released reading: the first "
             "score instead of the minimum", "src/ieqa/prompts/answers/vie.py",
             "        low = min(scores)", "        low = scores[0]",
             ("tests/prompts/test_released_vie_reading.py", "tests/bench/test_editor_gedit.py")),
    Mutation("judge-gedit-released-bare-number-10-refused", "GEdit's released reading: a "
             "bare 10 refused (< instead of <=)", "src/ieqa/prompts/answers/vie.py",
             "return 0 <= int(text) <= 10", "return 0 <= int(text) < 10",
             ("tests/prompts/test_released_vie_reading.py",)),
    Mutation("judge-gedit-no-give-up-pass", "GEdit: the re-asked answers read without the "
             "released give-up rule (no random draw)", "src/ieqa/scorers/published/viescore.py",
             "give_up = asked > 1 ", "give_up = False ", ("tests/bench/test_editor_gedit.py",)),
    Mutation("judge-gedit-reask-on-fails", "GEdit: both prompts asked again for an answer "
             "the released loop keeps (and fails on later)", "src/ieqa/scorers/published/viescore.py",
             'if status == "ask_again" or (give_up', 'if status != "read" or (give_up',
             ("tests/bench/test_editor_gedit.py",)),
    Mutation("judge-gedit-negative-product-kept", "GEdit: a negative SC * PQ not left out "
             "(sqrt fails on it)", "src/ieqa/scorers/published/viescore.py",
             "            if product < 0:", "            if product < -1e300:",
             ("tests/bench/test_editor_gedit.py",)),
    # ---- ImgEdit-Bench, KRIS-Bench, RISEBench
    Mutation("judge-imgedit-ia-last", "ImgEdit: instruction alignment from the last "
             "criterion instead of the first", "src/ieqa/scorers/published/imgedit_judge.py",
             '"instruction_alignment": float(criteria[0][1])',
             '"instruction_alignment": float(criteria[-1][1])',
             ("tests/scorers/test_published_judges.py",)),
    Mutation("judge-imgedit-released-1dp", "ImgEdit's released item score rounded to 1 "
             "decimal instead of 2", "src/ieqa/prompts/answers/criteria.py",
             "round(sum(scores) / len(scores), 2)", "round(sum(scores) / len(scores), 1)",
             ("tests/prompts/test_answers.py", "tests/scorers/test_published_judges.py")),
    Mutation("judge-criteria-top-refused", "ImgEdit reader: a criterion score of 5 refused "
             "(< instead of <=)", "src/ieqa/prompts/answers/criteria.py",
             "if not low <= score <= high:", "if not low <= score < high:",
             ("tests/prompts/test_answers.py", "tests/scorers/test_published_judges.py")),
    Mutation("judge-kris-overall-by-4", "KRIS-Bench overall = sum / 4 on items with three "
             "judgements", "src/ieqa/scorers/published/kris_judge.py",
             'scores["overall"] = sum(scores.values()) / len(scores)',
             'scores["overall"] = sum(scores.values()) / 4',
             ("tests/scorers/test_published_judges.py",)),
    Mutation("judge-kris-reader-top-refused", "KRIS-Bench reader: a score of 5 refused",
             "src/ieqa/prompts/answers/kris.py",
             "if value != int(value) or not 1 <= value <= 5:",
             "if value != int(value) or not 1 <= value < 5:",
             ("tests/prompts/test_answers.py", "tests/scorers/test_published_judges.py")),
    Mutation("judge-rise-overall-mean", "RISEBench overall = mean of the judgements instead "
             "of the released minimum", "src/ieqa/scorers/published/rise_judge.py",
             'scores["overall"] = min(scores.values())',
             'scores["overall"] = sum(scores.values()) / len(scores)',
             ("tests/scorers/test_published_judges.py",)),
    Mutation("judge-rise-logical-0-5", "RISEBench logical 0/1 mapped to 0/5 instead of 1/5",
             "src/ieqa/scorers/published/rise_judge.py", "float(4 * min(value, 1) + 1)",
             "float(5 * min(value, 1))",
             ("tests/scorers/test_published_judges.py",)),
    Mutation("judge-rise-logical-zero-refused", "RISEBench: a logical item's answer 0 "
             "refused (read on 1-5 like the others)", "src/ieqa/scorers/published/rise_judge.py",
             "parse_final_score(text, low=0, high=1)", "parse_final_score(text, low=1, high=1)",
             ("tests/scorers/test_published_judges.py",)),
    Mutation("judge-final-score-first-of-many", "RISEBench reader: of several numbers after "
             "'Final Score' the first is taken instead of refusing the answer",
             "src/ieqa/prompts/answers/final_score.py", "if len(numbers) != 1:",
             "if len(numbers) < 1:",
             ("tests/prompts/test_answers.py", "tests/scorers/test_published_judges.py")),
    # ---- EditReward
    Mutation("judge-editreward-log-sigma", "EditReward sigma reported as log sigma",
             "src/ieqa/scorers/published/editreward.py",
             "sigma = dict(zip(self.score_dimensions, log_sigma[k].exp().tolist(), strict=True))",
             "sigma = dict(zip(self.score_dimensions, log_sigma[k].tolist(), strict=True))",
             ("tests/scorers/test_editreward.py::test_scores_equal_the_released_forward",)),
    Mutation("judge-editreward-prompts-swapped", "EditReward heads read each other's prompt",
             "src/ieqa/scorers/published/editreward.py",
             '_HEADS = (("head_0", "instruction_following", "instruction_alignment"),\n'
             '          ("head_1", "visual_quality", "visual_quality"))',
             '_HEADS = (("head_0", "visual_quality", "instruction_alignment"),\n'
             '          ("head_1", "instruction_following", "visual_quality"))',
             ("tests/scorers/test_editreward.py::test_scores_equal_the_released_forward",)),
    # ---- IE-Critic-R1
    Mutation("ie-critic-generation-prompt", "IE-Critic-R1's closed '<think>' turn rendered "
             "with a generation prompt after it", "src/ieqa/backends/transformers_vlm.py",
             "prompt.messages(), add_generation_prompt=prompt.assistant_turn is None,",
             "prompt.messages(), add_generation_prompt=True,",
             ("tests/scorers/test_ie_critic.py::"
              "test_the_local_model_generates_as_the_released_evaluation",)),
    Mutation("ie-critic-no-vision-resize", "IE-Critic-R1's images go to the processor without "
             "qwen_vl_utils' resize first", "src/ieqa/scorers/published/ie_critic.py",
             "images = tuple(fit_qwen_grid(im.convert(\"RGB\")) for im in (item.source, item.edited))",
             "images = tuple(im.convert(\"RGB\") for im in (item.source, item.edited))",
             ("tests/scorers/test_ie_critic.py::"
              "test_the_local_model_generates_as_the_released_evaluation",)),
    Mutation("ie-critic-scale-unchecked", "IE-Critic-R1: an answer off the 1-5 scale is "
             "taken as a score", "src/ieqa/scorers/published/ie_critic.py",
             "if not math.isfinite(score) or not SCALE[0] <= score <= SCALE[1]:",
             "if not math.isfinite(score):",
             ("tests/scorers/test_ie_critic.py::"
              "test_on_a_server_the_request_and_the_reading_are_the_released_ones",)),
    Mutation("imgedit-judge-7b-no-vision-resize", "ImgEdit-Judge's images go to the "
             "processor without qwen_vl_utils' resize first",
             "src/ieqa/scorers/published/imgedit_judge.py",
             "                             fit_qwen_grid(item.source.convert(\"RGB\")),",
             "                             item.source.convert(\"RGB\"),",
             ("tests/scorers/test_imgedit_judge_local.py::"
              "test_the_judge_runs_as_the_readme_demo",)),
    # ---- MMRB2
    Mutation("mmrb2-reverse-not-swapped", "MMRB2: the reverse judgement compared with chosen "
             "without swapping A and B", "src/ieqa/bench/mmrb2.py",
             '("reverse", _swap)', '("reverse", lambda j: j)',
             ("tests/bench/test_mmrb2.py::"
              "test_official_accuracy_is_the_released_rule_on_every_answer_shape",)),
    Mutation("mmrb2-tie-favours-a", "MMRB2: a score tie judged A (right whenever A was chosen)",
             "src/ieqa/bench/mmrb2.py",
             'forward = "A" if delta > eps else "B" if delta < -eps else "tie"',
             'forward = "A" if delta >= -eps else "B"',
             ("tests/bench/test_mmrb2.py::"
              "test_scores_give_the_official_accuracy_per_source_with_coverage",)),
    Mutation("judge-editreward-qwen3-resized", "EditReward's Qwen3-VL configuration resizes "
             "the images to 200704 pixels as the Qwen2.5-VL one does",
             "src/ieqa/scorers/published/editreward.py",
             '"Qwen/Qwen3-VL-8B-Instruct", "8.8 B", pixels=None,',
             '"Qwen/Qwen3-VL-8B-Instruct", "8.8 B",',
             ("tests/scorers/test_editreward_qwen3.py::"
              "test_scores_equal_the_authors_qwen3_vl_forward",)),
    Mutation("judge-editreward-qwen3-1d", "EditReward's Qwen3-VL configuration runs with 1-D "
             "positions", "src/ieqa/scorers/published/editreward.py",
             '                                     positions="model",',
             '                                     positions="1d",',
             ("tests/scorers/test_editreward_qwen3.py::"
              "test_scores_equal_the_authors_qwen3_vl_forward",)),
    Mutation("judge-editreward-pth-not-unwrapped", "a model.pth checkpoint is read without "
             "unwrapping its 'model' entry", "src/ieqa/scorers/published/editreward_release.py",
             'if isinstance(state, dict) and isinstance(state.get("model"), dict):',
             'if False:',
             ("tests/scorers/test_editreward_qwen3.py::"
              "test_a_torch_checkpoint_of_the_authors_training_loads",)),
)
