"""A fork server for the docs examples: ``ieqa`` and ``python SCRIPT`` without the import.

Most of a docs example's time is the two to four seconds each ``ieqa`` command or Python
block spends importing ieqa, torch and transformers: the docs pages run about 160 commands
and 100 Python blocks. This server imports them once (:data:`PRELOAD`), then for each
command forks a copy of itself that runs the command as a fresh interpreter would:

* the command's own standard input, output and error (its file descriptors, passed over a
  Unix socket), working folder and arguments; ``sys.argv`` and ``sys.path[0]`` as
  ``python -m MODULE`` or ``python SCRIPT`` set them; Python's, NumPy's and the random
  module's generators seeded afresh; its own session (process group), so a command that
  runs over is stopped with everything it started;
* its exit status as the interpreter's (``SystemExit``, an uncaught exception, a signal),
  after the steps of the interpreter's own shutdown that a program can see (threads
  joined, ``atexit`` handlers run, output flushed: :func:`run`).

It only serves a command whose environment is the server's own (but for the variables a
shell sets: :data:`SHELL_VARIABLES`): a variable read at import time (``HF_HUB_OFFLINE``,
``HF_HOME``, thread counts) would otherwise keep the server's value. Any other command, and
every command when the server is not running, is run by the client as it stands
(``exec python -m ieqa ...``), so a page never depends on the server. Differences left:
the interpreter's string-hash seed is the server's for every command, a warning an import
printed in the server is not printed again, and modules are not torn down at exit.

The client is :mod:`fork_client` (the ``ieqa`` and ``python`` on a block's ``PATH``);
``IEQA_DOCS_FORK=0`` turns the server off (every command exec'd, as before). Each served
or refused command is a line of the server's log (``SOCKET.log``).

Run: ``python forkserver.py SOCKET`` (``SOCKET.ready`` appears once it serves).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import os
import select
import signal
import socket
import sys
import time
import types

#: imported once by the server: what most commands import (transformers.modeling_utils
#: alone takes 1.4 s: torch.distributed, sympy), and every ieqa command's module
#: (``ieqa.commands``; what they import for their work is imported when they run it).
#: Not diffusers: its import prints warnings that its commands would then not print.
PRELOAD = ("ieqa.cli", "numpy", "scipy.stats", "PIL.Image", "PIL.ImageOps", "torch",
           "transformers", "transformers.modeling_utils", "huggingface_hub",
           "safetensors.torch", "accelerate", "peft", "pandas", "pyarrow.parquet", "pydantic",
           "rich.progress", "rich.table", "typer", "matplotlib.figure",
           "matplotlib.backends.backend_agg")
#: variables the shell sets for each command: they may differ from the server's
SHELL_VARIABLES = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})
#: the largest request (arguments, folder, environment), bytes
MAX_REQUEST = 1 << 20


def _log(path: str, **fields: object) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"time": round(time.time(), 3), **fields}) + "\n")


def env_differences(env: dict[str, str], own: dict[str, str]) -> list[str]:
    """The variables (names only) whose values differ between ``env`` and ``own``."""
    return sorted(k for k in set(env) | set(own)
                  if k not in SHELL_VARIABLES and env.get(k) != own.get(k))


def serve(path: str) -> dict:
    """Serve commands on the Unix socket ``path``; returns only in a forked command, with
    its request."""
    own = dict(os.environ)  # before the imports: what a command's environment must equal
    for name in PRELOAD:
        importlib.import_module(name)
    from ieqa.commands import COMMANDS

    for name in sorted(set(COMMANDS.values())):
        importlib.import_module(f"ieqa.commands.{name}")
    log = path + ".log"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    open(path + ".ready", "w").close()
    sys.stdout.flush()
    sys.stderr.flush()
    while True:
        conn, _ = listener.accept()
        while True:  # reap the shepherds that are done
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if os.fork() == 0:
            listener.close()
            return _shepherd(conn, own, log)  # returns in the command's process only
        conn.close()


def _shepherd(conn: socket.socket, own: dict[str, str], log: str) -> dict:
    """The process that forks one command, relays signals to it and reports its status."""
    data, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
    request = json.loads(data)
    differ = env_differences(request["env"], own)
    if differ or len(fds) != 3:
        _log(log, refused=request["argv"], env_differs=differ, fds=len(fds))
        conn.send(json.dumps({"refused": differ}).encode())
        os._exit(0)
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the command
        conn.close()
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        for name in SHELL_VARIABLES:
            if name in request["env"]:
                os.environ[name] = request["env"][name]
            else:
                os.environ.pop(name, None)
        return request
    for fd in fds:
        os.close(fd)
    conn.send(b'{"started": true}')
    done = os.pidfd_open(pid)
    while True:
        ready, _, _ = select.select([conn, done], [], [])
        if done in ready:
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            _log(log, served=request["argv"], status=code,
                 seconds=round(time.monotonic() - t0, 2))
            try:
                conn.send(json.dumps({"status": code}).encode())
            except OSError:
                pass
            os._exit(0)
        message = conn.recv(64)
        try:
            # a signal the client got, or the client is gone (killed): stop the command
            os.killpg(pid, int(message) if message else signal.SIGKILL)
        except ProcessLookupError:
            pass
        if not message:
            os.waitpid(pid, 0)
            _log(log, served=request["argv"], status="client gone")
            os._exit(0)


def _start(request: dict) -> None:
    """Run the command as ``python -m MODULE ARGS`` or ``python SCRIPT ARGS`` would."""
    import runpy

    # the random module seeds itself afresh in a forked child (os.register_at_fork);
    # NumPy's global generator, seeded from the OS at import, does not
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    if request["module"] is not None:
        sys.argv = ["-m", *request["args"]]
        sys.path[0] = os.getcwd()
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    else:
        # as the interpreter runs a script: a fresh __main__ whose __file__ is absolute,
        # sys.argv[0] as given, the script's folder first on sys.path
        script = request["script"]
        path = os.path.abspath(script)
        sys.argv = [script, *request["args"]]
        sys.path[0] = os.path.dirname(os.path.realpath(script))
        main = types.ModuleType("__main__")
        main.__file__, main.__cached__ = path, None
        main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
        sys.modules["__main__"] = main
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        exec(code, main.__dict__)


def _own_frames(tb):  # noqa: ANN001, ANN202 - a traceback
    """``tb`` from the command's first frame (the server's and runpy's left out)."""
    while tb is not None and tb.tb_next is not None and (
            tb.tb_frame.f_code.co_filename in (__file__, "<frozen runpy>")
            or tb.tb_frame.f_globals.get("__name__") == "runpy"):
        tb = tb.tb_next
    return tb


