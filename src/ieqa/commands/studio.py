"""``ieqa studio``: run a subjective study of a manifest's edits in the browser.

::

    ieqa studio edits/manifest.jsonl --db study.sqlite --raters 5 --per-item 3     # create + serve
    ieqa studio edits/manifest.jsonl --db study.sqlite                             # resume
    ieqa studio edits/manifest.jsonl --db study.sqlite --export ratings.csv        # export, no server
    ieqa studio edits/manifest.jsonl --db study.sqlite --add-raters 2 --revoke rater-03 --no-serve

The first run plans the study (protocol, dimensions, scale, raters, raters per item, gold
and training items) and writes it to ``--db``; later runs reopen it (the design options
must then be left out or match). The server prints the admin link and one invite link
per rater (``--links FILE`` also writes them to a file). ``--export FILE`` writes the
answers (ratings CSV for ``ieqa mos``; rankings JSONL for ``ieqa rank-editors
--rankings``; preferences JSONL; ``answers.jsonl``: the full log with skips and revisions)
and exits; ``--export-training FILE`` the training answers. The organiser's actions
(``--add-raters``, ``--revoke``, ``--reissue``, ``--close``) and ``--guidelines`` (which
replaces the stored guidelines on a running study) apply before anything else. See
``docs/howto/studio.md``.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from ieqa.commands._net import is_loopback

NAME = "studio"
console = Console(stderr=True)

#: design options that mean something for some protocols only (refused for the others
#: rather than stored and ignored)
_ONLY_FOR = {"scale": ("rate", "critique"), "tie_margin": ("rank", "pairwise")}
_DESIGN = ("protocol", "dimensions", "scale", "raters", "per_item", "gold", "training", "gold_from",
           "gold_min", "tie_margin", "seed", "title", "untouched", "revise_any", "min_seconds", "max_share")


def command(
    manifest: Path = typer.Argument(..., help="the edits to study (a manifest: .jsonl, .jsonl.gz, "
                                    ".parquet or .csv)"),
    db: Path = typer.Option(..., "--db", dir_okay=False, help="the study's SQLite file: created on the "
                            "first run, reopened (resumed) later"),
    protocol: str | None = typer.Option(None, "--protocol", help="rate (sliders, default) | rank (drag "
                                        "and drop within a group) | pairwise (A vs B with ties) | "
                                        "critique (rate meta.critique)"),
    dimensions: str | None = typer.Option(None, "--dimensions", help="what raters judge, comma "
                                          "separated (aliases allowed); default: the four core "
                                          "dimensions for rate, overall for rank and pairwise, "
                                          "logicality,accuracy,usefulness for critique"),
    scale: str | None = typer.Option(None, "--scale", help="slider range LO-HI (rate, critique); "
                                     "default 1-5"),
    raters: int | None = typer.Option(None, "--raters", min=1, help="raters (invite links); default 3"),
    per_item: int | None = typer.Option(None, "--per-item", min=1, help="raters per item; default: "
                                        "all raters"),
    gold: int | None = typer.Option(None, "--gold", min=0, help="gold items (known answers) in "
                                    "every rater's list, to screen raters; default 0"),
    training: int | None = typer.Option(None, "--training", min=0, help="training items shown "
                                        "first, with the reference answer; default 0"),
    gold_from: str | None = typer.Option(None, "--gold-from", help="known answers: meta (the "
                                         "samples' meta.gold, default) or scores (their scores)"),
    gold_min: float | None = typer.Option(None, "--gold-min", min=0.0, max=1.0, help="flag raters "
                                          "whose gold agreement is below this; default 0.7"),
    tie_margin: float | None = typer.Option(None, "--tie-margin", min=0.0, help="rank/pairwise "
                                            "gold: values closer than this tie; default 0"),
    seed: int | None = typer.Option(None, "--seed", help="seed of assignment and order; default 0"),
    title: str | None = typer.Option(None, "--title", help="shown on every page"),
    untouched: str | None = typer.Option(None, "--untouched", help="an answer with a slider never moved or "
                                         "a ranking left as shown: flag (stored with untouched=true, "
                                         "default) or refuse (the page asks the rater to set it)"),
    revise_any: bool | None = typer.Option(None, "--revise-any/--revise-last", help="raters may revise any "
                                           "earlier answer while the study is open (default: only their "
                                           "last one)"),
    min_seconds: float | None = typer.Option(None, "--min-seconds", min=0.0, help="flag raters whose "
                                             "median time per answer is below this; default 2"),
    max_share: float | None = typer.Option(None, "--max-share", min=0.5, max=1.0, help="flag raters "
                                           "who give one value or verdict (or straight-line, or leave "
                                           "rankings as shown) in more than this share of answers; "
                                           "default 0.9"),
    guidelines: Path | None = typer.Option(None, "--guidelines", dir_okay=False, help="a Markdown file "
                                           "the raters read before the first item and reopen with G "
                                           "(images from its folder); on a running study it replaces "
                                           "the stored one"),
    add_raters: int = typer.Option(0, "--add-raters", min=0, help="add N raters, given the items that "
                                   "still need ratings (and the gold and training items)"),
    revoke: list[str] = typer.Option([], "--revoke", help="revoke this rater's invite link (repeatable)"),
    reissue: list[str] = typer.Option([], "--reissue", help="give this rater a new invite link; the old "
                                      "one stops working (repeatable)"),
    close: bool = typer.Option(False, "--close", help="close the study: no more answers are taken"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to bind (raters on other "
                             "machines: 0.0.0.0, behind HTTPS)"),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="TCP port"),
    secure_cookies: bool = typer.Option(False, "--secure-cookies", help="mark cookies Secure "
                                        "(when served behind HTTPS)"),
    public_url: str | None = typer.Option(None, "--public-url", help="the base URL raters reach "
                                          "(for the printed links and the admin page's); default "
                                          "http://HOST:PORT"),
    links: Path | None = typer.Option(None, "--links", dir_okay=False, help="also write the admin "
                                      "and invite links to this file (tab-separated)"),
    export: Path | None = typer.Option(None, "--export", dir_okay=False, help="write the answers "
                                       "(.csv ratings / .jsonl rankings or preferences) and exit"),
    export_training: Path | None = typer.Option(None, "--export-training", dir_okay=False, help="write "
                                                "the training answers (same format as --export) and exit"),
    no_gold_export: bool = typer.Option(False, "--no-gold-export", help="--export: leave the gold "
                                        "items out"),
    no_serve: bool = typer.Option(False, "--no-serve", help="create (or check) the study, print "
                                  "the links and exit"),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level"),
) -> None:
    """Annotation studio: rate, rank, compare or critique edits in the browser; export for ieqa mos."""
    from ieqa.studio import StudioError, StudyConfig, export_study, parse_scale
    from ieqa.studio.export import skipped

    given = {"protocol": protocol, "dimensions": dimensions, "scale": scale, "raters": raters,
             "per_item": per_item, "gold": gold, "training": training, "gold_from": gold_from,
             "gold_min": gold_min, "tie_margin": tie_margin, "seed": seed, "title": title,
             "untouched": untouched, "revise_any": revise_any, "min_seconds": min_seconds,
             "max_share": max_share}
    try:
        if given["dimensions"] is not None:
            given["dimensions"] = tuple(d.strip() for d in dimensions.split(",") if d.strip())
        if given["scale"] is not None:
            given["scale"] = parse_scale(scale)
        store = _open_or_create(manifest, db, {k: v for k, v in given.items() if v is not None}, guidelines)
        meta = store.meta()
        config = StudyConfig.from_json(meta["config"])
        _organise(store, config, add_raters, revoke, reissue, close)
        base = (public_url or f"http://{host}:{port}").rstrip("/")
        rows = [("admin", f"{base}/admin/login?token={meta['admin_token']}")]
        rows += [(rid, f"{base}/invite/{token}") for rid, token in store.raters()]
        if links is not None:  # with --export too
            _write_private(links, "".join(f"{who}\t{url}\n" for who, url in rows))
        if export is not None or export_training is not None:
            for path, part in ((export, "study"), (export_training, "training")):
                if path is None:
                    continue
                what, n = export_study(store, path, include_gold=not no_gold_export, part=part)
                n_skip = skipped(store, part, include_gold=not no_gold_export)
                console.print(f"wrote {n} {what} of the {config.protocol} study to {escape(str(path))}"
                              + (f"; {n_skip} \"cannot judge\" answer(s) are not ratings and are left out "
                                 "(they are in the answers.jsonl log, with their reasons)" if n_skip and
                                 not str(path).endswith("answers.jsonl") else ""))
            return
    except StudioError as exc:
        raise typer.BadParameter(str(exc)) from None
    console.print(f"{config.protocol} study of {escape(meta['manifest'])} in {escape(str(db))}: "
                  f"{config.raters} rater(s), {config.per_item} per item, dimensions "
                  f"{', '.join(config.dimensions)}")
    for who, url in rows:
        console.print(f"  {who:>9}  {escape(url)}", soft_wrap=True)
    if no_serve:
        return
    try:
        import uvicorn

        from ieqa.studio.app import create_app
    except ImportError as exc:
        raise typer.BadParameter(f"ieqa studio needs the studio extra ({exc}); install it with "
                                 "pip install 'ieqa[studio]'") from None
    if not is_loopback(host) and not secure_cookies:
        console.print(f"[yellow]warning:[/] --host {escape(host)} accepts other machines over plain "
                      "HTTP, where invite and admin tokens travel in the clear: put the studio behind "
                      "an HTTPS proxy and pass --secure-cookies and --public-url https://...")
    app = create_app(store, secure_cookies=secure_cookies, public_url=public_url)
    console.print(f"serving on http://{host}:{port} (Ctrl-C stops; answers are saved as they come)")
    uvicorn.run(app, host=host, port=port, log_level=log_level)


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable by its owner only (it holds the tokens, like
    the study file); its folder is created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode through os.open
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def _as_option(key: str, value: object) -> str:
    """A design setting as the command-line option that gives it."""
    if key == "revise_any":
        return "--revise-any" if value else "--revise-last"
    if key == "dimensions":
        value = ",".join(value)  # type: ignore[arg-type]
    elif key == "scale":
        value = "{:g}-{:g}".format(*value)  # type: ignore[str-format]
    return f"--{key.replace('_', '-')} {value}"


def _organise(store, config, add: int, revoke: list[str], reissue: list[str], close: bool) -> None:  # noqa: ANN001
    """The organiser's actions of the command line, each said as done."""
    from ieqa.studio.security import new_token

    for rater in revoke:
        store.revoke(rater)
        console.print(f"revoked {escape(rater)}: the link opens nothing now; their answers stay")
    for rater in reissue:
        store.reissue(rater, new_token())
        console.print(f"re-issued {escape(rater)}'s link (printed below); the old one stopped working")
    if add:
        if store.closed() is not None:
            from ieqa.studio import StudioError

            raise StudioError("the study is closed; raters cannot be added")
        for rid, _, n in store.add_raters(add, config.seed):
            console.print(f"added {rid} with {n} item(s)")
    if close:
        store.close()
        console.print("closed the study: no more answers are taken (export them with --export)")


