"""The CLI reference page, generated from the Typer app at build time.

``docs/reference/cli.md`` holds the marker ``<!-- cli-reference -->``; this MkDocs hook
replaces it with one section per ``ieqa`` command, built from the command object Typer
makes of :data:`ieqa.cli.app` (``typer.main.get_command``): the usage line, the help
text and every parameter's own help record (the text ``ieqa COMMAND --help`` shows). The
page therefore cannot fall behind the code. Print it with::

    PYTHONPATH=src python docs/hooks/cli_reference.py
"""

from __future__ import annotations

import inspect
from typing import Any

MARKER = "<!-- cli-reference -->"


def _cell(text: str) -> str:
    """Markdown table cell: escaped pipes, no line breaks."""
    return " ".join(text.split()).replace("|", "\\|")


def _text(text: str) -> str:
    """Help text as Markdown text: ``<`` and ``>`` shown, not read as HTML."""
    return _cell(text).replace("<", "&lt;").replace(">", "&gt;")


def _params_table(command: Any, ctx: Any) -> list[str]:
    rows = []
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        name, help_text = record
        kind = "argument" if type(param).__name__.endswith("Argument") else "option"
        rows.append(f"| `{_cell(name)}` | {kind} | {_text(help_text)} |")
    if not rows:
        return []
    return ["| parameter | kind | description |", "|---|---|---|", *rows, ""]


def cli_markdown() -> str:
    """The reference of every ``ieqa`` command as Markdown (``##`` per command)."""
    import typer

    from ieqa.cli import app

    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="ieqa")
    lines = [
        "## ieqa", "",
        inspect.cleandoc(root.help or ""), "",
        "```text", root.get_usage(ctx), "```", "",
        *_params_table(root, ctx),
    ]
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = command.context_class(command, info_name=name, parent=ctx)
        lines += [f"## ieqa {name}", "", inspect.cleandoc(command.help or ""), "",
                  "```text", command.get_usage(sub), "```", "",
                  *_params_table(command, sub)]
    return "\n".join(lines).rstrip() + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs hook: fill the marker of the CLI reference page."""
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_markdown())
    return markdown


if __name__ == "__main__":
    print(cli_markdown())
