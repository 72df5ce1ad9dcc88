"""The studio's web app: FastAPI routes, server-rendered pages (Jinja2, autoescaped).

Rater pages (cookie set by the invite link ``/invite/TOKEN``; the cookie names carry the
study id, so studies on one host keep their own sessions; an invite for another rater
opened in a signed-in browser asks before switching, ``POST /invite/TOKEN/switch``):

* ``GET /study``: progress, continue / pause; ``GET /study/next``: the first unanswered
  item; ``GET /study/task/N``: the N-th item of *this* rater's list (no other rater's list
  is reachable: items are looked up by the rater's own position);
* ``POST /study/task/N``: the answer. Checked (CSRF token of the session, form id issued
  for this rater and item, values in range, a ranking that is a permutation of the
  candidates, a known verdict; with ``--untouched refuse`` every slider moved and every
  ranking arranged, as the page's script reports), then written in one transaction; only then is the page answered
  (303 to the next item, or to the training feedback). Posting one form twice is a
  no-op (the form id is UNIQUE in the store); a form for an item answered meanwhile (a
  second tab) gets "already answered — revise?";
* ``POST /study/task/N/skip``: "cannot judge", with a reason; ``GET /study/task/N/revise``:
  the form again, filled with the current answer (the last answered item, or any with
  ``revise_any``, while the study is open); the replaced answer is kept in the history;
* ``GET /study/guidelines``: the organiser's guidelines (shown before the first item;
  key ``G`` opens them over every task page), images at ``/guidelines/img/N``;
* ``GET /media/KEY/SLOT``: an image of an item on the rater's list: the file the manifest
  named for that item (``source`` or candidate ``cI``), never a path from the request.

Admin pages (``/admin/login?token=ADMIN`` sets a cookie; ``Authorization: Bearer ADMIN``
works too): ``GET /admin`` (progress per rater and item, agreement, flagged raters, invite
links, skips and revisions), ``GET /admin/export/ratings.csv`` | ``rankings.jsonl`` |
``preferences.jsonl`` (``?part=training`` for the training answers) | ``answers.jsonl``
(every answer, skip and replaced answer, with times), and the organiser's actions
(``POST``, CSRF-checked): ``/admin/raters/add``, ``/admin/raters/ID/revoke``,
``/admin/raters/ID/reissue``, ``/admin/close``.

Every response carries a strict Content-Security-Policy (no inline script or style:
the page's JavaScript is ``/static/studio.js``), ``X-Content-Type-Options: nosniff`` and
``Referrer-Policy: no-referrer`` (invite links never leak through Referer headers).

:func:`create_app` only assembles: the routers of :mod:`ieqa.studio.routes` (by concern)
around one :class:`~ieqa.studio.state.StudioState`, which each route reaches through
:func:`ieqa.studio.state.studio`.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from ieqa.studio.routes import admin, exports, media, public, rater, tasks
from ieqa.studio.state import Denied, StudioState, denied, security_headers
from ieqa.studio.store import Store

__all__ = ["create_app"]


def create_app(store: Store, *, secure_cookies: bool = False, public_url: str | None = None) -> FastAPI:
    """The app of the study in ``store``. ``secure_cookies=True`` marks the session
    cookies Secure (serve it behind HTTPS then); ``public_url`` is the base URL raters
    reach (behind a reverse proxy), used for the invite links on the admin page
    (default: the URL the admin page was requested at)."""
    state = StudioState(store, secure_cookies=secure_cookies, public_url=public_url)
    app = FastAPI(title="ieqa studio", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.studio = state
    app.mount("/static", StaticFiles(packages=[("ieqa.studio", "static")]), name="static")
    app.middleware("http")(security_headers)
    app.add_exception_handler(Denied, denied)  # type: ignore[arg-type]
    for routes in (public, rater, media, tasks, admin, exports):
        app.include_router(routes.router)
    return app
