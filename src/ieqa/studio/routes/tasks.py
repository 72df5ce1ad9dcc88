"""A task's routes (the rater cookie of the invite link; an item is looked up by its
position in *this* rater's list, so no other rater's list is reachable):
``GET /study/task/N`` (the form), ``POST /study/task/N`` (the answer: CSRF token, form
id and values checked, then written in one transaction; posting one form twice is a
no-op), ``POST /study/task/N/skip`` ("cannot judge", with a reason),
``GET /study/task/N/revise`` (the form again, filled with the current answer) and
``GET /study/task/N/feedback`` (a training item's feedback)."""

from __future__ import annotations

import functools
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from ieqa.studio import answers, security
from ieqa.studio.design import PAIR_LABELS
from ieqa.studio.routes.media import sizes
from ieqa.studio.state import Denied, StudioState, studio
from ieqa.studio.store import SKIP_REASONS, Assignment, Item, StudioError

__all__ = ["router"]

router = APIRouter()


@router.get("/study/task/{position}", response_class=HTMLResponse)
def task(request: Request, position: int, st: StudioState = Depends(studio)) -> HTMLResponse:
    rater, token = st.rater_of(request)
    assignment, item = st.own_item(rater, position)
    if assignment.done is not None:
        return _already_page(st, rater, assignment)
    if st.store.closed() is not None:
        return _closed_page(st)
    return st.page(f"{st.config.protocol}.html", **_task_context(st, rater, token, position, item))


@router.get("/study/task/{position}/revise", response_class=HTMLResponse)
def task_revise(request: Request, position: int, st: StudioState = Depends(studio)) -> Response:
    rater, token = st.rater_of(request)
    assignment, item = st.own_item(rater, position)
    if assignment.done is None:
        return RedirectResponse(f"/study/task/{position}", status_code=303)
    if st.store.closed() is not None:
        return _closed_page(st)
    if not st.revisable(rater, assignment):
        raise Denied(403, "Only your last answer can be revised in this study.")
    current = {r["dimension"]: r for r in st.store.response_of(rater, item.key)}
    set_before = {d for d, u in st.store.untouched_of(rater, item.key).items() if u is False}
    return st.page(f"{st.config.protocol}.html", **_task_context(
        st, rater, token, position, item, values=answers.current_values(st.config, current), revise=True,
        moved=set_before))


@router.post("/study/task/{position}")
async def submit(request: Request, position: int, st: StudioState = Depends(studio)) -> Response:
    return await _posted(st, request, position, lambda form, item: {
        "responses": answers.parse_answer(st.config, form, item)})


@router.post("/study/task/{position}/skip")
async def skip(request: Request, position: int, st: StudioState = Depends(studio)) -> Response:
    return await _posted(st, request, position, lambda form, item: {
        "responses": [], "skip": answers.skip_reason(form)})


@router.get("/study/task/{position}/feedback", response_class=HTMLResponse)
def feedback(request: Request, position: int, st: StudioState = Depends(studio)) -> HTMLResponse:
    rater, _ = st.rater_of(request)
    assignment, item = st.own_item(rater, position)
    if item.role != "training" or assignment.done is None or item.gold is None:
        raise Denied(404, "No feedback for this item.")
    mine = {r["dimension"]: r for r in st.store.response_of(rater, item.key)}
    rows = answers.feedback_rows(st.config, rater, item, mine)
    samples = item.data["samples"]
    return st.page("feedback.html", rows=rows, progress=st.progress(rater), item=item,
                   source=samples[0].get("source"), slots=answers.candidate_slots(st.config.protocol, rater, item),
                   sizes=sizes(item))


def _task_context(st: StudioState, rater: str, token: str, position: int, item: Item,
                  values: dict[str, Any] | None = None, error: str | None = None, form_id: str | None = None,
                  revise: bool = False, moved: set[str] | None = None) -> dict[str, Any]:
    """What a task page shows: the item, its images and text, the questions, the
    CSRF token, a form id (a new one, or the refused form's), progress, an error."""
    config = st.config
    samples = item.data["samples"]
    slots = answers.candidate_slots(config.protocol, rater, item)
    orders = {}  # rank: each dimension's list in the order the rater left it (a refused or revised form)
    for d in config.dimensions:
        by_slot = {s["slot"]: s for s in slots}
        given = [x.strip() for x in str((values or {}).get(f"dim__{d}", "")).split(",")]
        orders[d] = [by_slot[x] for x in given] if sorted(given) == sorted(by_slot) else slots
    lo, hi = config.scale
    dims = [{"name": d, "label": d.replace("_", " ").capitalize(), "help": st.descriptions.get(d, "")}
            for d in config.dimensions]
    prog = st.progress(rater)
    _, guide = st.guidelines()
    return {"rater": rater, "position": position, "item": item, "samples": samples, "slots": slots,
            "source": samples[0].get("source"), "instruction": samples[0].get("instruction") or "",
            "bbox": samples[0].get("bbox"), "dims": dims, "lo": lo, "hi": hi, "mid": (lo + hi) / 2,
            "csrf": security.csrf_token(st.secret, token),
            "form_id": form_id or security.new_form_id(st.secret, rater, item.key),
            "skip_form_id": security.new_form_id(st.secret, rater, item.key),
            "training": item.role == "training", "progress": prog, "values": values or {},
            "error": error, "revise": revise, "orders": orders, "moved_dims": _moved(values, moved),
            "sizes": sizes(item), "skip_reasons": SKIP_REASONS, "guidelines_html": guide,
            # the last answer is revisable while the study is open (StudioState.revisable)
            "previous": None if revise or prog["last"] in (None, position) or st.store.closed() is not None
            else prog["last"],
            "pair_labels": [(v, answers.PAIR_TEXT[v], answers.PAIR_KEYS[v]) for v in PAIR_LABELS]}


