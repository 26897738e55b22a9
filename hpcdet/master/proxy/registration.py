"""Registering a proxied service: ``$DET_TASK_DIR/service.json`` into the task's row.

Run by the reconciler after each poll: one file read per RUNNING proxied task that has no
address yet (never per request), through the backend's transport like every job file. The
host the job names must be one of the job's own nodes, exactly as the scheduler names them,
and its port one a job may own; the address it resolves to is fixed then and stored with
the task, and the proxy dials only that (:mod:`.pinning`): a job cannot point the master's
proxy elsewhere. A task that leaves RUNNING (ended, killed, requeued) loses its address in
the same step, and a task that ended, the API token its kernel was given (``det notebook``
on a munge master).
"""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend
from hpcdet.errors import HpcdetError
from hpcdet.hostlist import expand_nodelist
from hpcdet.master.db import session_scope
from hpcdet.master.master_log import warn_once
from hpcdet.master.models import CommandTask
from hpcdet.master.proxy import pinning
from hpcdet.master.scheduling.task_tokens import revoke_ended_task_tokens
from hpcdet.states import State

log = logging.getLogger(__name__)

SERVICE_FILE = "service.json"
MAX_SERVICE_FILE = 4096


@dataclass(frozen=True)
class ServiceAddress:
    """Where a job's service listens."""

    host: str
    port: int


class BadServiceFile(ValueError):
    """service.json is not ``{"host": str, "port": int}``."""


def parse_service_file(data: bytes) -> ServiceAddress:
    """The address in service.json; :class:`BadServiceFile` naming what is wrong."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadServiceFile(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadServiceFile("not a JSON object")
    host, port = doc.get("host"), doc.get("port")
    if not isinstance(host, str) or not host or len(host) > 253 or not host.isprintable() \
            or any(c in host for c in "/@?#[] "):
        raise BadServiceFile(f"host: must be a host name, got {host!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise BadServiceFile(f"port: must be a port number, got {port!r}")
    return ServiceAddress(host, port)


def host_allowed(host: str, node_hosts: Mapping[str, Sequence[str]]) -> bool:
    """Whether ``host`` is exactly one of the nodes' names, host names or addresses (no
    prefix, suffix or first-label match: :func:`.pinning.node_of`)."""
    return pinning.node_of(host, node_hosts) is not None


@dataclass(frozen=True)
class PinnedService:
    """A registered service: the host the job named, the address the proxy dials, the port."""

    host: str
    address: str
    port: int


def check_address(address: ServiceAddress, node_hosts: Mapping[str, Sequence[str]],
                  protected: Collection[int],
                  resolver: pinning.Resolver | None = None) -> PinnedService:
    """``address`` pinned to one of the job's nodes (:mod:`.pinning`; ``resolver``:
    :func:`.pinning.resolve`); :class:`.pinning.Refused` naming why not."""
    pinning.check_port(address.port, protected)
    node = pinning.node_of(address.host, node_hosts)
    if node is None:
        raise pinning.Refused(f"host {address.host!r} is none of its job's nodes "
                              f"({', '.join(_names(node_hosts)) or 'none known'})")
    names = (node, *node_hosts[node])
    pinned = pinning.pin(address.host, names, resolver or pinning.resolve)
    return PinnedService(address.host, pinned, address.port)


def job_nodes(nodes: str | None) -> list[str]:
    """The job's node names from the poll's node list ([] if it has none or is unreadable)."""
    if not nodes:
        return []
    try:
        return expand_nodelist(nodes)
    except ValueError:
        return [nodes]


def register_services(sessions: sessionmaker[Session], backend: Backend, *,
                      protected_ports: Collection[int]) -> int:
    """Store the pinned address of every running proxied task whose job has written its
    service.json; clear the address of tasks no longer running. ``protected_ports``: the
    master's own (:func:`.pinning.protected_ports`), never a service's. Returns how many
    were registered."""
    with session_scope(sessions) as session:
        session.execute(update(CommandTask).where(
            CommandTask.state != State.RUNNING.value, CommandTask.service_port.is_not(None))
            .values(service_host=None, service_address=None, service_port=None))
        revoke_ended_task_tokens(session)
        waiting = session.scalars(select(CommandTask).where(
            CommandTask.state == State.RUNNING.value, CommandTask.service_token.is_not(None),
            CommandTask.service_address.is_(None))).all()
        registered = 0
        for task in waiting:
            pinned = _read_address(backend, task, protected_ports)
            if pinned is not None:
                task.service_host, task.service_address, task.service_port = (
                    pinned.host, pinned.address, pinned.port)
                log.info("task %s serves on %s:%s (pinned to %s)", task.id, pinned.host,
                         pinned.port, pinned.address)
                registered += 1
        return registered


def _warn_once(task_id: int, message: str, *args: object) -> None:
    """The file is read again every cycle until it is good; the log says why once per task."""
    warn_once(log, f"service.json of task {task_id}", message + "; read again every cycle",
              *args)


def _read_address(backend: Backend, task: CommandTask,
                  protected: Collection[int]) -> PinnedService | None:
    path = posixpath.join(task.job_dir, SERVICE_FILE)
    try:
        if not backend.transport.file_size(path):
            return None  # the service is not up yet
        address = parse_service_file(backend.transport.read_file(path, 0, MAX_SERVICE_FILE))
        nodes = job_nodes(task.nodes)
        # The scheduler's own names for them (one query, only once the file is there).
        reported = backend.node_hosts(nodes) if nodes else {}
        known = {node: tuple(dict.fromkeys((node, *reported.get(node, ())))) for node in nodes}
        return check_address(address, known, protected)
    except BadServiceFile as exc:
        _warn_once(task.id, "task %s: %s is unusable: %s", task.id, path, exc)
    except pinning.Refused as exc:
        _warn_once(task.id, "task %s: %s is refused: %s", task.id, path, exc)
    except (OSError, HpcdetError) as exc:
        _warn_once(task.id, "task %s: could not read %s: %s", task.id, path, exc)
    return None


def _names(known: Mapping[str, Sequence[str]]) -> Sequence[str]:
    return sorted({name for node, names in known.items() for name in (node, *names)})
