"""Shells (``det shell start``): a command task whose job runs an OpenSSH ``sshd``.

A shell is planned as a command (:func:`~hpcdet.master.scheduling.commands.plan_command`:
the same config, pool, slots, priority and context) whose entrypoint is the job-side
service :mod:`hpcdet.harness.shell_service`, of kind ``shell``. At submission the master
makes the shell's keys (:mod:`.shell_keys`): the sshd's host key and ``authorized_keys``
go into the job directory (owner-only, written like the other job files, by the owner's
run-as helper in owner mode); the client's key pair and the host's public key are kept in
``shell_keys`` for the owner's ``det`` (``GET /shells/<id>/keys``). See docs/shell.md.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.dispatcher import Backend
from hpcdet.dispatcher.transport import Transport
from hpcdet.errors import SchedulerError
from hpcdet.master.errors import Internal, Invalid
from hpcdet.master.models import CommandTask, ShellKey
from hpcdet.master.scheduling.command_config import ROOT
from hpcdet.master.scheduling.commands import CommandPlan, plan_command
from hpcdet.master.scheduling.shell_keys import ShellKeys, authorized_keys, make_keys
from hpcdet.master.scheduling.task_submission import SHELL
from hpcdet.master.settings.core import MasterSettings

SERVICE_MODULE = "hpcdet.harness.shell_service"
# Written by the job (hpcdet.harness.shell_service) once sshd listens.
SERVICE_FILE = "service.json"
HOST_KEY_FILE = "ssh_host_ed25519_key"
AUTHORIZED_KEYS_FILE = "authorized_keys"
DEFAULT_NAME = "det-shell"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$")
USER_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\$?$")


@dataclass(frozen=True)
class ShellPlan:
    """A planned shell: the command plan (with the job files) and the keys to store."""

    planned: CommandPlan
    keys: ShellKeys


def parse_duration(raw: Any, where: str = f"{ROOT}.idle_timeout") -> float:
    """Determined's duration (``30m``, ``1h30m``, ``90s``) or a number of seconds."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and raw > 0:
        return float(raw)
    text = raw.strip() if isinstance(raw, str) else ""
    if text and _DURATION.sub("", text) == "":
        seconds = sum(float(number) * _UNIT_SECONDS[unit]
                      for number, unit in _DURATION.findall(text))
        if seconds > 0:
            return seconds
    raise Invalid("invalid_config", "invalid shell configuration",
                  details=[f"{where}: must be a duration such as 30m, 1h or 90s, not {raw!r}"])


def service_path() -> str:
    """The job-side service's file. It is run as a file (standard library only) with the
    master's Python, as the master's own copy: the job needs no importable hpcdet."""
    spec = importlib.util.find_spec(SERVICE_MODULE)
    if spec is None or spec.origin is None:
        raise Internal("internal", f"{SERVICE_MODULE} is not installed with the master")
    return spec.origin


def plan_shell(session: Session, settings: MasterSettings, backend: Backend,
               body: Mapping[str, Any], owner: str) -> ShellPlan:
    """Check the ``POST /shells`` body (a command body without an entrypoint) and plan the
    shell's task with fresh keys; Invalid naming the bad key."""
    config = body.get("config")
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise Invalid("invalid_config", "invalid shell configuration",
                      details=[f"{ROOT}: must be a mapping"])
    config = dict(config)
    warnings = []
    if config.pop("entrypoint", None) is not None:
        warnings.append(f"{ROOT}.entrypoint: a shell runs sshd; ignored")
    idle = config.pop("idle_timeout", None)
    idle_seconds = None if idle is None else parse_duration(idle)
    entrypoint = [sys.executable, "-I", service_path()]
    if idle_seconds is not None:
        entrypoint += ["--idle-timeout", f"{idle_seconds:g}"]
    planned = plan_command(session, settings, backend,
                           {**body, "config": config, "entrypoint": entrypoint}, owner)
    keys = make_keys()
    plan = planned.plan
    stored = {**{k: v for k, v in (plan.request.config or {}).items() if k != "entrypoint"},
              **({} if idle is None else {"idle_timeout": idle})}
    request = replace(
        plan.request, kind=SHELL, config=stored,
        environment={**(plan.request.environment or {}), "DET_TASK_TYPE": "SHELL"},
        files={HOST_KEY_FILE: (keys.host_private.encode(), 0o600),
               AUTHORIZED_KEYS_FILE: (authorized_keys(keys.client_public).encode(), 0o600)})
    name = str(config.get("description") or DEFAULT_NAME)[:200]
    plan = replace(plan, request=request, spec=replace(plan.spec, name=name))
    return ShellPlan(CommandPlan(plan, warnings + planned.warnings), keys)


def key_row(task: CommandTask, keys: ShellKeys) -> ShellKey:
    """What ``shell_keys`` keeps of a submitted shell's keys (not the host's private key)."""
    return ShellKey(task_id=task.id, client_private_key=keys.client_private,
                    client_public_key=keys.client_public, host_public_key=keys.host_public)


def read_service(task: CommandTask, files: Transport) -> dict[str, Any] | None:
    """The ``{"host", "port", "user"}`` a running shell's job wrote (None: not yet, or not
    valid: the values go into an ssh command line, so each is checked)."""
    path = f"{task.job_dir.rstrip('/')}/{SERVICE_FILE}"
    try:
        if not files.exists(path):
            return None
        service = json.loads(files.read_file(path, limit=4096).decode("utf-8"))
    except (OSError, SchedulerError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(service, dict):
        return None
    host, port, user = service.get("host"), service.get("port"), service.get("user")
    if not (isinstance(host, str) and HOST_NAME.match(host) and isinstance(port, int)
            and not isinstance(port, bool) and 0 < port < 65536
            and isinstance(user, str) and USER_NAME.match(user)):
        return None
    return {"host": host, "port": port, "user": user}
