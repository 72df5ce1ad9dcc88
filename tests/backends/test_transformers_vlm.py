"""TransformersVLM on tiny offline checkpoints: loading, batching, prefix sharing, adapters."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from ieqa.backends import BackendError, Prompt, make_backend
from ieqa.backends.transformers_vlm import TransformersVLM


def _img(seed: int, h: int = 64, w: int = 80) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray((rng.random((h, w, 3)) * 255).astype(np.uint8))


def _prompts(shared_key: str | None = "g") -> list[Prompt]:
    src = _img(0)
    return [Prompt(parts=("Source:", src, "Instruction: add a hat. Edited:", _img(k + 1, 64, 48 + 16 * k),
                          "Rate it."), answer_prefix="It is", share_key=shared_key, shared_images=1)
            for k in range(3)]


@pytest.fixture(scope="module")
def vlm(tiny_models) -> TransformersVLM:
    return TransformersVLM(tiny_models["qwen2-vl"], device="cpu")


def test_processor_is_image_only_and_loads_from_the_folder(vlm):
    assert type(vlm.processor).__name__.startswith("ImageOnly")
    assert vlm.config()["share_prefix"] is True and vlm.name.startswith("transformers:")
    text = vlm.render(_prompts()[0])
    assert text.count("<|image_pad|>") == 2 and text.endswith("<|im_start|>assistant\nIt is")


def test_pixel_budget_sets_the_number_of_image_tokens(tiny_models):
    small = TransformersVLM(tiny_models["qwen2-vl"], device="cpu", max_pixels=56 * 56)
    big = TransformersVLM(tiny_models["qwen2-vl"], device="cpu", max_pixels=224 * 224)
    prompt = Prompt(parts=("x", _img(0, 224, 224)))
    count = [int((b.encode_one(prompt)["input_ids"] == b.image_token_id).sum()) for b in (small, big)]
    assert count == [4, 64]  # (56/14)^2/4 and (224/14)^2/4 merged patches


def test_sharing_with_a_wrong_key_still_equals_full_recomputation(vlm):
    # the caller claims the three prompts share their first image, but one source differs:
    # the backend checks the pixels and shares only what is identical
    prompts = _prompts()
    liar = Prompt(parts=("Source:", _img(9), *prompts[2].parts[2:]), answer_prefix="It is",
                  share_key="g", shared_images=1)
    prompts = [prompts[0], prompts[1], liar]
    full = vlm.forward(prompts, share_prefix=False, anchor="mean")
    shared = vlm.forward(prompts, share_prefix=True, anchor="mean")
    for a, b in zip(full.logits, shared.logits, strict=True):
        assert torch.allclose(a, b, atol=1e-4)
    assert torch.allclose(full.hidden, shared.hidden, atol=1e-4)


def test_a_shared_prefix_passes_its_cache_under_the_name_transformers_takes(vlm, caplog):
    """The prefix's KV cache goes to the suffix's forward, and comes out of the prefix's,
    under the name of the installed transformers (``cache`` since it was renamed): no
    deprecation warning or log line on every shared forward, and nothing that breaks when
    the old name goes away."""
    import inspect
    import logging
    import warnings

    from transformers.utils import logging as hf_logging

    params = inspect.signature(vlm._base.forward).parameters
    assert vlm._cache_argument in params
    logging.Logger.warning_once.cache_clear()  # transformers logs each deprecation once
    hf_logging.enable_propagation()  # its loggers do not reach caplog's otherwise
    try:
        with caplog.at_level(logging.WARNING), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            shared = vlm.forward(_prompts(), share_prefix=True, anchor="mean")
    finally:
        hf_logging.disable_propagation()
    assert not [w for w in caught if "past_key_values" in str(w.message)], caught
    assert not [r for r in caplog.records if "past_key_values" in r.getMessage()], caplog.text
    full = vlm.forward(_prompts(), share_prefix=False, anchor="mean")
    assert torch.allclose(full.hidden, shared.hidden, atol=1e-4)


def test_from_model_equals_loading(vlm):
    wrapped = TransformersVLM.from_model(vlm.model, vlm.processor, name="mine")
    a = vlm.forward(_prompts()).logits
    b = wrapped.forward(_prompts()).logits
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert wrapped.config()["model"] == "mine" and wrapped.config()["dtype"] == "float32"


def test_generation_batched_equals_unbatched_and_seeds_reproduce(vlm):
    prompts = _prompts(None)
    batched = [g[0].text for g in vlm.generate(prompts, max_new_tokens=6)]
    single = [vlm.generate([p], max_new_tokens=6)[0][0].text for p in prompts]
    assert batched == single
    first = vlm.generate(prompts[:1], max_new_tokens=6, temperature=1.0, num_samples=3, seed=5)
    again = vlm.generate(prompts[:1], max_new_tokens=6, temperature=1.0, num_samples=3, seed=5)
    assert [g.text for g in first[0]] == [g.text for g in again[0]]
    assert len({g.text for g in first[0]}) > 1  # sampling differs between samples
    top = vlm.generate(prompts[:1], max_new_tokens=2, top_logprobs=3)[0][0].top_logprobs
    assert len(top) == 2 and all(1 <= len(step) <= 3 and max(step.values()) <= 0 for step in top)
    assert all(sum(np.exp(v) for v in step.values()) <= 1 + 1e-6 for step in top)


def test_lora_adapter_is_applied(tiny_models, tmp_path, vlm):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    base = AutoModelForImageTextToText.from_pretrained(tiny_models["qwen2-vl"])
    peft_model = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"],
                                                 init_lora_weights=False))
    peft_model.save_pretrained(tmp_path / "adapter")
    adapted = TransformersVLM(tiny_models["qwen2-vl"], device="cpu", adapter=tmp_path / "adapter")
    prompts = _prompts(None)[:1]
    enc = vlm.encode_one(prompts[0])
    with torch.no_grad():
        expected = peft_model.eval()(**enc).logits[0, -1]
    got = adapted.forward(prompts).logits[0][0]
    assert torch.allclose(got, expected, atol=1e-4)
    assert not torch.allclose(got, vlm.forward(prompts).logits[0][0], atol=1e-3)
    assert adapted.config()["adapter"] == str(tmp_path / "adapter")


def test_errors_say_what_to_do(tiny_models, tmp_path):
    with pytest.raises(BackendError, match="unknown dtype"):
        TransformersVLM(tiny_models["qwen2-vl"], device="cpu", dtype="float8")
    with pytest.raises(BackendError, match="missing: no such folder; give the folder"):
        TransformersVLM(tmp_path / "missing", device="cpu")
    with pytest.raises(BackendError, match="adapter_config.json"):
        TransformersVLM(tiny_models["qwen2-vl"], device="cpu", adapter=tmp_path)
    with pytest.raises(BackendError, match="needs a model"):
        make_backend()
    with pytest.raises(BackendError, match="served model name"):
        make_backend(base_url="http://127.0.0.1:9/v1")


def test_a_prompt_without_chat_template_is_read_as_written(vlm):
    """chat=False: the parts are the whole input, each image as the processor's image
    token; the hidden state read at from_end:k is the k-th token from the end."""
    image = Image.new("RGB", (56, 56), (200, 30, 30))
    raw = Prompt(parts=("Rate: <|vision_start|>", image, "<|vision_end|> score is 0"), chat=False)
    assert vlm.render(raw) == "Rate: <|vision_start|><|image_pad|><|vision_end|> score is 0"
    chat = Prompt(parts=("Rate: <|vision_start|>", image, "<|vision_end|> score is 0"))
    assert vlm.render(chat) != vlm.render(raw) and vlm.render(chat).startswith("<|im_start|>")
    ids = vlm.encode_one(raw)["input_ids"][0]
    last = vlm.forward([raw], logits=False, anchor="last").hidden
    assert torch.equal(vlm.forward([raw], logits=False, anchor="from_end:1").hidden, last)
    third = vlm.forward([raw], logits=False, anchor="from_end:3").hidden
    assert not torch.allclose(third, last)
    # the same position in a padded batch with a longer prompt
    longer = Prompt(parts=("A much longer prompt here: ", image, " and more text"), chat=False)
    batched = vlm.forward([longer, raw], logits=False, anchor="from_end:3").hidden
    assert torch.allclose(batched[1], third[0], atol=1e-5)
    for bad in ("from_end:0", "from_end:x"):
        with pytest.raises(BackendError, match="from_end takes a whole number"):
            vlm.forward([raw], logits=False, anchor=bad)
    with pytest.raises(BackendError, match=f"only {len(ids)} tokens"):
        vlm.forward([raw], logits=False, anchor=f"from_end:{len(ids) + 1}")
    with pytest.raises(ValueError, match="no system message"):
        Prompt(parts=("x",), system="s", chat=False)


def test_a_server_refuses_prompts_without_chat_template():
    from ieqa.backends import OpenAICompatBackend

    with OpenAICompatBackend("http://127.0.0.1:9/v1", "m") as backend, \
            pytest.raises(BackendError, match="chat=False"):
        backend.generate([Prompt(parts=("x",), chat=False)])


def test_a_local_judge_records_its_answers_and_replays_them_without_the_model(vlm, tmp_path,
                                                                             monkeypatch):
    from ieqa.backends.judge_log import JudgeLog, read_judge_log
    from ieqa.errors import RunStopped

    prompts = _prompts()
    settings = {"max_new_tokens": 6, "temperature": 0.0, "top_p": 1.0}
    vlm.judge_log = JudgeLog(tmp_path / "judge_log.jsonl", mode="record")
    try:
        live = vlm.generate(prompts, **settings)
    finally:
        vlm.judge_log = None
    log = read_judge_log(tmp_path / "judge_log.jsonl")
    assert len(log) == len(prompts) and all(len(e["images"]) >= 1 for e in log)
    assert [e["response"]["answers"][0]["text"] for e in log] == [g[0].text for g in live]
    # the replay answers from the log; the model is not run
    monkeypatch.setattr(vlm, "generate_batch", lambda *a, **k: pytest.fail("the model ran"))
    vlm.judge_log = JudgeLog(tmp_path / "again.jsonl", mode="replay",
                             source=tmp_path / "judge_log.jsonl")
    try:
        again = vlm.generate(prompts, **settings)
        assert [g[0].text for g in again] == [g[0].text for g in live]
        with pytest.raises(RunStopped, match="not in the judge log"):  # other settings
            vlm.generate(prompts, **{**settings, "max_new_tokens": 7})
    finally:
        vlm.judge_log = None


def test_seeded_passes_in_one_batch_equal_the_released_loop(tiny_models):
    # EditScore's sampling (temperature 0.7, top-k 20, top-p 0.9), three prompts of different
    # lengths (left padding), three answers each seeded seed + k
    batched = TransformersVLM(tiny_models["qwen2.5-vl"], device="cpu")
    loop = TransformersVLM.from_model(batched.model, batched.processor)
    loop.seeded_batching = False
    prompts = [Prompt(parts=("Source:", _img(0), "Edited:", _img(k + 1, 64, 48 + 16 * k),
                             "Rate it." + " Briefly." * k), answer_prefix="It is")
               for k in range(3)]
    sampling = dict(max_new_tokens=12, temperature=0.7, top_p=0.9, top_k=20, num_samples=3,
                    seed=42, seed_per_sample=True)
    calls = []
    generate = batched.model.generate

    def counting(*args, **kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        return generate(*args, **kwargs)

    batched.model.generate = counting
    try:
        one = [[g.text for g in gens] for gens in batched.generate(prompts, **sampling)]
        alone = [g.text for g in batched.generate(prompts[1:2], **sampling)[0]]
    finally:
        del batched.model.generate
    assert calls == [3, 1]  # one generate call per batch, the passes expanded inside
    ref = [[g.text for g in gens] for gens in loop.generate(prompts, **sampling)]
    assert one == ref
    assert alone == ref[1]  # an answer does not depend on what it was batched with
    assert all(len(set(row)) > 1 for row in ref)  # the passes differ (the seeds are used)
    # another seed changes the answers
    other = [[g.text for g in gens] for gens in batched.generate(prompts, **{**sampling, "seed": 7})]
    assert other != one


def test_a_static_cache_gives_the_dynamic_caches_answers(tiny_models):
    dynamic = TransformersVLM(tiny_models["qwen2.5-vl"], device="cpu")
    static = TransformersVLM.from_model(dynamic.model, dynamic.processor,
                                        settings={"generation_cache": "static"})
    static.generation_cache = "static"
    prompts = [Prompt(parts=("Edited:", _img(k + 1, 64, 48 + 16 * k), "Rate it." + " Now." * k),
                      answer_prefix="It is") for k in range(2)]
    for sampling in (dict(), dict(temperature=0.7, top_k=20, top_p=0.9, num_samples=2, seed=3,
                                  seed_per_sample=True)):
        a = [[g.text for g in gens] for gens in dynamic.generate(prompts, max_new_tokens=8,
                                                                  **sampling)]
        b = [[g.text for g in gens] for gens in static.generate(prompts, max_new_tokens=8,
                                                                 **sampling)]
        assert a == b
    with pytest.raises(BackendError, match="generation_cache"):
        TransformersVLM(tiny_models["qwen2.5-vl"], device="cpu", generation_cache="paged")
