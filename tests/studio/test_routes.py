"""The studio app as routers (issue 42, part 7): ``create_app`` only assembles (the routers
of ``ieqa.studio.routes`` around one ``StudioState``), and the route table is the one the
app had before the split."""

from __future__ import annotations

import inspect

from ieqa.studio.app import create_app

from .helpers import make_study

#: (methods, path) of every route of the app before the split into routers
ROUTES = [
    ([], "/static"),
    (["GET"], "/"),
    (["GET"], "/admin"),
    (["GET"], "/admin/export/{name}"),
    (["GET"], "/admin/login"),
    (["GET"], "/favicon.ico"),
    (["GET"], "/guidelines/img/{n}"),
    (["GET"], "/healthz"),
    (["GET"], "/invite/{token}"),
    (["GET"], "/media/{key}/{slot}"),
    (["GET"], "/study"),
    (["GET"], "/study/done"),
    (["GET"], "/study/guidelines"),
    (["GET"], "/study/next"),
    (["GET"], "/study/task/{position}"),
    (["GET"], "/study/task/{position}/feedback"),
    (["GET"], "/study/task/{position}/revise"),
    (["POST"], "/admin/close"),
    (["POST"], "/admin/raters/add"),
    (["POST"], "/admin/raters/{rater}/{action}"),
    (["POST"], "/invite/{token}/switch"),
    (["POST"], "/study/task/{position}"),
    (["POST"], "/study/task/{position}/skip"),
]


def _route_table(app) -> list[tuple[list[str], str]]:
    """Sorted ``(methods, path)`` of the app's routes, those of included routers too (newer
    FastAPI keeps an included router as one entry of ``app.routes``)."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # FastAPI that copies an included router's routes into the app
        routes = list(app.routes)
    else:
        routes = list(iter_route_contexts(app.routes))
    return sorted((sorted(getattr(r, "methods", None) or []), r.path) for r in routes)


def test_create_app_only_assembles_and_keeps_the_route_table(tmp_path, shapes):
    assert len(inspect.getsource(create_app).splitlines()) < 60
    app = create_app(make_study(tmp_path, shapes, raters=2, per_item=1))
    assert _route_table(app) == ROUTES
    assert (app.openapi_url, app.docs_url, app.redoc_url) == (None, None, None)
