"""Runs the code blocks of the documentation pages (used by ``test_examples.py``).

Which pages: :data:`EXECUTED_PAGES` (getting started and every how-to). On those pages
every fenced ``bash`` and ``python`` block runs, in page order, in one temporary folder
per page, so a block can use the files an earlier block wrote:

* ``bash`` blocks run with ``bash -e -o pipefail``; ``ieqa`` and ``python`` on their
  ``PATH`` are this interpreter (``python -m ieqa``), with this checkout's ``src`` first
  on ``PYTHONPATH`` and ``HF_HUB_OFFLINE=1``; ``test_examples.py`` runs them on a fork
  server that has imported torch and transformers once (:mod:`forkserver`; a command in
  another environment, a background server and a local Ray run as they stand);
* ``python`` blocks run as a script with the same interpreter and environment; each block
  is a program of its own (imports included), so it can be copied as it stands.

Other blocks (``text``, ``yaml``, ``csv``, ``json``, ...) are shown only. HTML comments
right before a block (they do not show on the site) change what happens to it:

``<!-- skip: CATEGORY: REASON -->``
    never run; REASON is shown by pytest. CATEGORY is one of :data:`SKIP_CATEGORIES`:
    ``gpu`` (needs a GPU or a 7B-class model), ``network`` (downloads or installs
    something) or ``hours`` (hours of CPU). A skip without one of them fails the block:
    every other example must run, on a tiny model, a local server or fewer steps.
``<!-- requires: FEATURE -->``
    run only when ieqa has FEATURE, else skipped with the FEATURE's description. FEATURE is
    ``command NAME`` (an ``ieqa`` subcommand), ``option COMMAND --name`` (an option of
    one) or a name in :data:`FEATURES` (a probe of behaviour). Only a feature that is
    cleanly absent skips: an unknown FEATURE, or a probe that raises (ieqa's CLI does not
    import, the probe's own run crashes), fails the block with the error. This marks
    examples of features that are still being built: once a feature has landed the block
    runs on its own, and the marker can be deleted (``sed -i '/^<!-- requires:/d'
    docs/getting-started.md docs/howto/*.md``). Several ``requires`` may precede one block.
``<!-- file: PATH -->``
    write the block's text to PATH (relative to the page's folder) instead of running it:
    a YAML recipe or a CSV shown on the page, used by later blocks.
``<!-- background: URL -->``
    a long-running ``bash`` block (a server): started in the background, the page goes on
    once ``URL`` answers 200 (at most :data:`BACKGROUND_READY_S` seconds), and it is
    stopped when the page ends, as Ctrl-C would stop it (SIGINT to its process group; then
    SIGTERM, then SIGKILL); its exit status is not checked.

Two comment forms stand on their own:

``<!-- check ... -->``
    Python code inside the comment, run like a ``python`` block but not shown: asserts
    that the blocks before it did what the page says.
``<!-- fixture: checkout -->``
    the page's blocks run from a checkout of the repository: its :data:`CHECKOUT_FOLDERS`
    (``benchmarks``, ``src``) are linked into the page's folder, so ``python
    benchmarks/NAME.py`` and ``PYTHONPATH=src`` work as written.
``<!-- fixture: free-port 8000 -->``
    the page's blocks use a free TCP port instead of 8000 (``127.0.0.1:8000``,
    ``localhost:8000``, ``--port 8000`` and ``port=8000`` are rewritten), so a server a page
    starts cannot collide with another test run. A page may ask for several (8000, 8001).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
EXECUTED_PAGES = ("getting-started.md", "howto/*.md")
RUN_LANGUAGES = ("bash", "python")
BLOCK_TIMEOUT_S = 300
#: The only reasons a block may be skipped for: ``<!-- skip: CATEGORY: REASON -->``.
SKIP_CATEGORIES = {
    "gpu": "needs a GPU or a 7B-class model",
    "network": "downloads or installs something",
    "hours": "takes hours of CPU",
}
#: the folders of the checkout that ``<!-- fixture: checkout -->`` links into a page's folder
CHECKOUT_FOLDERS = ("benchmarks", "src")
#: longest wait for a ``background`` block's URL to answer 200, seconds
BACKGROUND_READY_S = 120

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<lang>[\w+-]*)[^\n`]*$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*(?P<key>skip|requires|file|fixture|background)\s*:\s*(?P<value>.*?)\s*-->\s*$")
_CHECK_OPEN = re.compile(r"^\s*<!--\s*check\s*$")


@dataclass
class Block:
    """One runnable unit of a page."""

    page: str
    line: int
    kind: str  # bash | python | check | file
    code: str
    skip: str | None = None  # the skip markers' reasons, joined by "; "
    skips: list[str] = field(default_factory=list)  # each skip marker's reason
    requires: list[str] = field(default_factory=list)
    file: str | None = None
    background: str | None = None  # the URL that answers 200 once the block is up

    @property
    def label(self) -> str:
        return f"{self.page}:{self.line}-{self.kind}"


@dataclass
class Page:
    name: str
    blocks: list[Block]
    fixtures: list[str]


def parse_page(path: Path) -> Page:
    """The runnable blocks of one page, with their directives."""
    name = path.relative_to(DOCS).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    fixtures: list[str] = []
    pending: dict[str, list[str]] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = _DIRECTIVE.match(line)
        if directive:
            key, value = directive["key"], directive["value"]
            if key == "fixture":
                fixtures.append(value)
            else:
                pending.setdefault(key, []).append(value)
            i += 1
            continue
        if _CHECK_OPEN.match(line):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "-->")
            code = "\n".join(lines[i + 1:end])
            blocks.append(Block(name, i + 1, "check", code, requires=pending.get("requires", [])))
            pending = {}
            i = end + 1
            continue
        fence = _FENCE.match(line)
        if fence:
            indent, ticks, lang = fence["indent"], fence["fence"], fence["lang"]
            end = next(j for j in range(i + 1, len(lines))
                       if lines[j].strip() == ticks and lines[j].startswith(indent))
            body = [x[len(indent):] if x.startswith(indent) else x.lstrip() for x in lines[i + 1:end]]
            code = "\n".join(body) + "\n"
            target = pending.get("file", [None])[-1]
            if target is not None or lang in RUN_LANGUAGES:
                blocks.append(Block(name, i + 1, "file" if target else lang, code,
                                    skip="; ".join(pending["skip"]) if "skip" in pending else None,
                                    skips=pending.get("skip", []),
                                    requires=pending.get("requires", []), file=target,
                                    background=pending.get("background", [None])[-1]))
            pending = {}
            i = end + 1
            continue
        if line.strip():
            pending = {}  # a directive applies to the block right after it
        i += 1
    return Page(name, blocks, fixtures)


def executed_pages() -> list[Page]:
    paths: list[Path] = []
    for pattern in EXECUTED_PAGES:
        paths += sorted(DOCS.glob(pattern))
    return [parse_page(p) for p in paths]


# ------------------------------------------------------------------ features being built


def _cli_root():  # noqa: ANN202 - Typer's click command
    import typer

    from ieqa.cli import app

    root = typer.main.get_command(app)
    return root, root.context_class(root, info_name="ieqa")


def has_command(name: str) -> bool:
    root, ctx = _cli_root()
    return name in root.list_commands(ctx)


def has_option(command: str, option: str) -> bool:
    root, ctx = _cli_root()
    cmd = root.get_command(ctx, command)
    if cmd is None:
        return False
    sub = cmd.context_class(cmd, info_name=command, parent=ctx)
    return any(option in (*p.opts, *p.secondary_opts) for p in cmd.get_params(sub))


#: Named features: (what it is, probe). A probe answers ``False`` when the feature is
#: cleanly absent (the block is skipped) and ``True`` when it is there; a probe that
#: raises, or answers anything but a bool, could not tell: the blocks that require it fail
#: with its error. Probes run at most once per session. A feature that has landed loses
#: its probe together with its ``requires`` markers (none is pending today).
FEATURES: dict[str, tuple[str, Callable[[], bool]]] = {}


class RequirementError(Exception):
    """A ``requires`` value that is unknown or whose probe errored."""


@functools.cache
def _requirement(requirement: str) -> tuple[bool | None, str]:
    """``(met, description)``; ``(None, message)`` when it cannot be decided."""
    words = requirement.split()
    try:
        if len(words) == 2 and words[0] == "command":
            return has_command(words[1]), f"the `ieqa {words[1]}` command"
        if len(words) == 3 and words[0] == "option":
            return has_option(words[1], words[2]), f"`ieqa {words[1]} {words[2]}`"
        if requirement not in FEATURES:
            return None, (f"unknown requirement {requirement!r}: use 'command NAME', "
                          f"'option COMMAND --name' or one of {sorted(FEATURES)}")
        description, probe = FEATURES[requirement]
        met = probe()
    except Exception as exc:  # noqa: BLE001 - reported as the blocks' failure
        return None, f"the probe of `requires: {requirement}` raised {exc!r}"
    if not isinstance(met, bool):
        return None, f"the probe of `requires: {requirement}` answered {met!r}, not a bool"
    return met, description


def requirement_met(requirement: str) -> tuple[bool, str]:
    """``(met, description)`` of one ``requires`` value; raises :class:`RequirementError`
    for an unknown value or a probe that errored (never an unmet requirement: those skip
    only when the feature is cleanly absent)."""
    met, text = _requirement(requirement)
    if met is None:
        raise RequirementError(text)
    return met, text


def skip_problem(reason: str) -> str | None:
    """Why a ``skip`` marker's reason is not allowed (``None``: it is): it must start with
    one of the :data:`SKIP_CATEGORIES` and a colon, and say more after it."""
    category, colon, rest = reason.partition(":")
    if colon and category.strip() in SKIP_CATEGORIES and rest.strip():
        return None
    allowed = ", ".join(f"'{name}: ...' ({what})" for name, what in SKIP_CATEGORIES.items())
    return (f"skip reason {reason!r} has no allowed category. Make the block run (a tiny "
            "model, a local server, fewer steps or a smaller set; see the markers in "
            "docs/development.md), or, if it truly cannot run in CI, start the reason with "
            f"one of {allowed}")


def precheck(block: Block) -> tuple[str, str] | None:
    """What happens to ``block`` before it runs: ``("skipped", reason)`` for a ``skip``
    marker with an allowed category or a required feature that is absent,
    ``("failed", message)`` for a ``skip`` marker without an allowed category (see
    :func:`skip_problem`) or a ``requires`` that cannot be decided (unknown, or its probe
    errored), ``None`` to run it."""
    if block.skip is not None:
        for reason in block.skips or [block.skip]:
            problem = skip_problem(reason)
            if problem is not None:
                return "failed", f"{block.label}: {problem}"
        return "skipped", block.skip
    missing = []
    for requirement in block.requires:
        try:
            met, description = requirement_met(requirement)
        except RequirementError as exc:
            return "failed", f"{block.label}: {exc}"
        if not met:
            missing.append(description)
    return ("skipped", f"pending: needs {', '.join(missing)}") if missing else None


# ------------------------------------------------------------------------------ running


def run_env(workdir: Path) -> dict[str, str]:
    """The environment of every block: ``ieqa`` and ``python`` of this interpreter first on
    PATH (:mod:`fork_client`, which runs them on the fork server of
    ``IEQA_DOCS_FORKSERVER`` when there is one), and its ``torchrun`` and ``accelerate``, this checkout's ``src`` first on
    PYTHONPATH, offline, fixed terminal width, and patient Ray Serve proxy checks. The
    tools are written to ``workdir/.bin``: pages that share ``workdir`` share one
    environment (and so one fork server, :func:`fork_server`)."""
    bindir = workdir / ".bin"
    if not bindir.is_dir():
        bindir.mkdir(parents=True)
        client = Path(__file__).with_name("fork_client.py")
        for tool in ("ieqa", "python"):
            (bindir / tool).write_text(
                f'#!/bin/sh\nexec "{sys.executable}" -S -E "{client}" {tool} "$@"\n')
        # the launchers of multi-process training, this interpreter's (run as they stand)
        for tool, module in (("torchrun", "torch.distributed.run"),
                             ("accelerate", "accelerate.commands.accelerate_cli")):
            (bindir / tool).write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n')
        for f in bindir.iterdir():
            f.chmod(0o755)
    env = dict(os.environ)
    env.pop("IEQA_DOCS_FORKSERVER", None)
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), env.get("PYTHONPATH"))
                                        if p)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", COLUMNS="100", TERM="dumb",
               NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1", TOKENIZERS_PARALLELISM="false")
    # Ray Serve kills its HTTP proxy when three readiness checks of 5 s each fail, and
    # serve.start then fails; a proxy starting beside another page on a busy 2-core CI
    # machine can take longer than that
    env.setdefault("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S", "30")
    return env


#: longest wait for the fork server to import what it preloads, seconds
FORKSERVER_READY_S = 120


@contextlib.contextmanager
def fork_server(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """Run :mod:`forkserver` with ``env`` while the ``with`` lasts; yields ``env`` with
    ``IEQA_DOCS_FORKSERVER`` set to its socket, so that the blocks run with that
    environment have their ``ieqa`` and ``python SCRIPT`` commands served by it (those run
    with another environment are not). ``IEQA_DOCS_FORK=0``, or a server that is not up
    within :data:`FORKSERVER_READY_S`, yields ``env`` as it is: every command runs as it
    stands."""
    if os.environ.get("IEQA_DOCS_FORK", "1") == "0":
        yield env
        return
    folder = Path(tempfile.mkdtemp(prefix="ieqa-fork-"))  # short: a socket path is < 108 bytes
    sock = str(folder / "s")
    env = {**env, "IEQA_DOCS_FORKSERVER": sock}
    with open(folder / "server.out", "wb") as out:
        proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("forkserver.py")),
                                 sock], env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + FORKSERVER_READY_S
        while not os.path.exists(sock + ".ready") and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        yield env if os.path.exists(sock + ".ready") else {
            k: v for k, v in env.items() if k != "IEQA_DOCS_FORKSERVER"}
    finally:
        _kill_group(proc.pid)  # the server; commands are in sessions of their own
        proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


def fork_server_log(env: dict[str, str]) -> list[dict]:
    """The served and refused commands so far of the fork server in ``env``."""
    sock = env.get("IEQA_DOCS_FORKSERVER")
    if not sock or not os.path.exists(sock + ".log"):
        return []
    with open(sock + ".log", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@dataclass
class Outcome:
    block: Block
    seconds: float
    output: str


class BlockFailed(AssertionError):
    pass


def _kill_group(pid: int) -> None:
    """SIGKILL the process group of ``pid`` (gone already: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def run_block(block: Block, workdir: Path, env: dict[str, str],
              replace: dict[str, str] | None = None) -> Outcome:
    """Run one block in ``workdir``; raise :class:`BlockFailed` with its output on failure.
    ``replace`` maps texts of the block to rewrite (a ``free-port`` fixture's)."""
    code = rewrite(block.code, replace)
    t0 = time.perf_counter()
    if block.kind == "file":
        target = workdir / block.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code, encoding="utf-8")
        return Outcome(block, 0.0, "")
    script = workdir / f".block-{block.line}.{'sh' if block.kind == 'bash' else 'py'}"
    script.write_text(code, encoding="utf-8")
    # a Python block: ``python SCRIPT`` through fork_client.py, as in a bash block
    cmd = (["bash", "-e", "-o", "pipefail", str(script)] if block.kind == "bash"
           else [sys.executable, "-S", "-E", str(Path(__file__).with_name("fork_client.py")),
                 "python", str(script)])
    # its own session, so that a block that runs over is stopped with everything it started
    # (a local Ray's raylet and workers would otherwise outlive it and slow the rest down)
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        output, _ = proc.communicate()
        raise BlockFailed(f"{block.label} ran over {BLOCK_TIMEOUT_S} s:\n{code}"
                          f"--- output\n{(output or '')[-4000:]}") from None
    if proc.returncode != 0:
        raise BlockFailed(f"{block.label} exited with {proc.returncode}\n--- code\n{code}"
                          f"--- output\n{output[-6000:]}")
    return Outcome(block, time.perf_counter() - t0, output)


