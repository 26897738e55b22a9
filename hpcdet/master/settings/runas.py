"""``security.jobs_run_as`` and ``security.runas_helper``: whose Unix account runs jobs.

``service`` (the default, today's behaviour): the master submits and cancels every job as
its own account. ``owner``: every submit, cancel and update runs as the experiment's or
task's owner through ``sudo -n -u OWNER <runas_helper> VERB ...`` (docs/admin/security.md),
and job directories live under ``<job_storage_root>/<owner>/``.
"""

from __future__ import annotations

import getpass
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpcdet.master.settings.read import Getter

if TYPE_CHECKING:
    from hpcdet.dispatcher.commands import CommandRunner
    from hpcdet.dispatcher.runas import RunAs

RUN_AS_CHOICES = ("service", "owner")
DEFAULT_HELPER = "/usr/local/libexec/hpcdet-runas"


@dataclass(frozen=True)
class RunAsSettings:
    """Who jobs run as, and how the master reaches the helper."""

    jobs_run_as: str = "service"
    runas_helper: str = DEFAULT_HELPER

    @property
    def owner_mode(self) -> bool:
        return self.jobs_run_as == "owner"


def build_runas(doc: Mapping[str, Any], where: str, errors: list[str]) -> RunAsSettings:
    """The run-as keys of ``security:`` (other parts of ``security:`` are read elsewhere)."""
    get = Getter(doc, where, errors)
    helper = get.text("runas_helper", DEFAULT_HELPER)
    if not posixpath.isabs(helper):
        errors.append(f"{where}.runas_helper: must be an absolute path, got {helper!r}")
    return RunAsSettings(jobs_run_as=get.choice("jobs_run_as", "service", RUN_AS_CHOICES),
                         runas_helper=helper)


def make_runas(settings: RunAsSettings, runner: CommandRunner | None = None) -> RunAs | None:
    """The dispatcher's run-as client in owner mode; None in service mode. ``runner``: the
    transport's (the helper runs where the scheduler commands do: on a login node over SSH)."""
    if not settings.owner_mode:
        return None
    from hpcdet.dispatcher.runas import RunAs

    if runner is None:
        return RunAs(helper=settings.runas_helper, service_user=getpass.getuser())
    return RunAs(helper=settings.runas_helper, service_user=getpass.getuser(), runner=runner)


def owner_root(job_storage_root: str, settings: RunAsSettings, owner: str) -> Path:
    """Where ``owner``'s job directories go: ``<root>/<owner>`` in owner mode, else root."""
    root = Path(job_storage_root).expanduser()
    return root / owner if settings.owner_mode and owner else root
