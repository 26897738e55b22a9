"""Fair-share: every workspace (or user) is a Slurm account whose fairshare is its weight.

Which accounts the master wants comes from ``resource_manager.fair_share`` in master.yaml
and the database (the workspaces, or owners, of experiments and command tasks); the
``sacctmgr`` commands that make Slurm match come from hpcdet/dispatcher/slurm/accounts.py.
Every hpcdet job is submitted by the master, so the associations to create are (the
master's Slurm user, account). The master applies the commands itself when it may
(``manage_accounts: true``, or ``auto`` and the master's user is a Slurm operator or root);
otherwise it only reports them, for an admin to run (``det-master sync-accounts``).
See docs/admin/slurm.md.
"""

from __future__ import annotations

import logging
import os
import pwd
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from hpcdet.dispatcher.accounts import AccountTool, account_tool
from hpcdet.dispatcher.base import UnsupportedError
from hpcdet.dispatcher.commands import Runner
from hpcdet.errors import SchedulerError
from hpcdet.master.models import CommandTask, Experiment
from hpcdet.master.queue.placement import DEFAULT_WORKSPACE
from hpcdet.master.queue.placement import account_name as _prefixed_name
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.pools import FairShareSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SyncResult:
    """What a sync found: the commands it planned, those it ran, and why not, if it did not."""

    commands: list[list[str]] = field(default_factory=list)
    applied: list[list[str]] = field(default_factory=list)
    reason: str | None = None

    @property
    def in_sync(self) -> bool:
        return not self.commands


def account_name(settings: MasterSettings, workspace_or_user: str) -> str:
    """The Slurm account of a workspace (or user): prefix + the name, lower-cased and sanitized.

    Without ``fair_share`` the default prefix ``det-`` is used.
    """
    fair_share = settings.resource_manager.fair_share
    prefix = fair_share.account_prefix if fair_share is not None else "det-"
    return _prefixed_name(prefix, workspace_or_user)


def desired_accounts(session: Session, settings: MasterSettings) -> dict[str, float]:
    """Every account the master's jobs may use, with its weight (Slurm fairshare)."""
    fair_share = settings.resource_manager.fair_share
    if fair_share is None:
        return {}
    accounts: dict[str, float] = {}
    for name in sorted(_names_in_use(session, fair_share)):
        account = account_name(settings, name)
        # Two names that sanitize to one account: the heavier weight wins, in any order.
        accounts[account] = max(accounts.get(account, 0.0), fair_share.weight_of(name))
    return accounts


def _names_in_use(session: Session, fair_share: FairShareSettings) -> set[str]:
    """Workspaces (or users) named in master.yaml's weights or owning something in the DB."""
    names = set(fair_share.weights)
    if fair_share.account_source == "user":
        names.update(session.scalars(select(Experiment.owner).distinct()))
        names.update(session.scalars(select(CommandTask.owner).distinct()))
        return names
    # Determined's default workspace always exists; command tasks run in it.
    names.add(DEFAULT_WORKSPACE)
    # The workspace only, read in the database: configs are large and this runs every refresh.
    workspaces = session.scalars(select(Experiment.config["workspace"].as_string()).distinct())
    names.update(str(workspace) if workspace else DEFAULT_WORKSPACE for workspace in workspaces)
    return names


def slurm_user() -> str:
    """The master's own Unix user: the one that submits, and so owns, every hpcdet job."""
    return pwd.getpwuid(os.geteuid()).pw_name


def _tool(settings: MasterSettings) -> AccountTool:
    return account_tool(settings.resource_manager.type)


def may_apply(settings: MasterSettings, runner: Runner, user: str) -> str | None:
    """None when the master may run the commands itself, else the reason it may not."""
    fair_share = settings.resource_manager.fair_share
    manage = fair_share.manage_accounts if fair_share is not None else "false"
    if manage == "false":
        return "fair_share.manage_accounts is false"
    if manage == "true" or _tool(settings).has_operator_rights(runner, user):
        return None
    return (f"the master's Slurm user {user!r} is not a Slurm operator or administrator "
            f"(fair_share.manage_accounts is auto)")


def plan(session: Session, runner: Runner, settings: MasterSettings, *, cluster: str,
         user: str) -> list[list[str]]:
    """The sacctmgr commands that bring Slurm's accounts in line (one sacctmgr read)."""
    fair_share = settings.resource_manager.fair_share
    desired = desired_accounts(session, settings)
    if fair_share is None or not desired:
        return []
    tool = _tool(settings)
    current = tool.read_accounts(runner, cluster)
    return tool.plan_account_sync(current, desired, parent=fair_share.parent_account,
                                            cluster=cluster, users=[user])


