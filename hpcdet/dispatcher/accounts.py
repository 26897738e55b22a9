"""Fair-share accounts in scheduler-neutral terms: read them, plan a sync, apply it.

The master decides *which* accounts should exist and with what weight (workspaces or users,
``resource_manager.fair_share``); the scheduler's account tool says how. Slurm's is
:mod:`hpcdet.dispatcher.slurm.accounts` (``sacctmgr`` associations with a fairshare each).
PBS keeps its fair-share entities in the scheduler's ``resource_group`` file, which only the
PBS administrator edits: hpcdet passes each job's account (``qsub -A``) and leaves the tree
to the site, so :func:`account_tool` raises :class:`UnsupportedError` for PBS, with its
plug-in's reason (``capabilities.fair_share_accounts``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, cast

from hpcdet.dispatcher import registry
from hpcdet.dispatcher.base import UnsupportedError
from hpcdet.dispatcher.commands import Runner


class AccountInfo(Protocol):
    """One account as the scheduler has it: who may submit under it."""

    @property
    def users(self) -> frozenset[str]: ...


class AccountTool(Protocol):
    """What a scheduler's account module provides (module-level functions)."""

    def read_cluster_name(self, runner: Runner) -> str: ...

    def read_accounts(self, runner: Runner, cluster: str) -> Mapping[str, AccountInfo]: ...

    def plan_account_sync(self, current: Mapping[str, AccountInfo],
                          desired: Mapping[str, float], *, parent: str | None, cluster: str,
                          users: Iterable[str]) -> list[list[str]]: ...

    def has_operator_rights(self, runner: Runner, user: str) -> bool: ...

    def apply(self, runner: Runner, plan: Sequence[Sequence[str]]) -> list[list[str]]: ...

    def accounts_named(self, plan: Iterable[Sequence[str]]) -> set[str]: ...


def account_tool(scheduler: str) -> AccountTool:
    """The account module of ``scheduler``; :class:`UnsupportedError` where hpcdet cannot
    manage the scheduler's fair-share tree."""
    plugin = registry.scheduler(scheduler)
    capability = plugin.capabilities.fair_share_accounts
    module = plugin.module("accounts") if capability.supported else None
    if module is None:
        raise UnsupportedError(capability.reason or f"hpcdet does not manage {scheduler} "
                               "fair-share accounts")
    return cast(AccountTool, module)
