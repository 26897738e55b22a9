"""The launcher-neutral description of one rank, and helpers to read launcher variables."""

from __future__ import annotations

import random
import re
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

# Below Linux's ephemeral range (32768-60999 by default), where any outgoing connection on
# the node may hold a port: a rendezvous port from there failed with EADDRINUSE in CI.
PORT_RANGE = (20000, 32767)
LOCAL_ADDR = "127.0.0.1"


@dataclass(frozen=True)
class Placement:
    """One rank's place as a launcher's variables describe it; ``None`` where they are silent.

    ``port_key`` is a string every rank of the job shares (the job id, an MPI namespace),
    from which all ranks draw the same rendezvous port; ``master_port`` is set instead when
    rank 0 chose the port and told the others.
    """

    launcher: str
    rank: int
    size: int | None = None
    local_rank: int | None = None
    local_size: int | None = None
    cross_rank: int | None = None
    cross_size: int | None = None
    job_id: str | None = None
    nodelist: str | None = None
    master_addr: str | None = None
    port_key: str | None = None
    master_port: int | None = None

    @property
    def complete(self) -> bool:
        """Whether every rank can rendezvous from this alone."""
        known = (self.size, self.local_rank, self.local_size, self.cross_rank, self.cross_size,
                 self.master_addr)
        return all(value is not None for value in known) and (
            self.port_key is not None or self.master_port is not None
        )


def first_var(env: Mapping[str, str], *names: str) -> str | None:
    """The value of the first of ``names`` that is set and not empty."""
    for name in names:
        if env.get(name):
            return env[name]
    return None


def int_var(env: Mapping[str, str], *names: str, default: int | None = None) -> int:
    """The first of ``names`` that is set, as an int; ``default`` when none is."""
    raw = first_var(env, *names)
    if raw is None:
        if default is None:
            raise ValueError(f"{names[0]} is not set")
        return default
    try:
        return int(raw.strip())
    except ValueError:
        raise ValueError(f"{names[0]}={raw!r} is not an integer") from None


def optional_int_var(env: Mapping[str, str], *names: str) -> int | None:
    """Like :func:`int_var`, but ``None`` when none of ``names`` is set."""
    return int_var(env, *names) if first_var(env, *names) is not None else None


def deterministic_port(job_id: str) -> int:
    """A port in ``PORT_RANGE`` that depends only on the digits of ``job_id``.

    Array and heterogeneous job ids (``123_4``, ``123+1``) keep all their digits, so
    the members of an array get different ports; a PBS id ``12.server`` seeds with 12.
    """
    return next(port_candidates(job_id))


def port_candidates(job_id: str) -> Iterator[int]:
    """The ports :func:`deterministic_port` draws from ``job_id``, first one first, endlessly.

    A rank that can tell the others its choice (rank 0 under mpi4py) walks on past a port
    something else on its node already holds.
    """
    digits = re.sub(r"\D", "", job_id)
    seed = int(digits) if digits else sum(job_id.encode())
    draw = random.Random(seed)
    while True:
        yield draw.randint(*PORT_RANGE)


def first_free_port(candidates: Iterator[int], tries: int = 32) -> int:
    """The first of ``candidates`` this node can listen on (all addresses, as TCPStore does).

    Another process may take the port between this probe and the store's own bind; the
    probe removes the common case, a port held before the job started (a CI run's store
    failed with EADDRINUSE that way). After ``tries`` taken ports, the last one is returned
    and the store's bind reports the error.
    """
    port = next(candidates)
    for _ in range(tries - 1):
        if _can_listen(port):
            return port
        port = next(candidates)
    return port


def _can_listen(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True
