"""``ieqa studio``: a web app for subjective studies of image edits.

Put edits in front of raters (personal invite links), collect ratings (``rate``: one
slider per dimension, EPAIQA's interface), group rankings (``rank``: drag and drop,
EditHF), pairwise verdicts with ties (``pairwise``, GenAI-Bench) or critique ratings
(``critique``: logicality, accuracy, usefulness, ReasonEdit), watch progress and agreement
on the admin page, and export the answers in the formats ``ieqa mos`` and ``ieqa
rank-editors --rankings`` read.

Examples:
    >>> from ieqa.data.shapesedit import ShapesEditConfig, generate
    >>> from ieqa.studio import StudyConfig, create_app, create_study
    >>> manifest = generate("edits", ShapesEditConfig(n=6, k=3, size=64))  # or your own
    >>> store = create_study(manifest, "study.sqlite", StudyConfig(raters=3, per_item=2))
    >>> len(store.raters())
    3
    >>> app = create_app(store)  # a FastAPI app; serve it with uvicorn

Modules: :mod:`.store` (SQLite, WAL, one transaction per submission, revisions, skips,
the organiser's actions), :mod:`.design` (items, gold, training, assignment, order),
:mod:`.security` (tokens, CSRF, form ids, per-study cookies), :mod:`.guidelines`,
:mod:`.analysis` (progress, agreement, rater flags), :mod:`.simulate` (simulated raters),
:mod:`.export`, :mod:`.app` (the web app: :mod:`.routes` by concern, around the
shared :mod:`.state`).
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from ieqa.studio.design import DEFAULT_DIMENSIONS, PROTOCOLS, StudyConfig, parse_scale, plan_study
from ieqa.studio.export import (
    export_study,
    write_preferences_jsonl,
    write_rankings_jsonl,
    write_ratings_csv,
)
from ieqa.studio.security import new_token, study_id_of
from ieqa.studio.store import Store, StudioError

__all__ = ["DEFAULT_DIMENSIONS", "PROTOCOLS", "Store", "StudioError", "StudyConfig", "create_app",
           "create_study", "export_study", "open_study", "parse_scale", "write_preferences_jsonl",
           "write_rankings_jsonl", "write_ratings_csv"]


def create_study(manifest: str | os.PathLike[str], db: str | os.PathLike[str],
                 config: StudyConfig | None = None, *,
                 guidelines: str | os.PathLike[str] | None = None) -> Store:
    """Read ``manifest``, plan the study (:func:`ieqa.studio.design.plan_study`) and write
    it to a new SQLite file ``db``; returns its :class:`Store`. ``guidelines``: a Markdown
    file the raters read first (:mod:`ieqa.studio.guidelines`)."""
    from ieqa.data.manifest import read_manifest
    from ieqa.studio.guidelines import read_guidelines

    config = config or StudyConfig()
    guide = None if guidelines is None else read_guidelines(guidelines)
    manifest = Path(manifest)
    if not manifest.is_file():
        raise StudioError(f"manifest {manifest} does not exist; make one with ieqa manifest (or ieqa "
                          "synth for a synthetic set)")
    samples = read_manifest(manifest)
    plan = plan_study(samples, config)
    store = Store(db)
    secret = secrets.token_hex(32)
    store.create({"config": config.to_json(), "manifest": str(manifest.resolve()),
                  "secret": secret, "study_id": study_id_of(secret), "admin_token": new_token(),
                  "created": time.time(), **({} if guide is None else {"guidelines": guide.to_json()})},
                 plan.items, plan.raters, plan.assignments)
    return store


def open_study(db: str | os.PathLike[str]) -> Store:
    """The study in ``db`` (raises :class:`StudioError` when there is none)."""
    store = Store(db)
    if not store.exists():
        if Path(db).exists():
            raise StudioError(f"{db} is not an ieqa studio file (it holds no study); pass the --db "
                              "of an existing study, or a path that does not exist yet for a new one")
        raise StudioError(f"{db} holds no study; create one with ieqa studio MANIFEST --db {db}")
    store.migrate()
    return store


def create_app(store: Store, **kw: object):  # noqa: ANN201 - fastapi is an optional dependency
    """The FastAPI app of a study (:func:`ieqa.studio.app.create_app`)."""
    from ieqa.studio.app import create_app as _create

    return _create(store, **kw)
