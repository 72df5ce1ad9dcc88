"""``ieqa manifest``: write the manifest ieqa infers from a folder of edits.

::

    ieqa manifest FOLDER -o manifest.jsonl      # or .parquet

The folder layout is that of :mod:`ieqa.data.inputs` (``source/``, ``edited/`` or
``edited/<editor>/``, ``instructions.csv``). The manifest lists one row per edited image
with paths relative to the manifest's folder when the images lie under it; inspect it,
edit it (add ids, tasks, groups, human scores) and give it to ``ieqa score``. Edited
images that cannot become a row (no source, no instruction) are listed and left out; the
exit status is then 3 unless ``--allow-errors``.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from ieqa.commands.options import EXIT_PARTIAL
from ieqa.data.inputs import BadRow, is_edit_folder, iter_folder
from ieqa.data.manifest import write_manifest

NAME = "manifest"
console = Console()
EXIT_LEFT_OUT = EXIT_PARTIAL  # the contract's 3 (ieqa.commands.options)


def command(
    folder: Path = typer.Argument(..., exists=True, file_okay=False,
                                  help="folder with source/, edited/[<editor>/] and "
                                       "instructions.csv"),
    out: Path = typer.Option(..., "--out", "-o", help="manifest to write (.jsonl or .parquet)"),
    allow_errors: bool = typer.Option(False, "--allow-errors",
                                      help="exit 0 even when some edited images were left out"),
) -> None:
    """Write the manifest of a folder of edits (one row per edited image) for inspection or editing."""
    if not is_edit_folder(folder):
        raise typer.BadParameter(f"{folder} has no edited/ folder; the layout is "
                                 "source/<name>.<ext>, edited/[<editor>/]<name>.<ext> and "
                                 "instructions.csv (columns name,instruction)", param_hint="FOLDER")
    if not out.name.endswith((".jsonl", ".jsonl.gz", ".parquet")):
        raise typer.BadParameter("the manifest must end in .jsonl, .jsonl.gz or .parquet",
                                 param_hint="--out")
    items = list(iter_folder(folder))
    bad = [i for i in items if isinstance(i, BadRow)]
    samples = [i for i in items if not isinstance(i, BadRow)]
    write_manifest(samples, out)
    editors = sorted({s.editor or "-" for s in samples})
    console.print(f"wrote [bold]{escape(str(out))}[/bold]: {len(samples)} edits of "
                  f"{len({s.group_id for s in samples})} sources by {len(editors)} editor(s) "
                  f"({escape(', '.join(editors))})")
    for b in bad[:20]:
        console.print(f"[yellow]left out[/yellow] {escape(b.error)}")
    if len(bad) > 20:
        console.print(f"... and {len(bad) - 20} more left out")
    if bad and not allow_errors:
        console.print(f"[red]{len(bad)} edited images were left out[/red]: fix them and run again, "
                      "or pass --allow-errors (ieqa score FOLDER records them as error rows)")
        raise typer.Exit(EXIT_LEFT_OUT)
