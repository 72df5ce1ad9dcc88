"""A rater's pages around the tasks (the rater cookie of the invite link; 401 without):
``GET /study`` (progress, continue / pause), ``GET /study/guidelines`` (the organiser's
guidelines, shown before the first item), ``GET /study/next`` (a redirect to the first
unanswered item, or to the guidelines first) and ``GET /study/done``."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ieqa.studio.state import Denied, StudioState, studio

__all__ = ["router"]

router = APIRouter()


@router.get("/study", response_class=HTMLResponse)
def study_home(request: Request, paused: int = 0, st: StudioState = Depends(studio)) -> HTMLResponse:
    rater, _ = st.rater_of(request)
    prog = st.progress(rater)
    n_training = sum(1 for a in st.store.assignments(rater) if a.item in st.training_keys)
    return st.page("home.html", rater=rater, progress=prog, paused=bool(paused), n_training=n_training,
                   has_guidelines=st.guidelines()[0] is not None, closed=st.store.closed())


@router.get("/study/guidelines", response_class=HTMLResponse)
def study_guidelines(request: Request, first: int = 0, st: StudioState = Depends(studio)) -> HTMLResponse:
    rater, _ = st.rater_of(request)
    _, html = st.guidelines()
    if html is None:
        raise Denied(404, "This study has no guidelines.")
    return st.page("guidelines.html", guidelines_html=html, first=bool(first), progress=st.progress(rater))


@router.get("/study/next")
def study_next(request: Request, read: int = 0, st: StudioState = Depends(studio)) -> Response:
    rater, _ = st.rater_of(request)
    prog = st.progress(rater)
    if prog["done"] == 0 and not read and st.guidelines()[0] is not None:
        return RedirectResponse("/study/guidelines?first=1", status_code=303)
    nxt = prog["next"]
    return RedirectResponse("/study/done" if nxt is None else f"/study/task/{nxt}", status_code=303)


@router.get("/study/done", response_class=HTMLResponse)
def study_done(request: Request, st: StudioState = Depends(studio)) -> HTMLResponse:
    rater, _ = st.rater_of(request)
    prog = st.progress(rater)
    if prog["next"] is not None:
        return st.page("home.html", rater=rater, progress=prog, paused=False, n_training=0,
                       has_guidelines=False, closed=st.store.closed())
    return st.page("message.html", heading="Thank you!", progress=prog,
                   message=f"All {prog['total']} items are done and saved. You can close this page.")
