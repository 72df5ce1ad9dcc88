"""Routes open without a session: ``GET /healthz``, ``GET /favicon.ico``, the index page
``GET /``, and the invite links (``GET /invite/TOKEN`` sets the rater cookie;
``POST /invite/TOKEN/switch`` confirms switching to another rater in a signed-in
browser)."""

from __future__ import annotations

import hmac
from pathlib import Path

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from ieqa.studio import security
from ieqa.studio.state import Denied, StudioState, studio

__all__ = ["router"]

router = APIRouter()

_FAVICON = Path(__file__).parents[1] / "static" / "favicon.svg"


@router.get("/healthz")
def healthz(st: StudioState = Depends(studio)) -> JSONResponse:
    return JSONResponse({"ok": True, "protocol": st.config.protocol, "study": st.meta["study_id"]})


@router.get("/favicon.ico")
def favicon() -> Response:
    return FileResponse(_FAVICON, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"})


@router.get("/", response_class=HTMLResponse)
def index(st: StudioState = Depends(studio)) -> HTMLResponse:
    return st.page("message.html", heading=st.config.title,
                   message="This is a rating study. Open the personal invite link you were given to "
                           "start or resume it.")


def _invited(st: StudioState, token: str) -> str:
    """The rater of an invite token; 404 when it is no (or a revoked) rater's."""
    rater = st.store.rater_by_token(token)
    if rater is None:
        raise Denied(404, "This invite link is not valid (or was revoked). Check that you copied the "
                          "whole link, or ask the study's organiser for yours.")
    return rater


def _switch_csrf(st: StudioState, current: str, new: str) -> str:
    """The CSRF token of the form that switches from the ``current`` invite token to ``new``."""
    return security.csrf_token(st.secret, f"{current}\x1f{new}", "switch")


@router.get("/invite/{token}")
def invite(request: Request, token: str, st: StudioState = Depends(studio)) -> Response:
    rater = _invited(st, token)
    current = st.session_rater(request)
    if current is not None and current[0] != rater:
        # another rater is signed in here: a page must not switch who they are silently
        return st.page("switch.html", current=current[0], rater=rater, token=token,
                       csrf=_switch_csrf(st, current[1], token))
    resp = RedirectResponse("/study", status_code=303)
    st.set_cookie(resp, st.rater_cookie, token)
    return resp


@router.post("/invite/{token}/switch")
async def invite_switch(request: Request, token: str, st: StudioState = Depends(studio)) -> Response:
    await run_in_threadpool(_invited, st, token)
    current = await run_in_threadpool(st.session_rater, request)
    form = dict(await request.form())
    if current is None or not hmac.compare_digest(_switch_csrf(st, current[1], token), str(form.get("csrf", ""))):
        raise Denied(403, "This confirmation is stale or did not come from this site. Open the invite "
                          "link again.")
    resp = RedirectResponse("/study", status_code=303)
    st.set_cookie(resp, st.rater_cookie, token)
    return resp