def link_checkout(workdir: Path) -> None:
    """``<!-- fixture: checkout -->``: link the checkout's :data:`CHECKOUT_FOLDERS` into
    ``workdir``."""
    for name in CHECKOUT_FOLDERS:
        (workdir / name).symlink_to(REPO / name, target_is_directory=True)


def port_replacements(port: int, original: int = 8000) -> dict[str, str]:
    """The rewrites of ``<!-- fixture: free-port ORIGINAL -->``."""
    return {f"127.0.0.1:{original}": f"127.0.0.1:{port}", f"localhost:{original}": f"localhost:{port}",
            f"--port {original}": f"--port {port}", f"port={original}": f"port={port}"}


def rewrite(code: str, replace: dict[str, str] | None) -> str:
    for old, new in (replace or {}).items():
        code = code.replace(old, new)
    return code


def start_background(block: Block, workdir: Path, env: dict[str, str],
                     replace: dict[str, str] | None = None) -> Callable[[], None]:
    """Start a ``background`` block; return once its URL answers 200. Returns the function
    that stops it. Raises :class:`BlockFailed` when it exits or is not up in time."""
    import http.client
    import signal
    import urllib.error
    import urllib.request

    code = rewrite(block.code, replace)
    url = rewrite(block.background or "", replace)
    script = workdir / f".block-{block.line}.sh"
    script.write_text(code, encoding="utf-8")
    log = workdir / f".block-{block.line}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", str(script)], cwd=workdir, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def stop() -> None:
        # first as Ctrl-C in a terminal would (SIGINT to the process group): a server with
        # helpers in its group, such as the local Ray of `ieqa serve --replicas`, stops
        # them itself (Ray's processes ignore SIGINT; a SIGTERM to the whole group would
        # kill them under the server, whose shutdown then waits for them in vain)
        for sig, wait_s in ((signal.SIGINT, 30), (signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            if proc.poll() is not None:
                break
            os.killpg(proc.pid, sig)
            try:
                proc.wait(wait_s)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)  # whatever the block left behind

    deadline = time.monotonic() + BACKGROUND_READY_S
    while True:
        if proc.poll() is not None:
            raise BlockFailed(f"{block.label} exited with {proc.returncode} before {url} answered"
                              f"\n--- code\n{code}--- output\n{log.read_text()[-6000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return stop
                last = f"HTTP {answer.status}"
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            # not up yet, or another program holds the port (it answers something that is
            # not HTTP: then the block's server cannot bind and exits, or the wait ends)
            last = f"{type(exc).__name__}: {exc}"[:300]
        if time.monotonic() > deadline:
            stop()
            raise BlockFailed(f"{block.label}: {url} did not answer 200 within "
                              f"{BACKGROUND_READY_S} s (last answer: {last})"
                              f"\n--- output\n{log.read_text()[-6000:]}")
        time.sleep(0.2)
