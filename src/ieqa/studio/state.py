"""The studio app's shared state: :class:`StudioState` (the study's store, config, secret,
admin token, cookie names and settings, page templates and the rendered guidelines), who
is asking (the rater of the invite cookie, the admin token), a rater's progress, and the
page that a refused request (:class:`Denied`) gets. The routes of
:mod:`ieqa.studio.routes` reach their app's state through :func:`studio`;
:func:`ieqa.studio.app.create_app` builds one per app and adds :func:`security_headers`
and :func:`denied` to it."""

from __future__ import annotations

import hmac
import json
import time
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from ieqa.data.dimensions import list_dimensions
from ieqa.studio import security
from ieqa.studio.design import StudyConfig
from ieqa.studio.guidelines import Guidelines, render_guidelines
from ieqa.studio.store import Assignment, Item, Store

__all__ = ["CSP", "Denied", "StudioState", "denied", "security_headers", "studio"]

#: the Content-Security-Policy of every response (no inline script or style)
CSP = ("default-src 'none'; img-src 'self'; script-src 'self'; style-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


class Denied(Exception):
    """A request refused with ``status`` and a page saying ``message``."""

    def __init__(self, status: int, message: str) -> None:
        self.status, self.message = status, message


class StudioState:
    """What the routes of one app share: the study in ``store`` (migrated when the state
    is made), its config, secret and admin token, the cookie names and settings, the page
    templates and the guidelines rendered so far.

    Args:
        store: the study.
        secure_cookies: mark the session cookies Secure (serve it behind HTTPS then).
        public_url: the base URL raters reach (behind a reverse proxy), used for the
            invite links on the admin page (default: the URL the admin page was
            requested at).
    """

    def __init__(self, store: Store, *, secure_cookies: bool = False, public_url: str | None = None) -> None:
        store.migrate()
        self.store = store
        self.meta = store.meta()
        self.config = StudyConfig.from_json(self.meta["config"])
        self.secret: str = self.meta["secret"]
        self.admin_token: str = self.meta["admin_token"]
        self.rater_cookie, self.admin_cookie = security.cookie_names(self.meta["study_id"])
        self.secure_cookies, self.public_url = secure_cookies, public_url
        self.env = _templates()
        self.descriptions = list_dimensions()
        self.training_keys = {it.key for it in store.items("training")}  # items never change after creation
        self._rendered: dict[str, tuple[Guidelines, Markup]] = {}  # the stored guidelines' text -> rendered once

    def guidelines(self) -> tuple[Guidelines | None, Markup | None]:
        """The study's guidelines and their HTML (None without), as stored now (they can
        be replaced while the study runs; each version is rendered once)."""
        stored = self.store.meta().get("guidelines")
        if not stored:
            return None, None
        key = json.dumps(stored, sort_keys=True)
        if key not in self._rendered:
            g = Guidelines.from_json(stored)
            self._rendered.clear()
            self._rendered[key] = (g, Markup(render_guidelines(g)))  # noqa: S704 - markdown-it output, raw HTML escaped
        return self._rendered[key]

    def page(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        """Template ``name`` rendered with the study's title and config and ``ctx``."""
        html = self.env.get_template(name).render(title=self.config.title, config=self.config, **ctx)
        return HTMLResponse(html, status_code=status)

    def set_cookie(self, resp: Response, key: str, value: str) -> None:
        """A session cookie: HttpOnly, SameSite=Lax, Secure with ``secure_cookies``."""
        resp.set_cookie(key, value, httponly=True, samesite="lax", secure=self.secure_cookies,
                        max_age=90 * 24 * 3600, path="/")

    # ------------------------------------------------------------------ who is asking

    def session_rater(self, request: Request) -> tuple[str, str] | None:
        """``(rater id, invite token)`` of the request's rater cookie, or None."""
        token = request.cookies.get(self.rater_cookie, "")
        rater = self.store.rater_by_token(token) if token else None
        return None if rater is None else (rater, token)

    def rater_of(self, request: Request) -> tuple[str, str]:
        """``(rater id, invite token)`` of the request's rater cookie; 401 without one."""
        who = self.session_rater(request)
        if who is None:
            raise Denied(401, "Open your personal invite link to start or resume the study (a revoked "
                              "link opens nothing: ask the organiser for a new one).")
        return who

    def admin_session(self, request: Request) -> str | None:
        """The admin token of the request (Bearer header or cookie) when it is the
        study's (constant-time comparison), else None."""
        auth = request.headers.get("authorization", "")
        given = auth[7:].strip() if auth.lower().startswith("bearer ") else request.cookies.get(self.admin_cookie, "")
        if given and hmac.compare_digest(given.encode(), self.admin_token.encode()):
            return given
        return None

    def require_admin(self, request: Request) -> str:
        """The admin session of the request; 403 saying how to sign in without one."""
        session = self.admin_session(request)
        if session is None:
            raise Denied(403, "The admin pages need the admin token: open /admin/login?token=ADMIN_TOKEN "
                              "(ieqa studio prints it when it starts).")
        return session

    # ------------------------------------------------------------------ a rater's list

    def progress(self, rater: str) -> dict[str, Any]:
        """``done``, ``total``, the ``next`` unanswered position of a rater's list and the
        ``last`` answered one (None when there is none)."""
        rows = self.store.assignments(rater)
        done = sum(a.done is not None for a in rows)
        nxt = next((a.position for a in rows if a.done is None), None)
        answered = [a for a in rows if a.done is not None]
        last = max(answered, key=lambda a: a.done).position if answered else None
        return {"done": done, "total": len(rows), "next": nxt, "last": last}

    def revisable(self, rater: str, assignment: Assignment) -> bool:
        """May ``rater`` revise this answered assignment now: the study is open and it is
        their last answer (any answer with ``revise_any``)."""
        if assignment.done is None or self.store.closed() is not None:
            return False
        return self.config.revise_any or self.progress(rater)["last"] == assignment.position

    def own_item(self, rater: str, position: int) -> tuple[Assignment, Item]:
        """The assignment at ``position`` of *this rater's* list and its item; 404 when
        there is none (another rater's list is never reachable)."""
        assignment = self.store.assignment(rater, position)
        if assignment is None:
            raise Denied(404, "There is no such item on your list.")
        item = self.store.item(assignment.item)
        assert item is not None
        return assignment, item


async def studio(request: Request) -> StudioState:
    """The app's state (the dependency of every route)."""
    return request.app.state.studio


async def denied(request: Request, exc: Denied) -> Response:
    """The page of a refused request (the app's :class:`Denied` handler)."""
    return request.app.state.studio.page(
        "message.html", status=exc.status, heading="Not allowed" if exc.status == 403 else
        "Not found" if exc.status == 404 else "Sign in", message=exc.message)


async def security_headers(request: Request, call_next):  # noqa: ANN001, ANN201 - the app's HTTP middleware
    """Every response's security headers (:data:`CSP`, nosniff, no referrer, no
    framing), and ``Cache-Control: no-store`` on the pages (the app's HTTP middleware)."""
    response = await call_next(request)
    response.headers.setdefault("Content-Security-Policy", CSP)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Frame-Options"] = "DENY"
    if response.headers.get("content-type", "").startswith("text/html"):
        response.headers["Cache-Control"] = "no-store"
    return response


def _templates() -> Environment:
    """The pages' Jinja2 environment (autoescaped), with the ``num`` and ``utc`` filters."""
    env = Environment(loader=PackageLoader("ieqa.studio", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["num"] = _num
    env.filters["utc"] = lambda t: "" if t is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))
    return env


def _num(value: float | None, decimals: int = 2) -> str:
    """``value`` with ``decimals`` decimals (``""`` for None); never ``-0.000``: a
    statistic that is 0 up to rounding (e.g. -6e-16) shows as ``0.000``."""
    if value is None:
        return ""
    return f"{round(float(value), decimals) + 0.0:.{decimals}f}"
