"""What one scheduler declares about itself: the plug-in each scheduler package exports.

``hpcdet/dispatcher/slurm/__init__.py`` and ``hpcdet/dispatcher/pbs/__init__.py`` each export
one :class:`SchedulerPlugin` as ``PLUGIN``; :mod:`hpcdet.dispatcher.registry` finds them by
name. Everything else reaches a scheduler through its plug-in, so a neutral module never
names ``"slurm"`` or ``"pbs"``: config section and args key, submit command, job ids, log
file names, pending-reason words, capabilities (each refused one with its reason), and the
modules that do the work (backend, command tasks, batch options, ``det sbatch``/``det qsub``,
fair-share accounts, allocation mode). Those modules are imported on first use: ``det``'s
commands and the master's start do not pay for a scheduler they never touch.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Capability:
    """Whether a scheduler can do one thing; ``reason`` says why not (shown to users)."""

    supported: bool
    reason: str = ""

    def __post_init__(self) -> None:
        if not self.supported and not self.reason:
            raise ValueError("an unsupported capability needs its reason")


SUPPORTED = Capability(True)


def unsupported(reason: str) -> Capability:
    """A capability the scheduler lacks, with the words users are told."""
    return Capability(False, reason)


@dataclass(frozen=True)
class Capabilities:
    """What hpcdet can ask of a scheduler; a policy needing a missing one is refused when
    the experiment is created (:meth:`SchedulerPlugin.refusal`), not at submission."""

    arrays: Capability  # submit an experiment's trials as one job array
    subjob_priority: Capability  # reorder one task of an array without the others
    qos: Capability  # a job's quality of service (priority bands' ``qos``)
    exclude_nodes: Capability  # keep a job off named nodes (log policies' exclude_node)
    signal_before_walltime: Capability  # warn a job before its time limit
    requeue: Capability  # put a failed or preempted job back in the queue itself
    allocation: Capability  # run trials as steps inside one job (allocation mode)
    fair_share_accounts: Capability  # hpcdet manages the fair-share account tree

    def named(self) -> dict[str, Capability]:
        """Each capability by its field name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class SchedulerPlugin:
    """One scheduler, as every scheduler-neutral module sees it."""

    name: str  # resource_manager.type and Backend.name: slurm, pbs
    display_name: str  # in sentences: Slurm, PBS
    config_section: str  # the experiment's section: slurm, pbs
    args_key: str  # its extra batch options: sbatch_args, pbsbatch_args
    submit_command: str  # sbatch, qsub
    job_id_pattern: re.Pattern[str]
    job_id_form: str  # the job id's form, in words ("digits only")
    # A trial job's stdout/stderr in its job directory, by stream ("out", "err"), as the
    # scheduler names it (``{job_id}`` filled in).
    log_names: Mapping[str, str]
    # The scheduler's own default output file name of a batch job (sbatch's slurm-%j.out).
    default_output: str
    # The pending-reason legend the pages show: code or phrase -> words.
    reasons: Mapping[str, str]
    reason_words: Callable[[str | None], str | None]
    capabilities: Capabilities
    # How the backend can read its jobs' statuses, the default first (master.yaml's
    # resource_manager.slurm_api; Slurm: its text commands, or pyslurm's C API).
    status_apis: tuple[str, ...] = ("cli",)
    # The command that prints the scheduler's version (det-master init and doctor).
    version_command: tuple[str, ...] = ()
    # The variable naming the scheduler's config file for its commands (SLURM_CONF).
    conf_variable: str = ""
    # What does the work, by role, imported lazily (see :meth:`module`): backend, task,
    # batch_args, batch_command, accounts, allocation, operator (``operator_problem``:
    # whether the service account has the scheduler rights the master uses).
    modules: Mapping[str, str] = field(default_factory=dict)

    def module(self, role: str) -> ModuleType | None:
        """The module playing ``role`` for this scheduler, imported now; None if it has none."""
        name = self.modules.get(role)
        return None if name is None else importlib.import_module(name)

    def attribute(self, role: str, attribute: str) -> Any:
        """``attribute`` of the ``role`` module; None if the scheduler has no such module."""
        module = self.module(role)
        return None if module is None else getattr(module, attribute)

    def log_name(self, job_id: str, stream: str) -> str:
        """The file a trial job's ``stream`` (out, err) goes to, in its job directory."""
        return self.log_names[stream].format(job_id=job_id)

    def args_path(self, root: str = "<config>") -> str:
        """Where the user's extra batch options are: ``<config>.slurm.sbatch_args``."""
        return f"{root}.{self.config_section}.{self.args_key}"

    def refusal(self, capability: str, where: str) -> str | None:
        """None if the scheduler has ``capability``; else the error line naming ``where``
        and the scheduler's reason (a config asking for it gets a 400 at ``det e create``)."""
        found = self.capabilities.named()[capability]
        return None if found.supported else f"{where}: {found.reason}"

    def legend(self) -> dict[str, Any]:
        """What the API tells ``det`` and the pages about this scheduler."""
        return {"name": self.name, "display_name": self.display_name,
                "submit_command": self.submit_command, "pending_reasons": dict(self.reasons),
                "capabilities": {name: {"supported": c.supported, "reason": c.reason or None}
                                 for name, c in self.capabilities.named().items()}}
