"""Network helpers of the commands that serve HTTP (``ieqa serve``, ``ieqa studio``);
kept apart so that ``ieqa studio`` does not load the scorers to use them."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback"]


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
