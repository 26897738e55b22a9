"""Whether the master's service account is a PBS operator (``det-master doctor``).

``det job update`` (qalter of another user's job) and a requeue (``qrerun``) need PBS
operator or manager rights (docs/admin/pbs.md).
"""

from __future__ import annotations

from hpcdet.dispatcher.commands import Runner
from hpcdet.errors import SchedulerError


def operator_problem(runner: Runner, user: str) -> str | None:
    """None when ``user`` is among the server's operators or managers; else why not."""
    try:
        listing = runner(("qmgr", "-c", "list server"))
    except SchedulerError as exc:
        return f"qmgr failed: {exc.stderr.strip() or exc.returncode}"
    for line in listing.splitlines():
        key, _, value = line.strip().partition("=")
        if key.strip() in ("operators", "managers") and _names(value, user):
            return None
    return f"{user} is neither a PBS operator nor a manager"


def _names(value: str, user: str) -> bool:
    """Whether the comma-separated ``user@host`` list ``value`` grants ``user``."""
    return any(entry.strip().split("@", 1)[0] == user for entry in value.split(","))


def operator_fix(user: str) -> str:
    """The command a PBS manager runs to give ``user`` the rights."""
    return f'qmgr -c "set server operators += {user}@*"'
