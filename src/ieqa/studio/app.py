"""The studio's web app: FastAPI routes, server-rendered pages (Jinja2, autoescaped).

Rater pages (cookie set by the invite link ``/invite/TOKEN``):

* ``GET /study``: progress, continue / pause; ``GET /study/next``: the first unanswered
  item; ``GET /study/task/N``: the N-th item of *this* rater's list (no other rater's list
  is reachable: items are looked up by the rater's own position);
* ``POST /study/task/N``: the answer. Checked (CSRF token of the session, form id issued
  for this rater and item, values in range, a ranking that is a permutation of the
  candidates, a known verdict), then written in one transaction; only then is the page
  answered (303 to the next item, or to the training feedback). Posting one form twice
  is a no-op (the form id is UNIQUE in the store);
* ``GET /media/KEY/SLOT``: an image of an item on the rater's list: the file the manifest
  named for that item (``source`` or candidate ``cI``), never a path from the request.

Admin pages (``/admin/login?token=ADMIN`` sets a cookie; ``Authorization: Bearer ADMIN``
works too): ``GET /admin`` (progress per rater and item, agreement, flagged raters, invite
links) and ``GET /admin/export/ratings.csv`` | ``rankings.jsonl`` | ``preferences.jsonl``.

Every response carries a strict Content-Security-Policy (no inline script or style:
the page's JavaScript is ``/static/studio.js``), ``X-Content-Type-Options: nosniff`` and
``Referrer-Policy: no-referrer`` (invite links never leak through Referer headers).
"""

from __future__ import annotations

import hmac
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.concurrency import run_in_threadpool

from ieqa.data.dimensions import list_dimensions
from ieqa.studio import analysis, answers, export, security
from ieqa.studio.design import PAIR_LABELS, StudyConfig
from ieqa.studio.store import Assignment, Item, Store, StudioError

__all__ = ["ADMIN_COOKIE", "RATER_COOKIE", "create_app"]