def _moved(values: dict[str, Any] | None, moved: set[str] | None) -> set[str]:
    """The dimensions a page shows as already set: those of a revised answer the rater
    set, and those a refused form said were moved (its ``moved`` field)."""
    out = set(moved or ())
    if values and values.get("moved"):
        out |= {m.strip() for m in str(values["moved"]).split(",") if m.strip()}
    return out


def _closed_page(st: StudioState) -> HTMLResponse:
    return st.page("message.html", status=409, heading="The study is closed",
                   message="The organiser closed this study: no more answers are taken. Thank you!")


def _already_page(st: StudioState, rater: str, assignment: Assignment, status: int = 200,
                  second: bool = False) -> HTMLResponse:
    return st.page("already.html", status=status, position=assignment.position, second=second,
                   revisable=st.revisable(rater, assignment), progress=st.progress(rater),
                   answer=st.store.submission_of(rater, assignment.item))


async def _checked_form(st: StudioState, request: Request, position: int
                        ) -> tuple[str, str, Assignment, Item, dict, str, float]:
    """The rater, token, assignment, item, form fields, form id and the time the form
    was shown, once the CSRF token and the form id are checked (then a revision is
    checked by :func:`_posted`)."""
    rater, token = await run_in_threadpool(st.rater_of, request)
    form = {k: str(v) for k, v in (await request.form()).items()}
    if not security.check_csrf(st.secret, token, form.get("csrf")):
        raise Denied(403, "This form is stale or did not come from this site (CSRF check). Reload the "
                          "page and answer again.")
    assignment, item = await run_in_threadpool(st.own_item, rater, position)
    form_id = form.get("submission", "")
    shown = security.check_form_id(st.secret, rater, item.key, form_id)
    if shown is None:
        raise Denied(403, "This form is not valid for this item. Reload the page and answer again.")
    return rater, token, assignment, item, form, form_id, shown


async def _record(st: StudioState, rater: str, assignment: Assignment, item: Item, form_id: str,
                  revise: bool, **kw: Any) -> Response:
    store = st.store
    try:
        outcome = await run_in_threadpool(functools.partial(store.submit, form_id, rater, item.key,
                                                            shown=kw.pop("shown"), revise=revise, **kw))
    except StudioError as exc:
        if store.closed() is not None:
            return _closed_page(st)
        raise Denied(409, str(exc)) from None
    if outcome.status == "already":  # answered meanwhile, e.g. in another tab
        fresh = await run_in_threadpool(store.assignment, rater, assignment.position)
        return _already_page(st, rater, fresh, status=409, second=True)
    if item.role == "training" and item.gold is not None and "skip" not in kw:
        return RedirectResponse(f"/study/task/{assignment.position}/feedback", status_code=303)
    return RedirectResponse("/study/next", status_code=303)


async def _posted(st: StudioState, request: Request, position: int, read) -> Response:  # noqa: ANN001 - form -> record kwargs
    """A task form's POST: checked (:func:`_checked_form`; the study open; a revision
    allowed), read by ``read`` (the form -> :meth:`Store.submit` keyword arguments; a
    :class:`StudioError` shows the form again with the message), then recorded."""
    rater, token, assignment, item, form, form_id, shown = await _checked_form(st, request, position)
    if await run_in_threadpool(st.store.closed) is not None:
        return _closed_page(st)
    revise = form.get("revise") == "1"
    if revise and not await run_in_threadpool(st.revisable, rater, assignment):
        raise Denied(403, "This answer can no longer be revised (only your last answer can be, while "
                          "the study is open).")
    try:
        kw = read(form, item)
    except StudioError as exc:
        ctx = _task_context(st, rater, token, position, item, values=answers.shown_again(st.config, form),
                            error=str(exc), form_id=form_id, revise=revise)
        return st.page(f"{st.config.protocol}.html", status=400, **ctx)
    return await _record(st, rater, assignment, item, form_id, revise, shown=shown, **kw)
