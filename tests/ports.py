"""The one place tests get a TCP port for a server they start."""
from __future__ import annotations

import random
import socket

# Below Linux's ephemeral range (32768-60999: what bind(0) and outgoing connections get)
# and above Ray's worker ports (10002-19999). A port handed out by bind(0) is free only
# "right now": a Ray process started next may be given the same one as its own ephemeral
# port, and the test's server then cannot bind it (CI saw Ray's gRPC answer on the port
# a docs page had picked for `ieqa serve --replicas`).
PORT_RANGE = (20000, 32767)


def free_port(attempts: int = 200) -> int:
    """A TCP port on 127.0.0.1 that is free now and outside the ranges the kernel and Ray
    hand out on their own. Raises ``RuntimeError`` after ``attempts`` ports in use."""
    rng = random.Random()
    for _ in range(attempts):
        port = rng.randint(*PORT_RANGE)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORT_RANGE} after {attempts} tries; "
                       "stop the servers left from earlier runs (ss -ltnp) and run again")
