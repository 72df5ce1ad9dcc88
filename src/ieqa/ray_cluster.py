"""Starting or joining Ray for ``--engine ray`` and ``ieqa serve --replicas``, failing fast.

Ray's own start waits a long time for a cluster it cannot reach (``ray.init(address=
"127.0.0.1:1")`` retries for minutes) and schedules work that asks for a GPU the cluster
does not have forever. :func:`start_ray` checks both first and raises an
:class:`~ieqa.errors.IeqaError` that says what to do, within seconds:

* an address (``HOST:PORT`` of a cluster's head, or ``ray://HOST:PORT`` of its client
  server) must accept a TCP connection within ``connect_timeout_s``, and then complete a
  gRPC handshake (Ray's protocol) within :data:`HANDSHAKE_TIMEOUT_S`: a port that answers
  but is not Ray (a web server, say) would otherwise keep ``ray.init`` retrying for
  minutes, deaf to SIGTERM;
* once joined, every replica's request (``num_gpus``, ``num_cpus``) must fit on the
  cluster as it is: a local Ray on a machine without a GPU has none to give.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from ieqa.errors import IeqaError

__all__ = ["HANDSHAKE_TIMEOUT_S", "RayStartError", "check_address", "check_resources",
           "start_ray"]

#: how long a reachable address has to complete a gRPC handshake (Ray's GCS and client
#: server speak gRPC) before it is called not Ray
HANDSHAKE_TIMEOUT_S = 10.0


class RayStartError(IeqaError):
    """Ray could not be started or joined, or cannot give what a replica asks for."""


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``HOST:PORT`` or ``ray://HOST:PORT``; None for ``auto`` and
    other forms Ray resolves itself."""
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or "127.0.0.1", int(port)


def check_address(address: str | None, connect_timeout_s: float = 5.0) -> None:
    """Raise :class:`RayStartError` unless ``address`` (when it names a host and port)
    accepts a TCP connection within ``connect_timeout_s`` seconds."""
    if not address:
        return
    target = _host_port(address)
    if target is None:
        return
    try:
        with socket.create_connection(target, timeout=connect_timeout_s):
            pass
    except OSError as exc:
        raise RayStartError(
            f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}); start it "
            "there (`ray start --head`, whose output prints the address), check the address "
            "and port, or leave the address out to start a local Ray") from None
    _check_grpc(address, target)


def _check_grpc(address: str, target: tuple[str, int]) -> None:
    """Raise :class:`RayStartError` unless ``target`` completes a gRPC handshake within
    :data:`HANDSHAKE_TIMEOUT_S`."""
    if os.environ.get("RAY_USE_TLS", "0").lower() not in ("", "0", "false"):
        return  # a TLS cluster: the plain handshake below cannot tell; ray.init will
    try:
        import grpc
    except ImportError:  # pragma: no cover - grpcio comes with ray
        return
    host, port = target
    channel = grpc.insecure_channel(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=HANDSHAKE_TIMEOUT_S)
    except grpc.FutureTimeoutError:
        raise RayStartError(
            f"{address} answers but is not a Ray cluster: no gRPC handshake within "
            f"{HANDSHAKE_TIMEOUT_S:g} s. Give the head's GCS address that `ray start --head` "
            "prints (port 6379 by default; ray://HOST:10001 for a Ray Client server), or "
            "leave the address out to start a local Ray") from None
    finally:
        channel.close()


def check_resources(ray: Any, *, num_gpus: float = 0.0, num_cpus: float = 0.0,
                    option: str = "--gpus-per-replica") -> None:
    """Raise :class:`RayStartError` when one replica's ``num_gpus`` / ``num_cpus`` exceed
    what the joined cluster has in total (``ray.cluster_resources()``)."""
    total = ray.cluster_resources()
    gpus, cpus = float(total.get("GPU", 0.0)), float(total.get("CPU", 0.0))
    if num_gpus > gpus:
        raise RayStartError(
            f"a replica asks for {num_gpus:g} GPU(s) and the Ray cluster has {gpus:g}; on a "
            f"machine without a GPU use {option} 0, or join a cluster with GPUs (its "
            "address); an autoscaling cluster must already have a GPU node up")
    if num_cpus > cpus:
        raise RayStartError(
            f"a replica asks for {num_cpus:g} CPU(s) and the Ray cluster has {cpus:g}; ask "
            "for fewer (--cpus-per-replica) or join a larger cluster")


def start_ray(address: str | None = None, *, num_gpus: float = 0.0, num_cpus: float = 0.0,
              connect_timeout_s: float = 5.0, **init_kwargs: Any) -> bool:
    """Join Ray at ``address`` (None: start a local Ray) unless Ray is already initialised,
    then check one replica's resources (:func:`check_resources`).

    Returns:
        True when this call started or joined Ray (the caller shuts it down).

    Raises:
        RayStartError: the address cannot be reached, ``ray.init`` failed, or a replica's
            request does not fit the cluster (Ray is shut down again then).
    """
    import signal
    import threading

    import ray

    started = False
    if not ray.is_initialized():
        check_address(address, connect_timeout_s)
        # ray.init sets its own SIGTERM handler (sys.exit(15)) and never puts ours back:
        # SIGTERM would then end the command with 15 instead of stopping it cleanly (143)
        main = threading.current_thread() is threading.main_thread()
        sigterm = signal.getsignal(signal.SIGTERM) if main else None
        try:
            ray.init(address=address, **init_kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise RayStartError(f"could not start or join Ray at {address or 'a local Ray'} "
                                f"({exc}); check the address, or leave it out to start a "
                                "local Ray") from None
        finally:
            if main and sigterm is not None:
                signal.signal(signal.SIGTERM, sigterm)
        started = True
    try:
        check_resources(ray, num_gpus=num_gpus, num_cpus=num_cpus)
    except RayStartError:
        if started:
            ray.shutdown()
        raise
    return started