def run(request: dict) -> None:
    """Run the command, then end as the interpreter ends a program (``Py_FinalizeEx``):
    the exit status of ``SystemExit`` or an uncaught exception (its traceback printed),
    non-daemon threads joined, ``atexit`` handlers run, standard output and error flushed
    (status 120 when that fails), death by SIGINT after an uncaught ``KeyboardInterrupt``.
    What it leaves out is the teardown of every module (0.7 s with torch loaded; only the
    ``__del__`` of objects still alive then could tell)."""
    import atexit
    import threading

    status, interrupted = 0, False
    try:
        _start(request)
    except SystemExit as exc:
        if exc.code is None:
            status = 0
        elif isinstance(exc.code, int):
            status = exc.code & 0xFF
        else:
            print(exc.code, file=sys.stderr)
            status = 1
    except BaseException as exc:  # noqa: BLE001 - the program's uncaught exception
        exc.__traceback__ = _own_frames(exc.__traceback__)  # what the hook prints
        sys.excepthook(type(exc), exc, exc.__traceback__)
        status, interrupted = 1, isinstance(exc, KeyboardInterrupt)
    threading._shutdown()  # what the interpreter does first at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except Exception:  # noqa: BLE001 - as the interpreter: reported, status 120
            status = 120
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status)


if __name__ == "__main__":
    # only a command's process returns from serve()
    run(serve(sys.argv[1]))
