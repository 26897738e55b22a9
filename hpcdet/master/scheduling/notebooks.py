"""Notebooks (``det notebook start``): JupyterLab in a job, reached through the master's proxy.

A notebook is a command task of kind ``notebook`` planned as a command is
(:func:`hpcdet.master.scheduling.commands.plan_command`: pool, slots, priority, batch
arguments, context) whose entrypoint is :mod:`hpcdet.services.notebook` from the master's
own Python, with a per-task secret (Jupyter's token; stored with the task, handed to the job
in a 0600 file) and the config's ``idle_timeout``. See docs/notebooks.md.
"""

from __future__ import annotations

import re
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.dispatcher import Backend
from hpcdet.master.errors import Invalid
from hpcdet.master.scheduling.commands import CommandPlan, plan_command
from hpcdet.master.scheduling.task_submission import NOTEBOOK
from hpcdet.master.scheduling.task_tokens import OwnerIdentity, owner_identity
from hpcdet.master.settings.core import MasterSettings

ENTRYPOINT = (sys.executable, "-m", "hpcdet.services.notebook")
IDLE_ENV = "HPCDET_NOTEBOOK_IDLE_SECONDS"
# The keys a notebook uses that a command ignores (and warns about).
_NOTEBOOK_KEYS = ("idle_timeout", "notebook_idle_type")
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(raw: Any, where: str = "<config>.idle_timeout") -> int:
    """Seconds of a Determined duration ("30m", "1h30m", "90s"; a number is seconds)."""
    if isinstance(raw, bool):
        raise Invalid("invalid_config", "invalid notebook configuration",
                      details=[f"{where}: must be a duration such as 30m, got {raw!r}"])
    if isinstance(raw, (int, float)) and raw > 0:
        return max(1, int(raw))
    text = raw.strip() if isinstance(raw, str) else ""
    parts = _DURATION.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        raise Invalid("invalid_config", "invalid notebook configuration",
                      details=[f"{where}: must be a duration such as 30m or 1h30m, "
                               f"got {raw!r}"])
    seconds = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
    return max(1, int(seconds))


@dataclass(frozen=True)
class NotebookPlan:
    """A planned notebook, and how its kernel acts as the owner (hpcdet's client and det in
    it; :mod:`.task_tokens`)."""

    planned: CommandPlan
    identity: OwnerIdentity


def plan_notebook(session: Session, settings: MasterSettings, backend: Backend,
                  body: Mapping[str, Any], owner: str) -> NotebookPlan:
    """Check the ``POST /notebooks`` body (``config``, optional ``context``) and plan its
    task; Invalid naming the bad key. On a munge master (and not ``test_only``) an API token
    of the owner is issued for the kernel (the caller commits or rolls back)."""
    config = body.get("config") or {}
    if not isinstance(config, Mapping):
        raise Invalid("invalid_config", "invalid notebook configuration",
                      details=["<config>: must be a mapping"])
    idle = (parse_duration(config["idle_timeout"]) if config.get("idle_timeout") is not None
            else None)
    planned = plan_command(session, settings, backend,
                           {**body, "config": dict(config), "entrypoint": list(ENTRYPOINT)},
                           owner)
    plan = planned.plan
    request = plan.request
    identity = owner_identity(session, settings, owner, test_only=request.test_only)
    environment = {**(request.environment or {}), "DET_TASK_TYPE": "NOTEBOOK",
                   **identity.environment}
    if idle is not None:
        environment[IDLE_ENV] = str(idle)
    name = str(config.get("description") or "det-notebook")[:200]
    request = replace(request, kind=NOTEBOOK, environment=environment, script_name=name,
                      service_token=secrets.token_hex(32), files=identity.files)
    warnings = [w for w in planned.warnings if not any(k in w for k in _NOTEBOOK_KEYS)]
    return NotebookPlan(CommandPlan(replace(plan, request=request,
                                            spec=replace(plan.spec, name=name)), warnings),
                        identity)