def _open_or_create(manifest: Path, db: Path, given: dict, guidelines: Path | None = None):  # noqa: ANN202 - a Store
    """The study in ``db``: created from ``manifest``, the given design options and
    guidelines, or reopened (then the options given must match the stored ones; given
    guidelines replace the stored ones)."""
    import dataclasses

    from ieqa.studio import StudioError, StudyConfig, create_study, open_study
    from ieqa.studio.guidelines import read_guidelines

    if not db.exists():  # create_study says what to do when the manifest is missing
        protocol = given.get("protocol", "rate")
        for key, protocols in _ONLY_FOR.items():
            if key in given and protocol not in protocols:
                raise StudioError(f"--{key.replace('_', '-')} applies to {' and '.join(protocols)} "
                                  f"studies, not {protocol}; leave it out")
        given.setdefault("per_item", given.get("raters", 3))
        return create_study(manifest, db, StudyConfig(**given), guidelines=guidelines)
    store = open_study(db)
    meta = store.meta()
    if Path(meta["manifest"]) != manifest.resolve():
        raise StudioError(f"{db} studies {meta['manifest']}, not {manifest.resolve()}; pass that "
                          "manifest, or another --db for a new study")
    stored = StudyConfig.from_json(meta["config"])
    if "dimensions" in given:  # aliases (PQ) compare as their canonical names
        given["dimensions"] = dataclasses.replace(stored, dimensions=given["dimensions"]).dimensions
    diff = [k for k in _DESIGN if k in given and given[k] != getattr(stored, k)]
    if diff:
        raise StudioError(f"{db} already holds a study with other settings: it has "
                          + ", ".join(_as_option(k, getattr(stored, k)) for k in diff) + ", you gave "
                          + ", ".join(_as_option(k, given[k]) for k in diff)
                          + "; leave those options out to resume it, or pass another --db for a new study")
    if guidelines is not None:  # after every check: a refused command changes nothing
        new = read_guidelines(guidelines).to_json()
        if new != meta.get("guidelines"):
            store.set_meta("guidelines", new)
            console.print(f"guidelines of the study replaced by {escape(str(guidelines))}")
    return store
