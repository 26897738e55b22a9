"""Commands (``det cmd run``): a command config turned into a command task.

A command is a :class:`~hpcdet.master.models.CommandTask` of kind ``command`` whose script
the master writes (:func:`hpcdet.dispatcher.command_script.command_script`) and whose
native options it derives from the config: the pool (``resources.resource_pool``), the
slots as the pool's resources (one task per slot, a GPU per slot in a GPU pool, the same
:func:`~hpcdet.master.scheduling.jobspec.slot_mapping` as a trial's), the priority band's
partition, QOS and nice (:func:`~hpcdet.master.queue.placement.place`), and the
config's ``sbatch_args``/``pbsbatch_args``. From there it is submitted, polled, killed,
re-adopted and its logs read exactly as a ``det sbatch`` task (:mod:`.task_submission`,
:mod:`.tasks`). See docs/commands.md.
"""

from __future__ import annotations

import base64
import binascii
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.dispatcher import Backend
from hpcdet.dispatcher.batch_args import split_cpus_per_rank
from hpcdet.dispatcher.command_script import command_script
from hpcdet.dispatcher.jobdir import context_size
from hpcdet.dispatcher.tasks import (
    ENV_NAME,
    Setting,
    TaskDialect,
    TaskResources,
    task_dialect,
)
from hpcdet.errors import ConfigError, ValidationError
from hpcdet.expconf import environment_variables
from hpcdet.master.errors import Invalid
from hpcdet.master.queue.job_queue import find_pool
from hpcdet.master.queue.placement import JobOwner, Placement, place
from hpcdet.master.queue.pools import Pool
from hpcdet.master.scheduling.command_config import (
    CheckedConfig,
    check_command_config,
    check_entrypoint,
)
from hpcdet.master.scheduling.jobspec import slot_mapping
from hpcdet.master.scheduling.task_submission import COMMAND, TaskPlan, TaskRequest, plan_task
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.experiment_config import batch_args

MAX_CONTEXT_BYTES = 95 * 1024 * 1024
# The command's PATH unless its config sets one: the master's Python first (it has hpcdet,
# like a trial's ranks without a container), then the system's.
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class CommandPlan:
    """A planned command: the task plan and the config's warnings."""

    plan: TaskPlan
    warnings: list[str]


def plan_command(session: Session, settings: MasterSettings, backend: Backend,
                 body: Mapping[str, Any], owner: str) -> CommandPlan:
    """Check the ``POST /commands`` body and plan its task; Invalid naming the bad key."""
    dialect = task_dialect(backend.name)
    try:
        checked = check_command_config(body.get("config"), backend.name)
        entrypoint = check_entrypoint(body.get("entrypoint", checked.config.get("entrypoint")))
        context = _context(body.get("context"))
        pool = _pool(session, settings, checked.config)
        options = _options(settings, backend, dialect, checked, pool, owner)
        environment = _environment(settings, checked.config)
    except ConfigError as exc:
        details = [line.replace(".slots_per_trial", ".slots") for line in exc.errors]
        raise Invalid("invalid_config", exc.title, details=details) from exc
    except ValidationError as exc:
        raise Invalid("bad_request", str(exc)) from exc
    config = {**checked.config, "entrypoint": list(entrypoint)}
    script = command_script(entrypoint, work_dir=config.get("work_dir"),
                            has_context=context is not None)
    request = TaskRequest(
        script=script, script_name=_name(config, entrypoint), args=(), options=options,
        cwd="/", environment=environment, dialect=dialect, kind=COMMAND,
        context=context, config=config, test_only=bool(body.get("test_only", False)),
    )  # fmt: skip
    plan = plan_task(session, settings, request, owner, backend.transport)
    placement = _placement(settings, pool, config, owner)
    spec = replace(plan.spec, partition=placement.partition or plan.spec.partition)
    return CommandPlan(replace(plan, spec=spec), checked.warnings)


def _context(raw: Any) -> bytes | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise ValidationError("context: must be the context directory as a base64 tar.gz")
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValidationError(f"context: not valid base64: {exc}") from exc
    if context_size(data) > MAX_CONTEXT_BYTES:
        raise ValidationError(f"context: over {MAX_CONTEXT_BYTES // 2**20} MiB of files")
    return data


def _pool(session: Session, settings: MasterSettings, config: Mapping[str, Any]) -> Pool:
    name = (config.get("resources") or {}).get("resource_pool")
    return find_pool(session, settings, name, aux=True,
                     where="<config>.resources.resource_pool")


def _placement_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config as :func:`slot_mapping` reads a trial's (slots_per_trial)."""
    resources = dict(config.get("resources") or {})
    resources["slots_per_trial"] = max(1, int(resources.get("slots", 1)))
    return {**config, "resources": resources}


def _options(settings: MasterSettings, backend: Backend, dialect: TaskDialect,
             checked: CheckedConfig, pool: Pool, owner: str) -> tuple[Setting, ...]:
    """Pool, slots, priority and the user's batch arguments as native options."""
    config = checked.config
    where, user_args = batch_args(config, backend.name)
    cpus_per_rank, user_args = split_cpus_per_rank(backend.name, user_args, where)
    mapping = slot_mapping(settings, _placement_config(config), pool,
                           cpus_per_rank=cpus_per_rank)
    gpus = mapping.gpus_per_node if int(config["resources"]["slots"]) > 0 else 0
    placement = _placement(settings, pool, config, owner)
    resources = TaskResources(
        nodes=mapping.nodes, ranks_per_node=mapping.ranks_per_node,
        cpus_per_rank=mapping.cpus_per_rank, gpus_per_node=gpus, gpu_type=mapping.gpu_type,
        qos=placement.qos, nice=placement.nice or 0)
    pool_setting: list[Setting] = []
    if pool.name:
        pool_setting = [(dialect.pool_option.lstrip("-"), pool.name)]
    return (*pool_setting, *dialect.command_output,
            *dialect.resource_settings(resources, backend),
            *dialect.batch_arg_settings(user_args, where))


def _placement(settings: MasterSettings, pool: Pool, config: Mapping[str, Any],
               owner: str) -> Placement:
    resources = config.get("resources") or {}
    return place(settings, pool, JobOwner(owner), priority=resources.get("priority"),
                 weight=float(resources.get("weight") or 1.0))


def _name(config: Mapping[str, Any], entrypoint: tuple[str, ...]) -> str:
    """The job's name: the description, else ``det-cmd-`` and the program's name."""
    description = config.get("description")
    if description:
        return str(description)[:200]
    program = Path(entrypoint[0].split()[0] if entrypoint[0].split() else "sh").name
    return f"det-cmd-{program}"[:200]


def _environment(settings: MasterSettings, config: Mapping[str, Any]) -> dict[str, str]:
    """What the command starts with (the wrapper drops the master's own environment)."""
    env = {"PATH": f"{Path(sys.executable).parent}:{SYSTEM_PATH}",
           "PYTHONUNBUFFERED": "1", "DET_MASTER": settings.master_url,
           "DET_TASK_TYPE": "COMMAND"}
    mine = environment_variables(config.get("environment"))
    bad = [name for name in mine if not ENV_NAME.match(name)]
    if bad:
        raise ConfigError([f"<config>.environment.environment_variables: {name!r} is not a "
                           "variable name" for name in bad], title="invalid command configuration")
    return {**env, **mine}
