"""Where the proxy may dial: one of the job's own nodes, at an address fixed at registration.

A job's ``service.json`` names a host and a port; the master would connect wherever that
says, so (issue 28, finding 3) the registration accepts only:

- **a host that is one of the job's nodes** exactly as the scheduler names it: the node's
  name from the poll, or a host name or address the scheduler gives that node
  (:meth:`hpcdet.dispatcher.Backend.node_hosts`: Slurm's ``NodeHostName`` and
  ``NodeAddr``). Compared whole and case-insensitively (IP literals as addresses); never a
  prefix, suffix or first label, so ``node1.evil.example`` is not ``node1``.
- **an address fixed once**: the host is resolved at registration and the proxy dials that
  address from then on (stored with the task), so a DNS answer that changes later cannot
  redirect it. The address must be one the scheduler reports for the node, or one of what
  the scheduler's name for it resolves to; and a loopback, link-local, unspecified or
  multicast address is taken only when the scheduler itself reports that address for the
  node (a dev cluster whose nodes all run on ``127.0.0.1``): never because a name happens
  to resolve there (the master's own ``localhost``, a cloud's 169.254.169.254). A name
  that resolves to nothing else (or not at all) gets the address the scheduler reports
  for its node, if it reports one. Where the scheduler reports none (PBS names its moms
  only), the scheduler's own name for the node resolving to loopback is taken (it is how
  the scheduler itself reaches a node on the master's host: scripts/dev-pbs); anything
  else is refused.
- **a port a job may own**: :data:`MIN_PORT` to 65535 (below 1024 only root binds), and
  none of the master's own ports.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Collection, Mapping, Sequence

from hpcdet.master.settings.core import MasterSettings

# Ports below this are privileged: a job (an unprivileged user) cannot own one, so a
# service there is not the job's.
MIN_PORT = 1024
MAX_PORT = 65535

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str], list[str]]


class Refused(ValueError):
    """Why a job's service address is not one the proxy may dial."""


def resolve(host: str) -> list[str]:
    """The addresses ``host`` resolves to on the master (any family), in the resolver's
    order; [] when it does not resolve."""
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in found))


def protected_ports(settings: MasterSettings) -> frozenset[int]:
    """The master's own ports (where it listens, and the one jobs are told to use)."""
    ports = {settings.port, settings.resource_manager.master_port}
    return frozenset(port for port in ports if port)


def check_port(port: int, protected: Collection[int]) -> None:
    """:class:`Refused` unless ``port`` is one a job may own and not the master's."""
    if not MIN_PORT <= port <= MAX_PORT:
        raise Refused(f"port {port} is not one a job may own ({MIN_PORT}-{MAX_PORT})")
    if port in protected:
        raise Refused(f"port {port} is the master's own")


def as_ip(text: str) -> IpAddress | None:
    """``text`` as an IP address (an IPv4-mapped IPv6 one as its IPv4), None for a name."""
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def same_name(wanted: str, known: str) -> bool:
    """Whether two host names or addresses are the same: addresses as addresses, names
    whole and case-insensitively."""
    wanted_ip, known_ip = as_ip(wanted), as_ip(known)
    if wanted_ip is not None or known_ip is not None:
        return wanted_ip == known_ip
    return wanted.lower() == known.lower()


def node_of(host: str, node_hosts: Mapping[str, Sequence[str]]) -> str | None:
    """The node ``host`` names exactly (one of its names or addresses), or None."""
    for node, names in node_hosts.items():
        if any(same_name(host, name) for name in (node, *names)):
            return node
    return None


def special(address: IpAddress) -> bool:
    """Whether an address is one no job's service may be reached at unless the scheduler
    says so itself: loopback, link-local, unspecified or multicast."""
    return (address.is_loopback or address.is_link_local or address.is_unspecified
            or address.is_multicast)


def pin(host: str, names: Sequence[str], resolver: Resolver) -> str:
    """The address to dial for ``host``, one of a node's ``names`` (the scheduler's): see
    the module doc; :class:`Refused` saying why when there is none.

    What is resolved is the scheduler's own spelling of the name (the job chose only which
    of the node's names), so every address found is one the scheduler reports or one its
    name for the node resolves to. The first that is not special, or that the scheduler
    itself reports, is pinned. When there is none (the name resolves only to a loopback
    address here, as a Debian host's own name does to 127.0.1.1, or not at all), the address
    the scheduler reports for the node is: it is where the scheduler reaches the node.
    """
    matched = next((name for name in names if same_name(host, name)), None)
    if matched is None:
        raise Refused(f"host {host!r} is none of the node's names ({', '.join(names)})")
    reported = [ip for ip in map(as_ip, names) if ip is not None]
    literal = as_ip(matched)
    found = [literal] if literal is not None else [
        ip for ip in map(as_ip, resolver(matched)) if ip is not None]
    for address in [*found, *reported]:
        if address in reported or not special(address):
            return str(address)
    loopback = [address for address in found if address.is_loopback]
    if loopback and not reported:
        # The scheduler reports no address (PBS names moms only): it reaches the node at
        # what its own name for it resolves to, which is loopback only for a cluster on
        # the master's host (scripts/dev-pbs). The job chose none of this: only which of
        # the node's names.
        return str(loopback[0])
    if not found:
        raise Refused(f"host {host!r} does not resolve on the master, and the scheduler "
                      "reports no address for its node")
    raise Refused(f"host {host!r} resolves to {', '.join(map(str, found))}: a loopback, "
                  "link-local, unspecified or multicast address, which the scheduler does "
                  "not report for the node (and it reports no other)")
