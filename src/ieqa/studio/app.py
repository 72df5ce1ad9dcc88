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
"""

from __future__ import annotations

import functools
import hmac
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool

from ieqa.data.dimensions import list_dimensions
from ieqa.studio import analysis, answers, export, security
from ieqa.studio.design import PAIR_LABELS, StudyConfig
from ieqa.studio.guidelines import Guidelines, render_guidelines
from ieqa.studio.store import SKIP_REASONS, Assignment, Item, Store, StudioError

__all__ = ["create_app"]

_SLOT = re.compile(r"^(source|c\d{1,3})$")
_CSP = ("default-src 'none'; img-src 'self'; script-src 'self'; style-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def _templates() -> Environment:
    """The pages' Jinja2 environment (autoescaped), with the ``num`` and ``utc`` filters."""
    env = Environment(loader=PackageLoader("ieqa.studio", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["num"] = _num
    env.filters["utc"] = lambda t: "" if t is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))
    return env


class _Denied(Exception):
    """A request refused with ``status`` and a page saying ``message``."""

    def __init__(self, status: int, message: str) -> None:
        self.status, self.message = status, message


def create_app(store: Store, *, secure_cookies: bool = False, public_url: str | None = None) -> FastAPI:
    """The app of the study in ``store``. ``secure_cookies=True`` marks the session
    cookies Secure (serve it behind HTTPS then); ``public_url`` is the base URL raters
    reach (behind a reverse proxy), used for the invite links on the admin page
    (default: the URL the admin page was requested at)."""
    store.migrate()
    meta = store.meta()
    config = StudyConfig.from_json(meta["config"])
    secret: str = meta["secret"]
    admin_token: str = meta["admin_token"]
    rater_cookie, admin_cookie = security.cookie_names(meta["study_id"])
    env = _templates()
    descriptions = list_dimensions()
    training_keys = {it.key for it in store.items("training")}  # items never change after creation
    app = FastAPI(title="ieqa studio", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(packages=[("ieqa.studio", "static")]), name="static")

    rendered: dict[str, tuple[Guidelines, Markup]] = {}  # the stored guidelines' text -> rendered once

    def guidelines() -> tuple[Guidelines | None, Markup | None]:
        """The study's guidelines and their HTML (None without), as stored now (they can
        be replaced while the study runs; each version is rendered once)."""
        stored = store.meta().get("guidelines")
        if not stored:
            return None, None
        key = json.dumps(stored, sort_keys=True)
        if key not in rendered:
            g = Guidelines.from_json(stored)
            rendered.clear()
            rendered[key] = (g, Markup(render_guidelines(g)))  # noqa: S704 - markdown-it output, raw HTML escaped
        return rendered[key]

    @app.middleware("http")
    async def _headers(request: Request, call_next):  # noqa: ANN001, ANN202
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", _CSP)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        if response.headers.get("content-type", "").startswith("text/html"):
            response.headers["Cache-Control"] = "no-store"
        return response

    @app.exception_handler(_Denied)
    async def _denied(request: Request, exc: _Denied) -> Response:
        return page("message.html", status=exc.status, heading="Not allowed" if exc.status == 403 else
                    "Not found" if exc.status == 404 else "Sign in", message=exc.message)

    def page(name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        """Template ``name`` rendered with the study's title and config and ``ctx``."""
        html = env.get_template(name).render(title=config.title, config=config, **ctx)
        return HTMLResponse(html, status_code=status)

    def set_cookie(resp: Response, key: str, value: str) -> None:
        """A session cookie: HttpOnly, SameSite=Lax, Secure with ``secure_cookies``."""
        resp.set_cookie(key, value, httponly=True, samesite="lax", secure=secure_cookies,
                        max_age=90 * 24 * 3600, path="/")

    # ------------------------------------------------------------------ who is asking

    def session_rater(request: Request) -> tuple[str, str] | None:
        """``(rater id, invite token)`` of the request's rater cookie, or None."""
        token = request.cookies.get(rater_cookie, "")
        rater = store.rater_by_token(token) if token else None
        return None if rater is None else (rater, token)

    def rater_of(request: Request) -> tuple[str, str]:
        """``(rater id, invite token)`` of the request's rater cookie; 401 without one."""
        who = session_rater(request)
        if who is None:
            raise _Denied(401, "Open your personal invite link to start or resume the study (a revoked "
                               "link opens nothing: ask the organiser for a new one).")
        return who

    def admin_session(request: Request) -> str | None:
        """The admin token of the request (Bearer header or cookie) when it is the
        study's (constant-time comparison), else None."""
        auth = request.headers.get("authorization", "")
        given = auth[7:].strip() if auth.lower().startswith("bearer ") else request.cookies.get(admin_cookie, "")
        if given and hmac.compare_digest(given.encode(), admin_token.encode()):
            return given
        return None

    def require_admin(request: Request) -> str:
        """The admin session of the request; 403 saying how to sign in without one."""
        session = admin_session(request)
        if session is None:
            raise _Denied(403, "The admin pages need the admin token: open /admin/login?token=ADMIN_TOKEN "
                               "(ieqa studio prints it when it starts).")
        return session

    # ------------------------------------------------------------------ public

    @app.get("/healthz")
    def healthz() -> JSONResponse:
        return JSONResponse({"ok": True, "protocol": config.protocol, "study": meta["study_id"]})

    @app.get("/favicon.ico")
    def favicon() -> Response:
        return FileResponse(Path(__file__).parent / "static" / "favicon.svg", media_type="image/svg+xml",
                            headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return page("message.html", heading=config.title,
                    message="This is a rating study. Open the personal invite link you were given to "
                            "start or resume it.")

    def invited(token: str) -> str:
        rater = store.rater_by_token(token)
        if rater is None:
            raise _Denied(404, "This invite link is not valid (or was revoked). Check that you copied the "
                               "whole link, or ask the study's organiser for yours.")
        return rater

    def switch_csrf(current: str, new: str) -> str:
        return security.csrf_token(secret, f"{current}\x1f{new}", "switch")

    @app.get("/invite/{token}")
    def invite(request: Request, token: str) -> Response:
        rater = invited(token)
        current = session_rater(request)
        if current is not None and current[0] != rater:
            # another rater is signed in here: a page must not switch who they are silently
            return page("switch.html", current=current[0], rater=rater, token=token,
                        csrf=switch_csrf(current[1], token))
        resp = RedirectResponse("/study", status_code=303)
        set_cookie(resp, rater_cookie, token)
        return resp

    @app.post("/invite/{token}/switch")
    async def invite_switch(request: Request, token: str) -> Response:
        await run_in_threadpool(invited, token)
        current = await run_in_threadpool(session_rater, request)
        form = dict(await request.form())
        if current is None or not hmac.compare_digest(switch_csrf(current[1], token), str(form.get("csrf", ""))):
            raise _Denied(403, "This confirmation is stale or did not come from this site. Open the invite "
                               "link again.")
        resp = RedirectResponse("/study", status_code=303)
        set_cookie(resp, rater_cookie, token)
        return resp

    # ------------------------------------------------------------------ rater

    def progress(rater: str) -> dict[str, Any]:
        """``done``, ``total``, the ``next`` unanswered position of a rater's list and the
        ``last`` answered one (None when there is none)."""
        rows = store.assignments(rater)
        done = sum(a.done is not None for a in rows)
        nxt = next((a.position for a in rows if a.done is None), None)
        answered = [a for a in rows if a.done is not None]
        last = max(answered, key=lambda a: a.done).position if answered else None
        return {"done": done, "total": len(rows), "next": nxt, "last": last}

    def revisable(rater: str, assignment: Assignment) -> bool:
        """May ``rater`` revise this answered assignment now: the study is open and it is
        their last answer (any answer with ``revise_any``)."""
        if assignment.done is None or store.closed() is not None:
            return False
        return config.revise_any or progress(rater)["last"] == assignment.position

    @app.get("/study", response_class=HTMLResponse)
    def study_home(request: Request, paused: int = 0) -> HTMLResponse:
        rater, _ = rater_of(request)
        prog = progress(rater)
        n_training = sum(1 for a in store.assignments(rater) if a.item in training_keys)
        return page("home.html", rater=rater, progress=prog, paused=bool(paused), n_training=n_training,
                    has_guidelines=guidelines()[0] is not None, closed=store.closed())

    @app.get("/study/guidelines", response_class=HTMLResponse)
    def study_guidelines(request: Request, first: int = 0) -> HTMLResponse:
        rater, _ = rater_of(request)
        _, html = guidelines()
        if html is None:
            raise _Denied(404, "This study has no guidelines.")
        return page("guidelines.html", guidelines_html=html, first=bool(first), progress=progress(rater))

    @app.get("/guidelines/img/{n}")
    def guideline_image(request: Request, n: int) -> Response:
        if admin_session(request) is None:
            rater_of(request)
        g, _ = guidelines()
        if g is None or not 0 <= n < len(g.images) or not Path(g.images[n]).is_file():
            raise _Denied(404, "No such image.")
        return FileResponse(g.images[n], media_type=_mime(Path(g.images[n])),
                            headers={"Cache-Control": "private, max-age=3600"})

    @app.get("/study/next")
    def study_next(request: Request, read: int = 0) -> Response:
        rater, _ = rater_of(request)
        prog = progress(rater)
        if prog["done"] == 0 and not read and guidelines()[0] is not None:
            return RedirectResponse("/study/guidelines?first=1", status_code=303)
        nxt = prog["next"]
        return RedirectResponse("/study/done" if nxt is None else f"/study/task/{nxt}", status_code=303)

    @app.get("/study/done", response_class=HTMLResponse)
    def study_done(request: Request) -> HTMLResponse:
        rater, _ = rater_of(request)
        prog = progress(rater)
        if prog["next"] is not None:
            return page("home.html", rater=rater, progress=prog, paused=False, n_training=0,
                        has_guidelines=False, closed=store.closed())
        return page("message.html", heading="Thank you!", progress=prog,
                    message=f"All {prog['total']} items are done and saved. You can close this page.")

    def own_item(rater: str, position: int) -> tuple[Assignment, Item]:
        """The assignment at ``position`` of *this rater's* list and its item; 404 when
        there is none (another rater's list is never reachable)."""
        assignment = store.assignment(rater, position)
        if assignment is None:
            raise _Denied(404, "There is no such item on your list.")
        item = store.item(assignment.item)
        assert item is not None
        return assignment, item

    def task_context(rater: str, token: str, position: int, item: Item, values: dict[str, Any] | None = None,
                     error: str | None = None, form_id: str | None = None, revise: bool = False,
                     moved: set[str] | None = None) -> dict[str, Any]:
        """What a task page shows: the item, its images and text, the questions, the
        CSRF token, a form id (a new one, or the refused form's), progress, an error."""
        samples = item.data["samples"]
        slots = answers.candidate_slots(config.protocol, rater, item)
        orders = {}  # rank: each dimension's list in the order the rater left it (a refused or revised form)
        for d in config.dimensions:
            by_slot = {s["slot"]: s for s in slots}
            given = [x.strip() for x in str((values or {}).get(f"dim__{d}", "")).split(",")]
            orders[d] = [by_slot[x] for x in given] if sorted(given) == sorted(by_slot) else slots
        lo, hi = config.scale
        dims = [{"name": d, "label": d.replace("_", " ").capitalize(), "help": descriptions.get(d, "")}
                for d in config.dimensions]
        prog = progress(rater)
        _, guide = guidelines()
        return {"rater": rater, "position": position, "item": item, "samples": samples, "slots": slots,
                "source": samples[0].get("source"), "instruction": samples[0].get("instruction") or "",
                "bbox": samples[0].get("bbox"), "dims": dims, "lo": lo, "hi": hi, "mid": (lo + hi) / 2,
                "csrf": security.csrf_token(secret, token),
                "form_id": form_id or security.new_form_id(secret, rater, item.key),
                "skip_form_id": security.new_form_id(secret, rater, item.key),
                "training": item.role == "training", "progress": prog, "values": values or {},
                "error": error, "revise": revise, "orders": orders, "moved_dims": _moved(values, moved),
                "sizes": _sizes(item), "skip_reasons": SKIP_REASONS, "guidelines_html": guide,
                # the last answer is revisable while the study is open (revisable())
                "previous": None if revise or prog["last"] in (None, position) or store.closed() is not None
                else prog["last"],
                "pair_labels": [(v, answers.PAIR_TEXT[v], answers.PAIR_KEYS[v]) for v in PAIR_LABELS]}

    def closed_page() -> HTMLResponse:
        return page("message.html", status=409, heading="The study is closed",
                    message="The organiser closed this study: no more answers are taken. Thank you!")

    def already_page(rater: str, assignment: Assignment, status: int = 200, second: bool = False) -> HTMLResponse:
        return page("already.html", status=status, position=assignment.position, second=second,
                    revisable=revisable(rater, assignment), progress=progress(rater),
                    answer=store.submission_of(rater, assignment.item))

    @app.get("/study/task/{position}", response_class=HTMLResponse)
    def task(request: Request, position: int) -> HTMLResponse:
        rater, token = rater_of(request)
        assignment, item = own_item(rater, position)
        if assignment.done is not None:
            return already_page(rater, assignment)
        if store.closed() is not None:
            return closed_page()
        return page(f"{config.protocol}.html", **task_context(rater, token, position, item))

    @app.get("/study/task/{position}/revise", response_class=HTMLResponse)
    def task_revise(request: Request, position: int) -> Response:
        rater, token = rater_of(request)
        assignment, item = own_item(rater, position)
        if assignment.done is None:
            return RedirectResponse(f"/study/task/{position}", status_code=303)
        if store.closed() is not None:
            return closed_page()
        if not revisable(rater, assignment):
            raise _Denied(403, "Only your last answer can be revised in this study.")
        current = {r["dimension"]: r for r in store.response_of(rater, item.key)}
        set_before = {d for d, u in store.untouched_of(rater, item.key).items() if u is False}
        return page(f"{config.protocol}.html", **task_context(
            rater, token, position, item, values=answers.current_values(config, current), revise=True,
            moved=set_before))

    async def checked_form(request: Request, position: int) -> tuple[str, str, Assignment, Item, dict, str, float]:
        """The rater, token, assignment, item, form fields, form id and the time the form
        was shown, once the CSRF token and the form id are checked (then a revision is
        checked by :func:`posted`)."""
        rater, token = await run_in_threadpool(rater_of, request)
        form = {k: str(v) for k, v in (await request.form()).items()}
        if not security.check_csrf(secret, token, form.get("csrf")):
            raise _Denied(403, "This form is stale or did not come from this site (CSRF check). Reload the "
                               "page and answer again.")
        assignment, item = await run_in_threadpool(own_item, rater, position)
        form_id = form.get("submission", "")
        shown = security.check_form_id(secret, rater, item.key, form_id)
        if shown is None:
            raise _Denied(403, "This form is not valid for this item. Reload the page and answer again.")
        return rater, token, assignment, item, form, form_id, shown

    async def record(rater: str, assignment: Assignment, item: Item, form_id: str, revise: bool,
                     **kw: Any) -> Response:
        try:
            outcome = await run_in_threadpool(functools.partial(store.submit, form_id, rater, item.key,
                                                                shown=kw.pop("shown"), revise=revise, **kw))
        except StudioError as exc:
            if store.closed() is not None:
                return closed_page()
            raise _Denied(409, str(exc)) from None
        if outcome.status == "already":  # answered meanwhile, e.g. in another tab
            fresh = await run_in_threadpool(store.assignment, rater, assignment.position)
            return already_page(rater, fresh, status=409, second=True)
        if item.role == "training" and item.gold is not None and "skip" not in kw:
            return RedirectResponse(f"/study/task/{assignment.position}/feedback", status_code=303)
        return RedirectResponse("/study/next", status_code=303)

    async def posted(request: Request, position: int, read) -> Response:  # noqa: ANN001 - form -> record kwargs
        """A task form's POST: checked (:func:`checked_form`; the study open; a revision
        allowed), read by ``read`` (the form -> :meth:`Store.submit` keyword arguments; a
        :class:`StudioError` shows the form again with the message), then recorded."""
        rater, token, assignment, item, form, form_id, shown = await checked_form(request, position)
        if await run_in_threadpool(store.closed) is not None:
            return closed_page()
        revise = form.get("revise") == "1"
        if revise and not await run_in_threadpool(revisable, rater, assignment):
            raise _Denied(403, "This answer can no longer be revised (only your last answer can be, while "
                               "the study is open).")
        try:
            kw = read(form, item)
        except StudioError as exc:
            ctx = task_context(rater, token, position, item, values=answers.shown_again(config, form),
                               error=str(exc), form_id=form_id, revise=revise)
            return page(f"{config.protocol}.html", status=400, **ctx)
        return await record(rater, assignment, item, form_id, revise, shown=shown, **kw)

    @app.post("/study/task/{position}")
    async def submit(request: Request, position: int) -> Response:
        return await posted(request, position, lambda form, item: {
            "responses": answers.parse_answer(config, form, item)})

    @app.post("/study/task/{position}/skip")
    async def skip(request: Request, position: int) -> Response:
        return await posted(request, position, lambda form, item: {
            "responses": [], "skip": answers.skip_reason(form)})

    @app.get("/study/task/{position}/feedback", response_class=HTMLResponse)
    def feedback(request: Request, position: int) -> HTMLResponse:
        rater, _ = rater_of(request)
        assignment, item = own_item(rater, position)
        if item.role != "training" or assignment.done is None or item.gold is None:
            raise _Denied(404, "No feedback for this item.")
        mine = {r["dimension"]: r for r in store.response_of(rater, item.key)}
        rows = answers.feedback_rows(config, rater, item, mine)
        samples = item.data["samples"]
        return page("feedback.html", rows=rows, progress=progress(rater), item=item,
                    source=samples[0].get("source"), slots=answers.candidate_slots(config.protocol, rater, item),
                    sizes=_sizes(item))

    # ------------------------------------------------------------------ images

    @app.get("/media/{key}/{slot}")
    def media(request: Request, key: int, slot: str) -> Response:
        if not _SLOT.match(slot):
            raise _Denied(404, "No such image.")
        if admin_session(request) is None:
            rater, _ = rater_of(request)
            if not store.is_assigned(rater, key):
                raise _Denied(403, "This image belongs to an item that is not on your list.")
        item = store.item(key)
        if item is None:
            raise _Denied(404, "No such item.")
        path = _path_of(item, slot)
        if not path or not Path(path).is_file():
            raise _Denied(404, "The image file is missing; the manifest's files moved since the study "
                               "was created.")
        return FileResponse(path, media_type=_mime(Path(path)),
                            headers={"Cache-Control": "private, max-age=3600"})

    # ------------------------------------------------------------------ admin

    @app.get("/admin/login")
    def admin_login(token: str = "") -> Response:
        if not token or not hmac.compare_digest(token.encode(), admin_token.encode()):
            raise _Denied(403, "Wrong admin token. ieqa studio prints the admin link when it starts.")
        resp = RedirectResponse("/admin", status_code=303)
        set_cookie(resp, admin_cookie, token)
        return resp

    @app.get("/admin", response_class=HTMLResponse)
    def admin(request: Request, notice: str = "") -> HTMLResponse:
        session = require_admin(request)
        report = analysis.study_report(store)
        base = (public_url or str(request.base_url)).rstrip("/")
        links = dict(store.raters(revoked=True))
        return page("admin.html", report=report, links={r: f"{base}/invite/{t}" for r, t in links.items()},
                    exports=export.export_names(config.protocol), meta=store.meta(), closed=store.closed(),
                    revoked=store.revoked(), admin_csrf=security.csrf_token(secret, session, "admin"),
                    notice=notice[:300], skips=[x for x in store.submissions() if x["status"] == "skip"],
                    n_revised=len(store.revisions()), needed=sum(store.needed().values()))

    async def admin_form(request: Request) -> dict[str, str]:
        session = require_admin(request)
        form = {k: str(v) for k, v in (await request.form()).items()}
        if not security.check_csrf(secret, session, form.get("csrf"), "admin"):
            raise _Denied(403, "This admin form is stale or did not come from this site. Reload the admin page.")
        return form

    def back(notice: str) -> Response:
        from urllib.parse import quote

        return RedirectResponse(f"/admin?notice={quote(notice)}", status_code=303)

    @app.post("/admin/raters/add")
    async def admin_add(request: Request) -> Response:
        form = await admin_form(request)
        try:
            n = int(form.get("n", "1"))
            if not 1 <= n <= 100:
                raise ValueError
        except ValueError:
            raise _Denied(400, "Add between 1 and 100 raters at a time.") from None
        if store.closed() is not None:
            raise _Denied(409, "The study is closed; raters cannot be added.")
        added = await run_in_threadpool(store.add_raters, n, config.seed)
        return back("added " + ", ".join(f"{rid} ({k} items)" for rid, _, k in added)
                    + "; send them the invite links below")

    @app.post("/admin/raters/{rater}/{action}")
    async def admin_rater(request: Request, rater: str, action: str) -> Response:
        await admin_form(request)
        if action not in ("revoke", "reissue"):
            raise _Denied(404, f"No action {action!r}; there are revoke and reissue.")
        try:
            if action == "revoke":
                await run_in_threadpool(store.revoke, rater)
                return back(f"revoked {rater}: the link opens nothing now; their answers stay")
            await run_in_threadpool(store.reissue, rater, security.new_token())
            return back(f"re-issued {rater}'s link: send them the new one below (the old one stopped working)")
        except StudioError as exc:
            raise _Denied(404, str(exc)) from None

    @app.post("/admin/close")
    async def admin_close(request: Request) -> Response:
        await admin_form(request)
        await run_in_threadpool(store.close)
        return back("closed the study: no more answers are taken; export the answers below")

    @app.get("/admin/export/{name}")
    def admin_export(request: Request, name: str, gold: int = 1, part: str = "study") -> Response:
        require_admin(request)
        names = export.export_names(config.protocol)
        if name not in names:
            raise _Denied(404, f"No export {name!r}; there are {', '.join(names)}.")
        if part not in ("study", "training"):
            raise _Denied(404, f"part={part!r}: use study or training.")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / name
            try:
                export.export_study(store, out, include_gold=bool(gold), part=part)
            except StudioError as exc:
                raise _Denied(404, str(exc)) from None
            body = out.read_bytes()
        mime = "text/csv" if name.endswith(".csv") else "application/x-ndjson"
        filename = name if part == "study" else f"training-{name}"
        return Response(body, media_type=mime,
                        headers={"Content-Disposition": f'attachment; filename="{filename}"'})

    return app


def _moved(values: dict[str, Any] | None, moved: set[str] | None) -> set[str]:
    """The dimensions a page shows as already set: those of a revised answer the rater
    set, and those a refused form said were moved (its ``moved`` field)."""
    out = set(moved or ())
    if values and values.get("moved"):
        out |= {m.strip() for m in str(values["moved"]).split(",") if m.strip()}
    return out


def _sizes(item: Item) -> dict[str, tuple[int, int] | None]:
    """``(width, height)`` of each image of ``item`` by slot (``source``, ``c0``...)."""
    n = len(item.data["samples"])
    return {slot: _size(_path_of(item, slot)) for slot in ["source"] + [f"c{i}" for i in range(n)]}


def _path_of(item: Item, slot: str) -> str | None:
    """The image file of ``slot`` (``source`` or ``cI``) of ``item``, or None."""
    samples = item.data["samples"]
    if slot == "source":
        return samples[0].get("source")
    i = int(slot[1:])
    return samples[i]["edited"] if i < len(samples) else None


@functools.lru_cache(maxsize=4096)
def _size(path: str | None) -> tuple[int, int] | None:
    """``(width, height)`` of an image file (read from its header), or None; the pages
    give images their size up front, so nothing moves while they load."""
    if not path:
        return None
    from PIL import Image

    try:
        with Image.open(path) as im:
            return im.size
    except Exception:  # noqa: BLE001 - a missing or unreadable file gets no size
        return None


def _num(value: float | None, decimals: int = 2) -> str:
    """``value`` with ``decimals`` decimals (``""`` for None); never ``-0.000``: a
    statistic that is 0 up to rounding (e.g. -6e-16) shows as ``0.000``."""
    if value is None:
        return ""
    return f"{round(float(value), decimals) + 0.0:.{decimals}f}"


def _mime(path: Path) -> str:
    """The media type of an image file, from its header (never from the name alone)."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            fmt = im.format
    except Exception:  # noqa: BLE001 - anything unreadable is served as opaque bytes
        return "application/octet-stream"
    return Image.MIME.get(fmt or "", "application/octet-stream")
