"""The organiser's routes (the admin token: ``GET /admin/login?token=ADMIN`` sets a
cookie; ``Authorization: Bearer ADMIN`` works too): ``GET /admin`` (progress per rater
and item, agreement, flagged raters, invite links, skips and revisions) and the actions,
each a CSRF-checked ``POST`` answered by a redirect to the admin page with a notice:
``/admin/raters/add``, ``/admin/raters/ID/revoke``, ``/admin/raters/ID/reissue`` and
``/admin/close``."""

from __future__ import annotations

import hmac
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from ieqa.studio import analysis, export, security
from ieqa.studio.state import Denied, StudioState, studio
from ieqa.studio.store import StudioError

__all__ = ["router"]

router = APIRouter()


@router.get("/admin/login")
def admin_login(token: str = "", st: StudioState = Depends(studio)) -> Response:
    if not token or not hmac.compare_digest(token.encode(), st.admin_token.encode()):
        raise Denied(403, "Wrong admin token. ieqa studio prints the admin link when it starts.")
    resp = RedirectResponse("/admin", status_code=303)
    st.set_cookie(resp, st.admin_cookie, token)
    return resp


@router.get("/admin", response_class=HTMLResponse)
def admin(request: Request, notice: str = "", st: StudioState = Depends(studio)) -> HTMLResponse:
    session = st.require_admin(request)
    store = st.store
    report = analysis.study_report(store)
    base = (st.public_url or str(request.base_url)).rstrip("/")
    links = dict(store.raters(revoked=True))
    return st.page("admin.html", report=report, links={r: f"{base}/invite/{t}" for r, t in links.items()},
                   exports=export.export_names(st.config.protocol), meta=store.meta(), closed=store.closed(),
                   revoked=store.revoked(), admin_csrf=security.csrf_token(st.secret, session, "admin"),
                   notice=notice[:300], skips=[x for x in store.submissions() if x["status"] == "skip"],
                   n_revised=len(store.revisions()), needed=sum(store.needed().values()))


@router.post("/admin/raters/add")
async def admin_add(request: Request, st: StudioState = Depends(studio)) -> Response:
    form = await _admin_form(st, request)
    try:
        n = int(form.get("n", "1"))
        if not 1 <= n <= 100:
            raise ValueError
    except ValueError:
        raise Denied(400, "Add between 1 and 100 raters at a time.") from None
    if st.store.closed() is not None:
        raise Denied(409, "The study is closed; raters cannot be added.")
    added = await run_in_threadpool(st.store.add_raters, n, st.config.seed)
    return _back("added " + ", ".join(f"{rid} ({k} items)" for rid, _, k in added)
                 + "; send them the invite links below")


@router.post("/admin/raters/{rater}/{action}")
async def admin_rater(request: Request, rater: str, action: str, st: StudioState = Depends(studio)) -> Response:
    await _admin_form(st, request)
    if action not in ("revoke", "reissue"):
        raise Denied(404, f"No action {action!r}; there are revoke and reissue.")
    try:
        if action == "revoke":
            await run_in_threadpool(st.store.revoke, rater)
            return _back(f"revoked {rater}: the link opens nothing now; their answers stay")
        await run_in_threadpool(st.store.reissue, rater, security.new_token())
        return _back(f"re-issued {rater}'s link: send them the new one below (the old one stopped working)")
    except StudioError as exc:
        raise Denied(404, str(exc)) from None


@router.post("/admin/close")
async def admin_close(request: Request, st: StudioState = Depends(studio)) -> Response:
    await _admin_form(st, request)
    await run_in_threadpool(st.store.close)
    return _back("closed the study: no more answers are taken; export the answers below")


async def _admin_form(st: StudioState, request: Request) -> dict[str, str]:
    """The fields of an admin form, once the admin session and its CSRF token are checked."""
    session = st.require_admin(request)
    form = {k: str(v) for k, v in (await request.form()).items()}
    if not security.check_csrf(st.secret, session, form.get("csrf"), "admin"):
        raise Denied(403, "This admin form is stale or did not come from this site. Reload the admin page.")
    return form


def _back(notice: str) -> Response:
    """A redirect to the admin page showing ``notice``."""
    return RedirectResponse(f"/admin?notice={quote(notice)}", status_code=303)
