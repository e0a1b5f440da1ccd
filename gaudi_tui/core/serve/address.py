"""The address a model server listens on, checked before it reaches an engine's argv or a client:
an IP address or a host name, nothing else (a cluster's or a spec's word alike)."""

from __future__ import annotations

import ipaddress
import re

HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


def host_problem(host: str) -> str | None:
    """Why `host` cannot be listened on or asked, or None."""
    if not host:
        return "give the address to listen on, e.g. 127.0.0.1 (this host only) or 0.0.0.0 (every network)"
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    if not HOST_NAME.fullmatch(host):
        return f"{host!r} is not an IP address or a host name"
    return None