def sync_accounts(session: Session, backend_runner: Runner, settings: MasterSettings, *,
                  dry_run: bool, cluster: str | None = None,
                  user: str | None = None) -> SyncResult:
    """Plan the account commands and, unless ``dry_run`` or the master lacks rights, run them."""
    if settings.resource_manager.fair_share is None:
        return SyncResult(reason="resource_manager.fair_share is not configured")
    user = user or slurm_user()
    cluster = cluster or _tool(settings).read_cluster_name(backend_runner)
    commands = plan(session, backend_runner, settings, cluster=cluster, user=user)
    if not commands:
        return SyncResult()
    reason = "dry run" if dry_run else may_apply(settings, backend_runner, user)
    if reason is not None:
        return SyncResult(commands=commands, reason=reason)
    return SyncResult(commands=commands,
                      applied=_tool(settings).apply(backend_runner, commands))


def ensure_account(session: Session, runner: Runner, settings: MasterSettings,
                   account: str | None) -> SyncResult | None:
    """Sync first when ``account`` (a job's ``--account``) has no association for the master.

    For a submission outside the reconciler (``det sbatch`` is submitted in the API request):
    one sacctmgr read; a sync only when the account is missing. None: nothing was needed.
    """
    if account is None or settings.resource_manager.fair_share is None:
        return None
    try:
        tool = _tool(settings)
    except UnsupportedError:
        return None  # the site keeps the scheduler's fair-share tree (PBS)
    cluster = tool.read_cluster_name(runner)
    current = tool.read_accounts(runner, cluster)
    if account in current and slurm_user() in current[account].users:
        return None
    return sync_accounts(session, runner, settings, dry_run=False, cluster=cluster)


def format_commands(commands: Iterable[Sequence[str]]) -> list[str]:
    """Each command as one shell line, for an admin to paste."""
    return [shlex.join(command) for command in commands]


def describe(result: SyncResult) -> list[str]:
    """``det-master sync-accounts`` output: shell lines, the explanations as ``#`` comments.

    So the whole output can be handed to a shell by an administrator as it is.
    """
    if result.commands and result.reason is None:
        return ["# Ran these sacctmgr commands:", *format_commands(result.applied)]
    if result.commands:
        lead = ("# Dry run: these sacctmgr commands would bring Slurm's accounts in line:"
                if result.reason == "dry run" else
                f"# The master does not run these itself ({result.reason}); "
                f"a Slurm administrator should run them:")
        return [lead, *format_commands(result.commands)]
    return [f"# Nothing to do: {result.reason}." if result.reason else
            "# Nothing to do: Slurm's accounts already match master.yaml and the database."]


class AccountSync:
    """The reconciler's automatic sync: cheap when nothing changed, loud when it cannot act.

    :meth:`refresh` runs every ``pool_refresh_seconds`` (one DB query and one sacctmgr
    read; commands only when something differs). :meth:`ensure` runs before a submission:
    it syncs at once when the job's account is not yet known to exist, so a new
    workspace's first job does not fail with "Invalid account".
    """

    def __init__(self, settings: MasterSettings, runner: Runner, *,
                 user: str | None = None) -> None:
        self.settings = settings
        self.runner = runner
        self.user = user or slurm_user()
        self._cluster: str | None = None
        self._known: set[str] = set()
        self._reported: list[list[str]] | None = None
        self._said_unsupported = False

    def refresh(self, session: Session) -> SyncResult | None:
        """Sync now; a scheduler failure is logged (the next refresh tries again)."""
        if self.settings.resource_manager.fair_share is None:
            return None
        try:
            result = self._sync(session)
        except UnsupportedError as exc:  # PBS: the site keeps the fair-share tree
            if not self._said_unsupported:
                log.info("fair-share: %s", exc)
                self._said_unsupported = True
            return None
        except SchedulerError as exc:
            log.warning("fair-share account sync failed: %s", exc)
            return None
        self._report(result)
        return result

    def ensure(self, session: Session, account: str | None) -> None:
        """Sync first if ``account`` (a job's ``--account``) is not known to exist yet."""
        if account is not None and account not in self._known:
            self.refresh(session)

    def _sync(self, session: Session) -> SyncResult:
        if self._cluster is None:
            self._cluster = _tool(self.settings).read_cluster_name(self.runner)
        result = sync_accounts(session, self.runner, self.settings, dry_run=False,
                               cluster=self._cluster, user=self.user)
        missing = (_tool(self.settings).accounts_named(result.commands) if result.reason
                   else set())
        self._known = set(desired_accounts(session, self.settings)) - missing
        return result

    def _report(self, result: SyncResult) -> None:
        for command in format_commands(result.applied):
            log.info("fair-share: %s", command)
        if result.reason is not None and result.commands != self._reported:
            log.warning("fair-share accounts differ from master.yaml and the master will not "
                        "change them (%s); a Slurm administrator should run:\n  %s",
                        result.reason, "\n  ".join(format_commands(result.commands)))
        self._reported = result.commands if result.reason is not None else None
