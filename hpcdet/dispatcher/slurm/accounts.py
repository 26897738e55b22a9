"""Slurm accounts for fair-share: read them, plan the ``sacctmgr`` commands, apply them.

hpcdet maps each workspace (or user) onto a Slurm account whose ``fairshare`` is its
weight (design: docs/admin/slurm.md). This module knows only Slurm: which accounts and
associations exist (one ``sacctmgr show assoc`` call), which commands turn that into the
wanted state (nothing for what already matches), and whether a user may run them. The
master decides which accounts it wants (hpcdet/master/queue/fair_share.py).

Every value is checked before it enters an argv: account names are what Slurm stores
(lower-case letters, digits, ``_ . -``; Slurm lower-cases account names itself, so an
upper-case name would never match what it reads back), user and cluster names may hold no
whitespace, ``,``, ``=``, quotes or control characters (sacctmgr would read them as more
conditions or names).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from hpcdet.dispatcher.commands import Runner
from hpcdet.dispatcher.safety import check_safe
from hpcdet.errors import SchedulerError, ValidationError

ACCOUNT_NAME = re.compile(r"^[a-z0-9_.-]+$")
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_.@+-]+$")
# sacctmgr's AdminLevel values that may add and modify accounts.
OPERATOR_LEVELS = frozenset({"operator", "administrator"})
# The ``Share`` column of an association that uses its parent's share.
SHARE_PARENT = "parent"


@dataclass(frozen=True)
class SlurmAccount:
    """One account's association on a cluster: its parent, fairshare and user associations."""

    name: str
    parent: str | None
    fairshare: str
    users: frozenset[str] = field(default_factory=frozenset)


def read_accounts(runner: Runner, cluster: str, *,
                  sacctmgr: str = "sacctmgr") -> dict[str, SlurmAccount]:
    """Every account association on ``cluster`` with its user associations, by account name."""
    check_plain(cluster, "resource_manager.cluster_name")
    out = runner([sacctmgr, "-n", "-P", "show", "assoc", "where", f"cluster={cluster}",
                  "format=account,user,parentname,share"])
    return parse_assocs(out)


def parse_assocs(out: str) -> dict[str, SlurmAccount]:
    """Parse ``sacctmgr -n -P show assoc format=account,user,parentname,share``."""
    accounts: dict[str, tuple[str | None, str]] = {}
    users: dict[str, set[str]] = {}
    for line in out.splitlines():
        fields = [part.strip() for part in line.split("|")]
        if len(fields) < 4 or not fields[0]:
            continue
        account, user, parent, share = fields[:4]
        if user:
            users.setdefault(account, set()).add(user)
        else:
            accounts[account] = (parent or None, share)
    return {name: SlurmAccount(name, parent, share, frozenset(users.get(name, ())))
            for name, (parent, share) in accounts.items()}


def fairshare_value(weight: float) -> int:
    """A weight as Slurm's integer ``fairshare`` (at least 1: 0 would mean no share)."""
    return max(1, round(weight))


def plan_account_sync(current: Mapping[str, SlurmAccount], desired: Mapping[str, float], *,
                      parent: str | None, cluster: str,
                      users: Iterable[str]) -> list[list[str]]:
    """The ``sacctmgr`` commands that give every desired account its fairshare and users.

    Missing accounts are added under ``parent`` (which is added first, under Slurm's root,
    if it is missing too); existing ones keep their place in the tree. Nothing is planned
    for what already matches, and nothing is removed.
    """
    check_plain(cluster, "resource_manager.cluster_name")
    wanted_users = sorted({check_plain(user, "the Slurm user") for user in users})
    plan = _parent_commands(current, parent, cluster) if desired else []
    for name in sorted(desired):
        account = current.get(check_account(name, "account"))
        plan.extend(_account_commands(account, name, fairshare_value(desired[name]),
                                      parent=parent, cluster=cluster))
        have = account.users if account is not None else frozenset()
        plan.extend(["sacctmgr", "-i", "add", "user", user, f"account={name}",
                     f"cluster={cluster}"] for user in wanted_users if user not in have)
    return plan


