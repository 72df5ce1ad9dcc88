"""What every judge built on its authors' prompt files shares: reading the texts (from a
local copy, ``--prompts``, or the pinned files, :mod:`ieqa.prompts.published`), recording
which texts it used in its readout config, and a config without the template (the
prompts are the authors' files, not an ieqa template)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ieqa.prompts.published import PublishedText, load_texts, prompts_record

__all__ = ["PublishedPrompts"]


class PublishedPrompts:
    """Mixin of a :class:`~ieqa.scorers.vlm.base.VLMScorer` whose prompts are its authors'
    texts (put it before the scorer class in the bases)."""

    #: the authors' texts the judge's prompts are built from (recorded in its config)
    prompt_sources: tuple[PublishedText, ...] = ()
    #: the local copy they were read from (None: the pinned files)
    prompts_dir: str | None = None

    def load_prompts(self, prompts: str | Path | None) -> dict[str, str]:
        """The authors' texts, from ``prompts`` (a local copy, ``--prompts``) or the pinned
        files; which one is kept for the config."""
        self.prompts_dir = str(prompts) if prompts is not None else None
        return load_texts(self.prompt_sources, prompts_dir=prompts)

    def prompts_config(self) -> dict[str, Any]:
        """The readout config's record of the texts used (``prompts``, ``provenance``)."""
        return {"prompts": prompts_record(self.prompt_sources, self.prompts_dir),
                "provenance": {"prompts": self.prompts_dir}}

    def config(self) -> dict[str, Any]:
        out = super().config()  # type: ignore[misc]
        out.pop("template", None)  # the prompts are the authors' files, not a template
        return out
