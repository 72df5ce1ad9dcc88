"""Tiny replicas of released evaluators in their authors' on-disk formats.

:func:`build_reward_release` writes what a reward model released as one state dict ships
(EditReward's ``TIGER-Lab/EditReward-*`` repositories): a single ``model.safetensors`` and
nothing else. It holds a tiny base VLM (:func:`ieqa.testing.build_tiny_vlm`) with the
special token added and the embeddings resized to the new vocabulary, plus random reward
heads ``rm_heads.head_<i>`` shaped as released: ``Linear(H, 1024) - ReLU - Dropout -
Linear(1024, 16) - ReLU - Linear(16, 2)`` (the tensors ``0``, ``3`` and ``5``). Random
weights: for tests of the loading and scoring code, never for scores.

:func:`build_lora_adapter` writes what a judge released as a LoRA adapter ships (EditScore's
``EditScore/EditScore-*``): a PEFT folder (``adapter_config.json`` and
``adapter_model.safetensors``) for a tiny base, with random non-zero LoRA weights so that
merging it changes the model.

:func:`build_lora_state_release` writes a package as ReasonEdit's release ships one: a LoRA
state dict without a config (the settings live in the authors' code), a regression head saved
with ``torch.save``, the processor files and, optionally, ``calibration.json``.
:func:`build_peft_head_release` writes one as RE-Reward's: a PEFT adapter folder plus
``score_head.pth`` and ``reward_head_config.json``. :func:`build_edithf_release` writes one
as EditHF's: per dimension, LoRA adapters named as InternVL's remote code names its modules
(a fused ``attn.qkv``, ``model.layers.*``) and an MLP head.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

__all__ = ["build_edithf_release", "build_lora_adapter", "build_lora_state_release",
           "build_peft_head_release", "build_reward_release",
           "write_prompt_standins",
           "RELEASE_HEAD_WIDTHS", "STANDIN_MARKER"]

#: the file :func:`write_prompt_standins` leaves in its folder
STANDIN_MARKER = "IEQA_STANDIN"

#: hidden widths of each released EditReward head (after the VLM's hidden size)
RELEASE_HEAD_WIDTHS: tuple[int, ...] = (1024, 16)


def build_reward_release(path: str | Path, base_model: str | Path, *, seed: int = 0,
                         num_heads: int = 2, outputs: int = 2,
                         widths: tuple[int, ...] = RELEASE_HEAD_WIDTHS,
                         special_token: str = "<|Reward|>",
                         layout: Literal["current", "legacy"] = "current",
                         head_std: float = 0.5) -> Path:
    """Write ``path/model.safetensors``: ``base_model`` (a local checkpoint folder) with
    ``special_token`` added, plus ``num_heads`` random heads; returns the file.

    Args:
        path: output folder (created; only the weights file is written).
        base_model: a local VLM folder, e.g. from :func:`ieqa.testing.build_tiny_vlm`.
        seed: seed of the heads and of the new token's embedding rows.
        num_heads: heads ``rm_heads.head_0`` ... (EditReward: 2).
        outputs: outputs per head (2: mu and log sigma).
        widths: hidden widths of a head.
        special_token: the token the tokenizer gains.
        layout: key names: ``"current"`` (``model.language_model.*``, ``model.visual.*``)
            or ``"legacy"`` (``model.layers.*``, ``visual.*``).
        head_std: standard deviation of the heads' random weights (large enough that the
            rewards of different edits differ visibly).
    """
    import torch
    from safetensors.torch import save_file
    from torch import nn
    from transformers import AutoModelForImageTextToText, AutoTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    tokenizer.add_special_tokens({"additional_special_tokens": [special_token]})
    model = AutoModelForImageTextToText.from_pretrained(base_model, dtype=torch.float32)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        # a distinct, visible embedding for the new token (resizing may leave it near zero)
        model.get_input_embeddings().weight.data[-1].normal_(0.0, 0.1)
        state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
        hidden = model.get_input_embeddings().weight.shape[1]
        for h in range(num_heads):
            layers: list[nn.Module] = []
            width = hidden
            for w in widths:
                layers += [nn.Linear(width, w), nn.ReLU(), nn.Dropout(0.05)]
                width = w
            layers = layers[:-1]  # released: no dropout after the last hidden ReLU
            layers.append(nn.Linear(width, outputs))
            head = nn.Sequential(*layers)
            for p in head.parameters():
                p.data.normal_(0.0, head_std / max(1.0, p.shape[-1] ** 0.5))
            for k, v in head.state_dict().items():
                state[f"rm_heads.head_{h}.{k}"] = v.contiguous()
    if layout == "legacy":
        renamed = {}
        for key, value in state.items():
            if key.startswith("model.visual."):
                key = key[len("model."):]
            elif key.startswith("model.language_model."):
                key = "model." + key[len("model.language_model."):]
            renamed[key] = value
        state = renamed
    elif layout != "current":
        raise ValueError(f"layout must be current or legacy, got {layout!r}")
    if "lm_head.weight" not in state:  # tied embeddings: the released files hold both
        state["lm_head.weight"] = state["model.language_model.embed_tokens.weight"
                                        if layout == "current" else "model.embed_tokens.weight"]
    out = path / "model.safetensors"
    save_file({k: v.clone() for k, v in state.items()}, str(out))
    return out


def write_prompt_standins(folder: str | Path, texts: object) -> Path:
    """Write stand-ins for published prompt files under ``folder``, laid out as the authors'
    repository: for each text of ``texts`` (:class:`ieqa.prompts.published.PublishedText`
    objects, e.g. a published scorer's ``PROMPT_SOURCES``), its constant at its file's path,
    holding its placeholders and markers in ieqa's own stand-in wording. Each file starts with a
    statement that stops a run, so a test also shows that the files are parsed, never
    executed. Use with ``--prompts FOLDER`` (the hashes are not the authors': load with
    ``verify=False``; a folder written here is marked by the file :data:`STANDIN_MARKER`,
    and :func:`ieqa.prompts.published.fetch_source` skips the check for it, saying so).
    Returns ``folder``.
    """
    import re

    folder = Path(folder)
    by_file: dict[str, list[object]] = {}
    for text in texts:  # type: ignore[attr-defined]
        by_file.setdefault(text.source.path, []).append(text)  # type: ignore[attr-defined]
    for rel, items in by_file.items():
        if rel.endswith(".json"):  # a JSON object of texts by key
            import json

            texts_by_key = {}
            for text in items:
                needed = [*("{" + p + "}" for p in text.placeholders),  # type: ignore[attr-defined]
                          *text.markers]  # type: ignore[attr-defined]
                texts_by_key[text.constant] = (  # type: ignore[attr-defined]
                    f"\nStand-in text for {text.name}: {' '.join(needed)}\n")  # type: ignore[attr-defined]
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(texts_by_key, indent=2) + "\n")
            continue
        lines = ["# ieqa stand-in for the authors' file of this path (ieqa.testing)",
                 'raise SystemExit("a prompt file is parsed, never executed")', ""]
        branches: dict[str, list[tuple[str, str, str, list[str]]]] = {}
        variables: dict[str, list[tuple[str, str]]] = {}  # function -> its variables
        for text in items:
            needed = [*("{" + p + "}" for p in text.placeholders),  # type: ignore[attr-defined]
                      *text.markers]  # type: ignore[attr-defined]
            body = f"\nStand-in text for {text.name}: {' '.join(needed)}\n"  # type: ignore[attr-defined]
            constant = text.constant  # type: ignore[attr-defined]
            fields = list(dict.fromkeys(  # the parameters in the placeholders' order
                p.split("|")[0] for p in text.placeholders))  # type: ignore[attr-defined]
            source = _fstring(body, text.placeholders)  # type: ignore[attr-defined]
            branch = re.fullmatch(r"(\w+)\((\w+)=(\w+)\)", constant)
            assigned = re.fullmatch(r"(\w+)\((\w+)\)", constant)
            if branch:  # one branch of an if/elif chain on a parameter, written below
                branches.setdefault(branch.group(1), []).append(
                    (branch.group(2), branch.group(3), source, fields))
            elif assigned:  # a variable of a function, calls as {call:NAME}
                parts = re.split(r"\{call:(\w+)\}", body)
                expr = " + ".join(repr(p) if i % 2 == 0 else f"{p}(*args)"
                                  for i, p in enumerate(parts) if p)
                variables.setdefault(assigned.group(1), []).append((assigned.group(2), expr))
            elif constant.endswith("()"):  # a prompt a function returns: an f-string
                owner, _, function = constant[:-2].rpartition(".")
                if owner:  # a method of a class
                    lines.append(f"class {owner}:\n    def {function}(self, {', '.join(fields)}):"
                                 f"\n        return f{source}")
                else:
                    lines.append(f"def {function}({', '.join(fields)}):\n    return f{source}")
            else:
                lines.append(f"{constant} = {body!r}")
        for function, assigned_vars in variables.items():  # one function, all its variables
            body_lines = [f"    {var} = {expr}" for var, expr in assigned_vars]
            lines.append(f"def {function}(*args):\n" + "\n".join(body_lines)
                         + f"\n    return {assigned_vars[0][0]}")
        for function, cases in branches.items():
            params = list(dict.fromkeys([f for case in cases for f in case[3]] + [cases[0][0]]))
            code = [f"def {function}({', '.join(params)}):"]
            for k, (param, value, source, _) in enumerate(cases):
                code.append(f"    {'if' if k == 0 else 'elif'} {param} == {value!r}:")
                code.append(f"        text = f{source}")
            code += ["    else:", "        raise ValueError(f'unknown {" + cases[0][0] + "}')",
                     "    return text"]
            lines.append("\n".join(code))
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    (folder / STANDIN_MARKER).write_text("stand-in prompt files written by ieqa.testing; not "
                                         "the authors' text\n")
    return folder


def _fstring(body: str, placeholders: object) -> str:
    """``body`` as the source of an f-string (after its ``f``): each placeholder
    ``{name}`` a field ``{name}``, ``{name|strip}`` a field ``{str(name).strip()}``, any
    other brace literal."""
    for p in placeholders:  # type: ignore[attr-defined]
        name, _, how = p.partition("|")
        expr = f"str({name}).strip()" if how == "strip" else name
        body = body.replace("{" + p + "}", "\x00" + expr + "\x01")
    source = repr(body).replace("{", "{{").replace("}", "}}")
    return source.replace("\\x00", "{").replace("\\x01", "}")


def _random_lora(base_model: str | Path, config: object, *, seed: int, std: float) -> object:
    """``base_model`` (float32) with LoRA layers of ``config``, all LoRA weights drawn
    from N(0, std²) after seeding torch with ``seed`` (non-zero B: merging changes the
    model); returns the :class:`peft.PeftModel`."""
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForImageTextToText

    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_pretrained(base_model, dtype=torch.float32)
    peft_model = get_peft_model(model, config)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_" in name:
                param.normal_(0.0, std)
    return peft_model


def build_lora_adapter(path: str | Path, base_model: str | Path, *, seed: int = 0,
                       rank: int = 4, alpha: int = 8,
                       target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj"),
                       ) -> Path:
    """Write a random LoRA adapter for ``base_model`` (a tiny VLM folder) to ``path`` in
    PEFT's layout, the language model's attention projections adapted (``target_modules``,
    rank ``rank``, scaling ``alpha / rank``). Returns ``path``."""
    from peft import LoraConfig

    path = Path(path)
    config = LoraConfig(r=rank, lora_alpha=alpha, init_lora_weights=False,
                        target_modules=rf".*language_model.*\.({'|'.join(target_modules)})")
    _random_lora(base_model, config, seed=seed, std=0.2).save_pretrained(str(path))
    return path


def build_lora_state_release(path: str | Path, base_model: str | Path, lora: dict, *,
                             seed: int = 0, head_outputs: int = 3,
                             calibration: dict | None = None) -> Path:
    """Write a package laid out as ReasonEdit's release for ``base_model`` (a tiny VLM):
    ``adapter_model.safetensors`` (random non-zero LoRA weights made with the settings
    ``lora``, e.g. :data:`ieqa.scorers.published.reasonedit.LORA`), ``regression_head.pt``
    (``Linear(H, H/2) - SiLU - Dropout - Linear(H/2, head_outputs)``, random), the base's
    processor files and, when given, ``calibration.json`` with ``calibration`` as its
    content. Returns ``path``."""
    import json

    import torch
    from peft import LoraConfig
    from peft.utils import get_peft_model_state_dict
    from safetensors.torch import save_file

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    peft_model = _random_lora(base_model, LoraConfig(task_type="CAUSAL_LM",
                                                     init_lora_weights=False, **lora),
                              seed=seed, std=0.05)
    model = peft_model.get_base_model()
    state = {k: v.contiguous() for k, v in get_peft_model_state_dict(peft_model).items()}
    save_file(state, str(path / "adapter_model.safetensors"))
    hidden = model.get_input_embeddings().weight.shape[1]
    head = torch.nn.Sequential(torch.nn.Linear(hidden, hidden // 2), torch.nn.SiLU(),
                               torch.nn.Dropout(0.1), torch.nn.Linear(hidden // 2, head_outputs))
    torch.save(head.state_dict(), path / "regression_head.pt")
    for item in Path(base_model).iterdir():  # the processor's files, as the release ships them
        if item.is_file() and item.name not in ("config.json", "model.safetensors",
                                                "generation_config.json", "ieqa_tiny.json"):
            (path / item.name).write_bytes(item.read_bytes())
    if calibration is not None:
        (path / "calibration.json").write_text(json.dumps(calibration, indent=2) + "\n")
    return path


def build_peft_head_release(path: str | Path, base_model: str | Path, lora: dict, *,
                            seed: int = 0, labels: int = 3, prefix: str = "layers.") -> Path:
    """Write a package laid out as RE-Reward's release for ``base_model`` (a tiny VLM): a
    PEFT adapter (``adapter_config.json``, ``adapter_model.safetensors``; random non-zero
    LoRA weights made with ``lora``), ``score_head.pth`` (``Linear(H, H/2) - SiLU - Dropout
    - Linear(H/2, labels)``, random, keys with ``prefix``) and ``reward_head_config.json``.
    Returns ``path``."""
    import json

    import torch
    from peft import LoraConfig

    path = Path(path)
    peft_model = _random_lora(base_model, LoraConfig(task_type="CAUSAL_LM",
                                                     init_lora_weights=False, **lora),
                              seed=seed, std=0.05)
    model = peft_model.get_base_model()
    peft_model.save_pretrained(str(path))
    hidden = model.get_input_embeddings().weight.shape[1]
    head = torch.nn.Sequential(torch.nn.Linear(hidden, hidden // 2), torch.nn.SiLU(),
                               torch.nn.Dropout(0.1), torch.nn.Linear(hidden // 2, labels))
    torch.save({prefix + k: v for k, v in head.state_dict().items()}, path / "score_head.pth")
    (path / "reward_head_config.json").write_text(json.dumps(
        {"hidden_size": hidden, "bottleneck": hidden // 2, "dropout": 0.1,
         "num_labels": labels}, indent=2) + "\n")
    return path


def build_edithf_release(path: str | Path, base_model: str | Path, *, seed: int = 0,
                         rank: int = 4, alpha: int = 8, language_rank: int = 8,
                         language_alpha: int = 4) -> Path:
    """Write a release laid out as EditHF's for ``base_model`` (a tiny ``internvl`` VLM of
    :func:`ieqa.testing.build_tiny_vlm`): ``lora_checkpoints_{visual,alignment,
    preservation}/`` each holding ``vision_lora/`` (LoRA on every vision layer's fused
    ``attn.qkv``, ``attn.proj``, ``mlp.fc1`` and ``mlp.fc2``, keyed as PEFT saves an adapter
    of InternVL's remote-code vision model), ``llm_lora/`` (LoRA on every language layer's
    projections, keyed as for its ``...ForCausalLM``; another rank and alpha) and
    ``mlp_head.pth`` (``mlp.0``/``mlp.2``/``mlp.4``: H - H/2 - 128 - 1). Random weights.
    Returns ``path``."""
    import json

    import torch
    from safetensors.torch import save_file
    from transformers import AutoConfig

    path = Path(path)
    config = AutoConfig.from_pretrained(base_model)
    vision, text = config.vision_config, config.text_config
    c, hidden = vision.hidden_size, text.hidden_size
    gen = torch.Generator().manual_seed(seed)

    def pair(prefix: str, d_in: int, d_out: int, r: int) -> dict[str, torch.Tensor]:
        return {f"base_model.model.{prefix}.lora_A.weight": torch.randn(r, d_in, generator=gen) * 0.2,
                f"base_model.model.{prefix}.lora_B.weight": torch.randn(d_out, r, generator=gen) * 0.2}

    def write(folder: Path, tensors: dict, r: int, a: int, targets: list[str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        save_file(tensors, str(folder / "adapter_model.safetensors"))
        (folder / "adapter_config.json").write_text(json.dumps(
            {"peft_type": "LORA", "r": r, "lora_alpha": a, "lora_dropout": 0.05,
             "target_modules": targets, "use_rslora": False, "bias": "none"}, indent=2))

    head_dims = (hidden, hidden // 2, 128, 1)
    kv = text.num_key_value_heads * text.head_dim
    q = text.num_attention_heads * text.head_dim
    for mode in ("visual", "alignment", "preservation"):
        folder = path / f"lora_checkpoints_{mode}"
        tensors: dict[str, torch.Tensor] = {}
        for i in range(vision.num_hidden_layers):
            layer = f"encoder.layers.{i}"
            tensors |= pair(f"{layer}.attn.qkv", c, 3 * c, rank)
            tensors |= pair(f"{layer}.attn.proj", c, c, rank)
            tensors |= pair(f"{layer}.mlp.fc1", c, vision.intermediate_size, rank)
            tensors |= pair(f"{layer}.mlp.fc2", vision.intermediate_size, c, rank)
        write(folder / "vision_lora", tensors, rank, alpha, ["qkv", "proj", "fc1", "fc2"])
        tensors = {}
        for i in range(text.num_hidden_layers):
            layer = f"model.layers.{i}"
            for name, d_in, d_out in (("self_attn.q_proj", hidden, q), ("self_attn.k_proj", hidden, kv),
                                      ("self_attn.v_proj", hidden, kv), ("self_attn.o_proj", q, hidden),
                                      ("mlp.gate_proj", hidden, text.intermediate_size),
                                      ("mlp.up_proj", hidden, text.intermediate_size),
                                      ("mlp.down_proj", text.intermediate_size, hidden)):
                tensors |= pair(f"{layer}.{name}", d_in, d_out, language_rank)
        write(folder / "llm_lora", tensors, language_rank, language_alpha,
              ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
        head = {}
        for index, (d_in, d_out) in zip((0, 2, 4), zip(head_dims, head_dims[1:], strict=False),
                                        strict=True):
            head[f"mlp.{index}.weight"] = torch.randn(d_out, d_in, generator=gen) / d_in ** 0.5
            head[f"mlp.{index}.bias"] = torch.randn(d_out, generator=gen) * 0.1
        torch.save(head, folder / "mlp_head.pth")
    return path
