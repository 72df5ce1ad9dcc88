"""The docs examples' fork server (``forkserver.py``) runs a command as a fresh interpreter
does: the same output, error output and exit status as the command run as it stands, for
exits, exceptions, signals, threads, ``atexit``, standard input and subprocesses; commands
in another environment are left to run as they stand; Ctrl-C reaches the command and a
killed client takes its command with it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .runner import fork_server, fork_server_log, run_env

SCRIPTS = {
    "argv.py": "import os, sys\nprint(sys.argv, sys.path[0] == os.getcwd(), __name__)\n"
               "sys.exit(3)\n",
    "message.py": "import sys\nsys.exit('no such thing: run it again with --fix')\n",
    "raises.py": "def f():\n    raise ValueError('bad value')\n\nf()\n",
    "interrupted.py": "raise KeyboardInterrupt\n",
    "killed.py": "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n",
    "shutdown.py": "import atexit, threading, time\natexit.register(print, 'atexit ran')\n"
                   "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done')))"
                   ".start()\nprint('main done')\n",
    "stdin.py": "import sys\nprint(sys.stdin.read().upper(), end='')\n",
    "child.py": "import subprocess, sys\n"
                "print(subprocess.run([sys.executable, '-c', 'print(7)'], capture_output=True,"
                " text=True).stdout.strip(), subprocess.run(['false']).returncode)\n",
    "closes.py": "import sys\nprint('{}')\nsys.stdout.close()\n",
    "pipe.py": "for i in range(100000):\n    print(i)\n",
    "draw.py": "import random\nimport numpy as np\nprint(random.random(), np.random.rand())\n",
    "sleeps.py": "import os, sys, time\nopen(sys.argv[1], 'w').write(str(os.getpid()))\n"
                 "time.sleep(60)\n",
}
#: commands whose output, error output and status must be those of the command as it stands
SAME_AS_EXEC = [
    "ieqa --version",
    "ieqa no-such-command",
    "python argv.py a 'b c'",
    "python message.py",
    "python raises.py",
    "python interrupted.py",
    "python killed.py",
    "python shutdown.py",
    "echo hello | python stdin.py",
    "python child.py",
    "python closes.py",
    "python pipe.py | head -2",
    "echo '{\"a\": [1]}' | python -m json.tool",
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    """(folder, environment that serves, environment that does not)."""
    folder = tmp_path_factory.mktemp("fork")
    for name, code in SCRIPTS.items():
        (folder / name).write_text(code)
    plain = run_env(folder)
    with fork_server(plain) as env:
        if "IEQA_DOCS_FORKSERVER" not in env:
            pytest.fail("the fork server did not start (IEQA_DOCS_FORK=0, or see its output)")
        yield folder, env, plain


def _bash(cmd: str, folder: Path, env: dict[str, str]) -> tuple[str, str, int]:
    r = subprocess.run(["bash", "-c", cmd + "; echo status=${PIPESTATUS[0]}"], cwd=folder,
                       env=env, capture_output=True, text=True, timeout=120)
    return r.stdout, r.stderr, r.returncode


@pytest.mark.parametrize("cmd", SAME_AS_EXEC)
def test_a_served_command_ends_as_the_command_run_as_it_stands(served, cmd: str) -> None:
    folder, env, plain = served
    before = len(fork_server_log(env))
    assert _bash(cmd, folder, env) == _bash(cmd, folder, plain)
    log = fork_server_log(env)[before:]
    assert len(log) == 1 and "served" in log[0], log  # the server ran it


def test_each_command_draws_afresh(served) -> None:
    folder, env, _ = served
    draws = [_bash("python draw.py", folder, env)[0].split() for _ in range(3)]
    assert len({d[0] for d in draws}) == len({d[1] for d in draws}) == 3, draws


def test_another_environment_runs_as_it_stands(served) -> None:
    folder, env, _ = served
    before = len(fork_server_log(env))
    out, _, _ = _bash("HF_HOME=/nonexistent python argv.py x", folder, env)
    assert out.startswith("['argv.py', 'x'] True __main__\nstatus=3")
    assert fork_server_log(env)[before:] == [
        {**fork_server_log(env)[before], "refused": ["python", "argv.py", "x"],
         "env_differs": ["HF_HOME"], "fds": 3}]


def _wait_gone(pid: int, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _start_sleeper(folder: Path, env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    pid_file = folder / f"pid-{time.monotonic_ns()}"
    proc = subprocess.Popen(["python", "sleeps.py", str(pid_file)], cwd=folder, env=env,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc, int(pid_file.read_text())


def test_ctrl_c_reaches_the_command(served) -> None:
    folder, env, _ = served
    proc, pid = _start_sleeper(folder, env)
    assert pid != proc.pid  # forked by the server, not the client itself
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGINT and err.rstrip().endswith("KeyboardInterrupt"), err
    assert _wait_gone(pid)


def test_a_killed_client_takes_its_command_with_it(served) -> None:
    folder, env, _ = served
    proc, pid = _start_sleeper(folder, env)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert _wait_gone(pid), "the served command outlived its killed client"
