"""Whether the master's service account is a Slurm operator (``det-master doctor``).

The master lowers a job's nice (``det job update --priority``, queue ordering) and applies
fair-share accounts (``manage_accounts``); Slurm allows both to operators and
administrators only (docs/admin/security.md).
"""

from __future__ import annotations

from hpcdet.dispatcher.commands import Runner
from hpcdet.errors import SchedulerError

RIGHTS = ("operator", "administrator")


def operator_problem(runner: Runner, user: str) -> str | None:
    """None when ``user`` is a Slurm operator or administrator; else why not."""
    argv = ("sacctmgr", "--noheader", "--parsable2", "show", "user", user,
            "format=adminlevel")
    try:
        level = runner(argv).strip().lower()
    except SchedulerError as exc:
        return f"sacctmgr failed: {exc.stderr.strip() or exc.returncode}"
    if not level:
        return f"{user} is not a Slurm user (sacctmgr knows no such user)"
    if level not in RIGHTS:
        return f"{user}'s Slurm admin level is {level!r}, not operator"
    return None


def operator_fix(user: str) -> str:
    """The command a Slurm administrator runs to give ``user`` the rights."""
    return f"sacctmgr -i modify user {user} set adminlevel=operator"
