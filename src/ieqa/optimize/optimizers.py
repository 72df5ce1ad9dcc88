"""Optimisers: :class:`ChatOptimizer` (an OpenAI-compatible server) and :class:`LocalOptimizer`
(a local transformers causal LM); any ``optimizer(messages) -> str | OptimizerReply`` works.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.optimize.records import OptimizerError, OptimizerReply
from ieqa.prompts.redefine import FDMPOError


# ------------------------------------------------------------------------ optimisers
def _usage(raw: Any) -> dict[str, int] | None:
    if not isinstance(raw, Mapping):
        return None
    p, c = raw.get("prompt_tokens"), raw.get("completion_tokens")
    if isinstance(p, int) and isinstance(c, int):
        return {"prompt_tokens": p, "completion_tokens": c}
    return None


class ChatOptimizer:
    """An optimiser served by an OpenAI-compatible ``/chat/completions`` endpoint.

    Uses :class:`ieqa.backends.OpenAICompatBackend` (its per-request timeout, retries with
    backoff on timeouts / 429 / 5xx, and error messages). Token usage comes from the
    answer's ``usage`` field; a server without one leaves it unknown.

    Args:
        base_url: the API root, e.g. ``http://localhost:8000/v1``.
        model: the served model's name.
        timeout_s: limit of each network operation, in seconds (> 0).
        max_retries: transport retries of one call (>= 0) before it counts as a failure.
        max_new_tokens: most tokens of one answer.
        temperature: sampling temperature (0: greedy, the deterministic choice).
        seed: sampling seed sent with each call (``None``: none).
        backend_options: further :class:`OpenAICompatBackend` arguments.
    """

    def __init__(self, base_url: str, model: str, *, timeout_s: float = 120.0,
                 max_retries: int = 2, max_new_tokens: int = 1024, temperature: float = 0.0,
                 seed: int | None = None, backend_options: Mapping[str, Any] | None = None
                 ) -> None:
        from ieqa.backends.openai_compat import OpenAICompatBackend

        options = {"max_consecutive_failures": 0,  # the optimiser's failure budget rules
                   **dict(backend_options or {})}
        self.backend = OpenAICompatBackend(base_url, model, timeout_s=timeout_s,
                                           max_retries=max_retries, max_concurrency=1,
                                           **options)
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.seed = seed

    def config(self) -> dict[str, Any]:
        return {"kind": "chat", **self.backend.config(), "max_new_tokens": self.max_new_tokens,
                "temperature": self.temperature, "seed": self.seed}

    def __call__(self, messages: Sequence[Mapping[str, str]]) -> OptimizerReply:
        from ieqa.backends.base import Prompt

        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system") or None
        user = "\n\n".join(m["content"] for m in messages if m["role"] != "system")
        gen = self.backend.generate([Prompt(parts=(user,), system=system)],
                                    max_new_tokens=self.max_new_tokens,
                                    temperature=self.temperature, seed=self.seed)[0][0]
        usage = _usage(gen.raw.get("usage"))
        if gen.error is not None:
            kind = "timeout" if gen.error_kind == "timeout" else "http"
            raise OptimizerError(gen.error, kind, usage)
        return OptimizerReply(gen.text, usage)

    def close(self) -> None:
        self.backend.close()


class LocalOptimizer:
    """An optimiser run in-process: a transformers causal LM from a local folder (or a hub
    id where the network allows), greedy decoding, exact token counts as usage.

    Args:
        path: the model folder (``config.json``, weights, tokenizer).
        max_new_tokens: most tokens of one answer.
        device: ``"cpu"``, ``"cuda"``... (default: CUDA when available).
    """

    def __init__(self, path: str | Path, *, max_new_tokens: int = 512,
                 device: str | None = None) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - torch/transformers are core here
            raise FDMPOError(f"--optimizer-local needs torch and transformers ({exc})") from None
        self.path = str(path)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.path)
            self.model = AutoModelForCausalLM.from_pretrained(self.path).to(self.device).eval()
        except (OSError, ValueError) as exc:
            raise FDMPOError(f"cannot load the optimiser model {self.path!r} as a causal LM: "
                             f"{exc}") from None
        self.max_new_tokens = int(max_new_tokens)

    def config(self) -> dict[str, Any]:
        return {"kind": "local", "path": self.path, "max_new_tokens": self.max_new_tokens}

    def __call__(self, messages: Sequence[Mapping[str, str]]) -> OptimizerReply:
        import torch

        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            text = tok.apply_chat_template([dict(m) for m in messages], tokenize=False,
                                           add_generation_prompt=True)
        else:
            text = "\n\n".join(m["content"] for m in messages) + "\n\n"
        ids = tok(text, return_tensors="pt", add_special_tokens=False).to(self.device)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        with torch.no_grad():
            out = self.model.generate(**ids, max_new_tokens=self.max_new_tokens,
                                      do_sample=False, pad_token_id=pad)
        new = out[0, ids["input_ids"].shape[1]:]
        return OptimizerReply(tok.decode(new, skip_special_tokens=True),
                              {"prompt_tokens": int(ids["input_ids"].shape[1]),
                               "completion_tokens": int(new.shape[0])})