RATER_COOKIE = "ieqa_studio_rater"
ADMIN_COOKIE = "ieqa_studio_admin"
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
    meta = store.meta()
    config = StudyConfig.from_json(meta["config"])
    secret: str = meta["secret"]
    admin_token: str = meta["admin_token"]
    env = _templates()
    descriptions = list_dimensions()
    training_keys = {it.key for it in store.items("training")}  # items never change after creation
    app = FastAPI(title="ieqa studio", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(packages=[("ieqa.studio", "static")]), name="static")

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

    def rater_of(request: Request) -> tuple[str, str]:
        """``(rater id, invite token)`` of the request's rater cookie; 401 without one."""
        token = request.cookies.get(RATER_COOKIE, "")
        rater = store.rater_by_token(token) if token else None
        if rater is None:
            raise _Denied(401, "Open your personal invite link to start or resume the study.")
        return rater, token

    def admin_session(request: Request) -> str | None:
        """The admin token of the request (Bearer header or cookie) when it is the
        study's (constant-time comparison), else None."""
        auth = request.headers.get("authorization", "")
        given = auth[7:].strip() if auth.lower().startswith("bearer ") else request.cookies.get(ADMIN_COOKIE, "")
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
        return JSONResponse({"ok": True, "protocol": config.protocol})

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return page("message.html", heading=config.title,
                    message="This is a rating study. Open the personal invite link you were given to "
                            "start or resume it.")

    @app.get("/invite/{token}")
    def invite(token: str) -> Response:
        if store.rater_by_token(token) is None:
            raise _Denied(404, "This invite link is not valid. Check that you copied the whole link, "
                               "or ask the study's organiser for yours.")
        resp = RedirectResponse("/study", status_code=303)
        set_cookie(resp, RATER_COOKIE, token)
        return resp

    # ------------------------------------------------------------------ rater

    def progress(rater: str) -> dict[str, Any]:
        """``done``, ``total`` and the ``next`` unanswered position of a rater's list."""
        rows = store.assignments(rater)
        done = sum(a.done is not None for a in rows)
        nxt = next((a.position for a in rows if a.done is None), None)
        return {"done": done, "total": len(rows), "next": nxt}

    @app.get("/study", response_class=HTMLResponse)
    def study_home(request: Request, paused: int = 0) -> HTMLResponse:
        rater, _ = rater_of(request)
        prog = progress(rater)
        n_training = sum(1 for a in store.assignments(rater) if a.item in training_keys)
        return page("home.html", rater=rater, progress=prog, paused=bool(paused), n_training=n_training)

    @app.get("/study/next")
    def study_next(request: Request) -> Response:
        rater, _ = rater_of(request)
        nxt = progress(rater)["next"]
        return RedirectResponse("/study/done" if nxt is None else f"/study/task/{nxt}", status_code=303)

    @app.get("/study/done", response_class=HTMLResponse)
    def study_done(request: Request) -> HTMLResponse:
        rater, _ = rater_of(request)
        prog = progress(rater)
        if prog["next"] is not None:
            return page("home.html", rater=rater, progress=prog, paused=False, n_training=0)
        return page("message.html", heading="Thank you!",
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
                     error: str | None = None, form_id: str | None = None) -> dict[str, Any]:
        """What a task page shows: the item, its images and text, the questions, the
        CSRF token, a form id (a new one, or the refused form's), progress, an error."""
        samples = item.data["samples"]
        slots = answers.candidate_slots(config.protocol, rater, item)
        lo, hi = config.scale
        dims = [{"name": d, "label": d.replace("_", " ").capitalize(), "help": descriptions.get(d, "")}
                for d in config.dimensions]
        prog = progress(rater)
        return {"rater": rater, "position": position, "item": item, "samples": samples, "slots": slots,
                "source": samples[0].get("source"), "instruction": samples[0].get("instruction") or "",
                "bbox": samples[0].get("bbox"), "dims": dims, "lo": lo, "hi": hi, "mid": (lo + hi) / 2,
                "csrf": security.csrf_token(secret, token),
                "form_id": form_id or security.new_form_id(secret, rater, item.key),
                "training": item.role == "training", "progress": prog, "values": values or {},
                "error": error, "pair_labels": [(v, answers.PAIR_TEXT[v], answers.PAIR_KEYS[v]) for v in PAIR_LABELS]}

    @app.get("/study/task/{position}", response_class=HTMLResponse)
    def task(request: Request, position: int) -> HTMLResponse:
        rater, token = rater_of(request)
        assignment, item = own_item(rater, position)
        if assignment.done is not None:
            return page("message.html", heading="Already saved",
                        message="Your answer to this item is saved.", next_link="/study/next")
        return page(f"{config.protocol}.html", **task_context(rater, token, position, item))

    @app.post("/study/task/{position}")
    async def submit(request: Request, position: int) -> Response:
        rater, token = await run_in_threadpool(rater_of, request)
        form = dict(await request.form())
        if not security.check_csrf(secret, token, form.get("csrf")):
            raise _Denied(403, "This form is stale or did not come from this site (CSRF check). Reload the "
                               "page and answer again.")
        assignment, item = await run_in_threadpool(own_item, rater, position)
        form_id = str(form.get("submission", ""))
        if not security.check_form_id(secret, rater, item.key, form_id):
            raise _Denied(403, "This form is not valid for this item. Reload the page and answer again.")
        try:
            answer = answers.parse_answer(config, {k: str(v) for k, v in form.items()}, item)
        except StudioError as exc:
            ctx = task_context(rater, token, position, item, values=answers.shown_again(config, form), error=str(exc),
                               form_id=form_id)
            return page(f"{config.protocol}.html", status=400, **ctx)
        try:
            await run_in_threadpool(store.submit, form_id, rater, item.key, answer)
        except StudioError as exc:
            raise _Denied(409, str(exc)) from None
        if item.role == "training" and item.gold is not None:
            return RedirectResponse(f"/study/task/{position}/feedback", status_code=303)
        return RedirectResponse("/study/next", status_code=303)

    @app.get("/study/task/{position}/feedback", response_class=HTMLResponse)
    def feedback(request: Request, position: int) -> HTMLResponse:
        rater, _ = rater_of(request)
        assignment, item = own_item(rater, position)
        if item.role != "training" or assignment.done is None or item.gold is None:
            raise _Denied(404, "No feedback for this item.")
        mine = {r["dimension"]: r for r in store.response_of(rater, item.key)}
        rows = answers.feedback_rows(config, rater, item, mine)
        return page("feedback.html", rows=rows, progress=progress(rater))

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
        samples = item.data["samples"]
        if slot == "source":
            path = samples[0].get("source")
        else:
            i = int(slot[1:])
            path = samples[i]["edited"] if i < len(samples) else None
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
        set_cookie(resp, ADMIN_COOKIE, token)
        return resp

    @app.get("/admin", response_class=HTMLResponse)
    def admin(request: Request) -> HTMLResponse:
        require_admin(request)
        report = analysis.study_report(store)
        base = (public_url or str(request.base_url)).rstrip("/")
        links = dict(store.raters())
        exports = (["ratings.csv"] if config.protocol in ("rate", "critique") else
                   ["rankings.jsonl"] if config.protocol == "rank" else ["preferences.jsonl"])
        return page("admin.html", report=report, links={r: f"{base}/invite/{t}" for r, t in links.items()},
                    exports=exports, meta=meta)

    @app.get("/admin/export/{name}")
    def admin_export(request: Request, name: str, gold: int = 1) -> Response:
        require_admin(request)
        writers = {"ratings.csv": (export.write_ratings_csv, "text/csv"),
                   "rankings.jsonl": (export.write_rankings_jsonl, "application/x-ndjson"),
                   "preferences.jsonl": (export.write_preferences_jsonl, "application/x-ndjson")}
        if name not in writers:
            raise _Denied(404, f"No export {name!r}; there are {', '.join(writers)}.")
        write, mime = writers[name]
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / name
            try:
                write(store, out, include_gold=bool(gold))
            except StudioError as exc:
                raise _Denied(404, str(exc)) from None
            body = out.read_bytes()
        return Response(body, media_type=mime,
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})

    return app


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