def _parent_commands(current: Mapping[str, SlurmAccount], parent: str | None,
                     cluster: str) -> list[list[str]]:
    if parent is None or check_account(parent, "fair_share.parent_account") in current:
        return []
    return [["sacctmgr", "-i", "add", "account", parent, f"cluster={cluster}"]]


def _account_commands(account: SlurmAccount | None, name: str, fairshare: int, *,
                      parent: str | None, cluster: str) -> list[list[str]]:
    if account is None:
        under = [f"parent={parent}"] if parent else []
        return [["sacctmgr", "-i", "add", "account", name, *under, f"fairshare={fairshare}",
                 f"cluster={cluster}"]]
    if account.fairshare == str(fairshare):
        return []
    return [["sacctmgr", "-i", "modify", "account", "where", f"name={name}", f"cluster={cluster}",
             "set", f"fairshare={fairshare}"]]


def has_operator_rights(runner: Runner, user: str, *, uid: int | None = None,
                        sacctmgr: str = "sacctmgr") -> bool:
    """Whether ``user`` may add and modify accounts: uid 0, or AdminLevel Operator/Administrator.

    ``uid`` defaults to this process's effective uid. A user unknown to slurmdbd (the
    command fails) has no rights.
    """
    if (os.geteuid() if uid is None else uid) == 0:
        return True
    check_plain(user, "the Slurm user")
    try:
        out = runner([sacctmgr, "-n", "-P", "show", "user", user, "format=adminlevel"])
    except SchedulerError:
        return False
    return any(line.strip().lower() in OPERATOR_LEVELS for line in out.splitlines())


def apply(runner: Runner, plan: Sequence[Sequence[str]], *,
          sacctmgr: str = "sacctmgr") -> list[list[str]]:
    """Run the planned commands in order; return those that ran.

    The first failure raises :class:`SchedulerError` (naming the command and sacctmgr's
    message); the commands before it have taken effect, and planning again from a fresh
    read picks up where this stopped.
    """
    done: list[list[str]] = []
    for command in plan:
        argv = [sacctmgr, *command[1:]] if command and command[0] == "sacctmgr" else list(command)
        for index, value in enumerate(argv):
            check_safe(value, f"sacctmgr argument {index}")
        try:
            runner(argv)
        except SchedulerError as exc:
            # Someone (another master process, an admin) added it since the plan was read:
            # sacctmgr then fails with "Nothing new added", and the wanted state holds.
            if "Nothing new added" not in f"{exc.stdout}{exc.stderr}":
                raise
            continue
        done.append(list(command))
    return done


def read_cluster_name(runner: Runner, *, scontrol: str = "scontrol") -> str:
    """Slurm's ``ClusterName`` (associations are per cluster; master.yaml's name may differ)."""
    argv = [scontrol, "show", "config"]
    for line in runner(argv).splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "ClusterName" and value.strip():
            return value.strip()
    raise SchedulerError(argv, 1, "", "no ClusterName in the output")


def accounts_named(plan: Iterable[Sequence[str]]) -> set[str]:
    """The accounts that planned ``add`` commands create or add users to."""
    names: set[str] = set()
    for command in plan:
        if command[2:4] == ["add", "account"]:
            names.add(command[4])
        names.update(arg.removeprefix("account=") for arg in command
                     if command[2:4] == ["add", "user"] and arg.startswith("account="))
    return names


def check_account(name: str, where: str) -> str:
    """``name`` if it is a valid Slurm account name, else :class:`ValidationError`."""
    return _matching(name, where, ACCOUNT_NAME,
                     "is not a Slurm account name (lower-case letters, digits, '_', '.' and "
                     "'-' only; Slurm lower-cases account names)")


def check_plain(value: str, where: str) -> str:
    """``value`` if it can stand as one sacctmgr name (no spaces, commas, '=', quotes)."""
    return _matching(value, where, _PLAIN_NAME,
                     "cannot be passed to sacctmgr (letters, digits, '_', '.', '@', '+' and "
                     "'-' only)")


def _matching(value: str, where: str, pattern: re.Pattern[str], problem: str) -> str:
    """``value`` if it is safe and matches ``pattern``, else ValidationError: ``problem``."""
    check_safe(value, where)
    if not pattern.match(value):
        raise ValidationError(f"{where}: {value!r} {problem}")
    return value
