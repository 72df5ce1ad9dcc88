"""Helpers of the studio tests: ShapesEdit manifests, studies, servers (in a thread or
a subprocess on 127.0.0.1), and a rater that answers forms over HTTP."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from ieqa.data.manifest import read_manifest, write_manifest
from ieqa.data.shapesedit import ShapesEditConfig, generate
from ieqa.studio import Store, StudyConfig, create_app, create_study
from ports import free_port

REPO = Path(__file__).resolve().parents[2]
#: Debian's chromium, which the browser tests drive through Playwright (None: not installed)
CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if os.path.exists(p)),
                shutil.which("chromium"))
XSS = '<script>window.__xss = 1; alert("xss")</script><img src=x onerror="window.__xss=2">'


def shapes_manifest(folder: Path, n: int = 12, k: int = 3, *, critique: bool = False,
                    xss_first: bool = False) -> Path:
    """A ShapesEdit set of ``n`` edits in groups of ``k`` (96 px PNGs); with ``critique``
    every sample gets a ``meta.critique``; with ``xss_first`` the first group's
    instruction is a script tag."""
    path = generate(folder, ShapesEditConfig(n=n, k=k, seed=3, size=96, photo_fraction=0.0))
    if not (critique or xss_first):
        return path
    samples = read_manifest(path)
    first = samples[0].group_id
    out = []
    for s in samples:
        meta = dict(s.meta)
        if critique:
            meta["critique"] = (f"The edit asked: {s.instruction} The {s.editor} editor's result "
                                "keeps the background; the requested change is visible.")
        instruction = XSS if xss_first and s.group_id == first else s.instruction
        out.append(s.model_copy(update={"meta": meta, "instruction": instruction}))
    target = folder / "studio.jsonl"
    write_manifest(out, target)
    return target


def make_study(folder: Path, manifest: Path, name: str = "study", guidelines: Path | None = None, **kw) -> Store:
    """A new study of ``manifest`` in ``folder/NAME.sqlite``."""
    return create_study(manifest, folder / f"{name}.sqlite", StudyConfig(**kw), guidelines=guidelines)


@contextmanager
def serve_in_thread(store: Store) -> Iterator[str]:
    """The study's app on uvicorn in a thread; yields its base URL."""
    import uvicorn

    config = uvicorn.Config(create_app(store), host="127.0.0.1", port=free_port(), log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the studio server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        thread.join(10)


def start_subprocess(manifest: Path, db: Path, port: int) -> subprocess.Popen:
    """``python -m ieqa studio MANIFEST --db DB --port PORT`` (an existing study), up and
    answering /healthz."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "ieqa", "studio", str(manifest), "--db", str(db),
                             "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"ieqa studio exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("ieqa studio did not answer /healthz within 60 s")
        time.sleep(0.05)


_FIELD = re.compile(r'name="(csrf|submission)" value="([^"]+)"')


def form_fields(html: str) -> dict[str, str]:
    """The hidden csrf and submission fields of a task page's answer form (the first
    form; the "cannot judge" form after it has a submission id of its own)."""
    out: dict[str, str] = {}
    for name, value in _FIELD.findall(html):
        out.setdefault(name, value)
    return out


def rater_client(base: str, token: str) -> httpx.Client:
    """An HTTP client logged in with an invite token (its cookie)."""
    client = httpx.Client(base_url=base, timeout=30, follow_redirects=False)
    r = client.get(f"/invite/{token}")
    assert r.status_code == 303, r.text
    return client


def open_next(client: httpx.Client) -> tuple[str, str] | None:
    """``(task path, html)`` of the rater's next item, or None when all are done."""
    r = client.get("/study/next")
    assert r.status_code == 303
    path = r.headers["location"]
    if path == "/study/done":
        return None
    page = client.get(path)
    assert page.status_code == 200, page.text
    return path, page.text
