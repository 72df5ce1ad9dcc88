"""The organiser's guidelines of a study: a Markdown file, rendered safely.

``ieqa studio ... --guidelines FILE.md`` stores the file's text with the study
(:func:`read_guidelines`); the raters see it before their first item and from every
task page (key ``G``). :func:`render_guidelines` turns it into HTML with markdown-it
(CommonMark):

* raw HTML in the file is shown as text, never run (``html=False``); link targets go
  through markdown-it's URL check (no ``javascript:`` or ``data:`` links) and open in a
  new tab without a referrer;
* images are allowed from the guidelines file's own folder (and below it) only: each is
  served as ``/guidelines/img/N`` (by number, never by a path from a request); an image
  elsewhere (``../``, an absolute path, a URL, a missing file, not an image) is refused
  when the study is created, with a message naming it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ieqa.studio.store import StudioError

__all__ = ["Guidelines", "read_guidelines", "render_guidelines"]

#: the largest guidelines file accepted (characters)
MAX_CHARS = 200_000


@dataclass(frozen=True)
class Guidelines:
    """A study's guidelines: the Markdown ``text``, where it came from (``source``) and
    the image files it shows (``images``, absolute paths, in order of first use)."""

    text: str
    source: str
    images: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The guidelines as stored in the study file."""
        return {"text": self.text, "source": self.source, "images": list(self.images)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Guidelines:
        """Inverse of :meth:`to_json`."""
        return cls(d["text"], d["source"], tuple(d["images"]))


def _parser():  # noqa: ANN202 - a MarkdownIt
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")


def read_guidelines(path: str | os.PathLike[str]) -> Guidelines:
    """Read a guidelines file and check its images (see the module docstring); raises
    :class:`StudioError` saying what to fix."""
    path = Path(path)
    if not path.is_file():
        raise StudioError(f"--guidelines {path}: no such file; give a Markdown file (e.g. guidelines.md)")
    text = path.read_text(encoding="utf-8")
    if len(text) > MAX_CHARS:
        raise StudioError(f"--guidelines {path}: {len(text)} characters, more than {MAX_CHARS}; shorten it")
    folder = path.resolve().parent
    images: list[str] = []
    for src in _image_sources(text):
        images.append(str(_allowed_image(src, folder, path)))
    return Guidelines(text, str(path.resolve()), tuple(dict.fromkeys(images)))


def _image_sources(text: str) -> list[str]:
    """The ``src`` of every image in the Markdown ``text``, in order."""
    out = []
    for token in _parser().parse(text):
        for child in token.children or []:
            if child.type == "image":
                out.append(str(child.attrGet("src") or ""))
    return out


def _allowed_image(src: str, folder: Path, path: Path) -> Path:
    """The file an image reference names, when it lies in ``folder`` (or below) and is an
    image; else :class:`StudioError`."""
    from PIL import Image

    where = f"--guidelines {path}: image {src!r}"
    if not src or "://" in src or src.startswith(("/", "data:", "\\")) or ":" in src.split("/")[0]:
        raise StudioError(f"{where}: only images in the guidelines' folder are shown; copy it to "
                          f"{folder} and write its relative path")
    from urllib.parse import unquote

    target = (folder / unquote(src)).resolve()
    if folder != target and folder not in target.parents:
        raise StudioError(f"{where} lies outside {folder}; copy it there and write its relative path")
    if not target.is_file():
        raise StudioError(f"{where}: no such file ({target})")
    try:
        with Image.open(target) as im:
            im.verify()
    except Exception:  # noqa: BLE001 - any unreadable file is refused the same way
        raise StudioError(f"{where}: {target} is not an image Pillow can read") from None
    return target


def render_guidelines(guidelines: Guidelines) -> str:
    """The guidelines as HTML (see the module docstring): images point to
    ``/guidelines/img/N`` (N: their index in ``guidelines.images``)."""
    md = _parser()
    folder = Path(guidelines.source).parent
    index = {p: i for i, p in enumerate(guidelines.images)}

    def image(self, tokens, idx, options, env):  # noqa: ANN001, ANN202 - markdown-it's renderer signature
        token = tokens[idx]
        from urllib.parse import unquote

        src = str(token.attrGet("src") or "")
        target = str((folder / unquote(src)).resolve()) if src and "://" not in src else ""
        alt = self.renderInlineAsText(token.children or [], options, env)
        if target not in index:  # the file changed since the study stored it: show the text only
            return f'<span class="missing-image">[{_escape(alt)}]</span>'
        return (f'<img src="/guidelines/img/{index[target]}" alt="{_escape(alt)}" loading="lazy" '
                'class="guideline-image">')

    def link_open(self, tokens, idx, options, env):  # noqa: ANN001, ANN202
        tokens[idx].attrSet("target", "_blank")
        tokens[idx].attrSet("rel", "noopener noreferrer")
        return self.renderToken(tokens, idx, options, env)

    md.add_render_rule("image", image)
    md.add_render_rule("link_open", link_open)
    return md.render(guidelines.text)


def _escape(text: str) -> str:
    from html import escape

    return escape(text, quote=True)
