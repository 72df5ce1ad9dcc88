"""The ``ieqa`` and ``python`` of a docs block's ``PATH`` (see :mod:`forkserver`).

``fork_client.py ieqa ARGS`` runs ``ieqa ARGS``, ``fork_client.py python ARGS`` runs
``python ARGS``: through the fork server named by ``IEQA_DOCS_FORKSERVER`` when it serves
the command (``python -m MODULE`` and ``python SCRIPT``, in the server's environment), else
as it stands (``exec``). Signals the client gets (Ctrl-C) go on to the command; the
client's exit status is the command's. Only the standard library: it starts in
milliseconds.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys


def _request(tool: str, args: list[str]) -> dict | None:
    if tool == "ieqa":
        return {"module": "ieqa", "args": args}
    if len(args) >= 2 and args[0] == "-m":
        return {"module": args[1], "args": args[2:]}
    if args and not args[0].startswith("-") and os.path.isfile(args[0]):
        return {"module": None, "script": args[0], "args": args[1:]}
    return None  # python -c, python - < file, python with options: as it stands


def _served(request: dict, path: str) -> int | None:
    """The command's exit status, or None when the server did not run it."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        conn.connect(path)
    except OSError:
        return None
    request.update(argv=sys.argv[1:], cwd=os.getcwd(), env=dict(os.environ))
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    if "started" not in json.loads(conn.recv(1 << 16) or b'{"refused": []}'):
        return None

    def relay(signum: int, _frame: object) -> None:
        try:
            conn.send(str(signum).encode())
        except OSError:  # the command has ended: its status is on its way
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, relay)
    reply = conn.recv(1 << 16)
    status = json.loads(reply)["status"] if reply else -signal.SIGKILL
    if status < 0:  # ended by a signal: end by it too
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    return status


def main() -> None:
    tool, args = sys.argv[1], sys.argv[2:]
    path = os.environ.get("IEQA_DOCS_FORKSERVER")
    request = _request(tool, args)
    if path and request is not None:
        status = _served(request, path)
        if status is not None:
            sys.exit(status)
    argv = [sys.executable, "-m", "ieqa", *args] if tool == "ieqa" else [sys.executable, *args]
    os.execv(sys.executable, argv)


if __name__ == "__main__":
    main()
