"""``webserver.trusted_proxies``: whose ``X-Forwarded-For``/``-Proto`` the master believes.

By default nobody's: the client address and scheme of a request are those of the connection
the master accepted, so a caller cannot claim another address or make an HTTPS request look
like plain HTTP (which would drop ``Secure`` from the session cookie; issue 28, finding 5).
A site that puts its own reverse proxy (TLS offload, a load balancer) in front of the
master names that proxy's addresses (IPs or networks) here; requests from them are believed.
``*`` (everyone) is refused: it would let any caller forge both.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from hpcdet.master.settings.read import Getter


def build_trusted_proxies(doc: Mapping[str, Any], where: str,
                          errors: list[str]) -> tuple[str, ...]:
    """``trusted_proxies`` of the ``webserver`` mapping ``doc``: IP addresses or networks."""
    found: list[str] = []
    for entry in Getter(doc, where, errors).names("trusted_proxies"):
        try:
            found.append(str(ipaddress.ip_network(entry, strict=True)))
        except ValueError:
            errors.append(f"{where}.trusted_proxies: {entry!r} is not an IP address or "
                          "network (e.g. 10.0.0.5 or 10.0.0.0/24; '*' is not allowed)")
    return tuple(found)
