"""An API token of a task's owner for its job: how a notebook's kernel and a TensorBoard's
metrics reader act as the task's owner, whoever the job runs as.

An open master believes a name (``DET_USER`` in the job's environment). A MUNGE in the job
would prove the job's Unix account (the master's, unless jobs run as their owners), so a
munge master issues the owner an API token instead: written into the job directory as a
0600 file (``user_token``; never on a command line or in the job's environment file),
named after its task (``task:<id>``, listed by ``det user token list``) and revoked once
the task has ended (:func:`revoke_ended_task_tokens`, every reconciler cycle).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from hpcdet.master.models import AuthToken, CommandTask, ShellKey, utcnow
from hpcdet.master.security import tokens
from hpcdet.master.settings.core import MasterSettings
from hpcdet.states import TERMINAL_STATES

# The job directory's file holding the token (the job side reads it: hpcdet.services).
USER_TOKEN_FILE = "user_token"
TASK_TOKEN_PREFIX = "task:"
# Revoked when the task ends; the lifetime only bounds a token whose end was missed.
USER_TOKEN_LIFETIME = dt.timedelta(days=30)
_TERMINAL = tuple(state.value for state in TERMINAL_STATES)


@dataclass(frozen=True)
class OwnerIdentity:
    """What a job gets to act as its owner: environment variables and job-directory files
    (name: (content, mode)), and the token row to name after the task once it has an id."""

    environment: dict[str, str] = field(default_factory=dict)
    files: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    token: AuthToken | None = None

    def name_after(self, task: CommandTask) -> None:
        """Name the token after ``task`` (in the submit's commit), so its end revokes it."""
        if self.token is not None:
            self.token.name = f"{TASK_TOKEN_PREFIX}{task.id}"


def owner_identity(session: Session, settings: MasterSettings, owner: str, *,
                   test_only: bool) -> OwnerIdentity:
    """How the job of ``owner``'s task proves who it acts for (see the module doc); a dry
    run (``test_only``) issues nothing."""
    environment = {"DET_USER": owner}
    if settings.auth_mode != "munge" or test_only:
        return OwnerIdentity(environment)
    token, row = tokens.issue(session, owner, "api", USER_TOKEN_LIFETIME,
                              name=f"{TASK_TOKEN_PREFIX}new")
    return OwnerIdentity(environment, {USER_TOKEN_FILE: ((token + "\n").encode(), 0o600)}, row)


def revoke_ended_task_tokens(session: Session) -> int:
    """Revoke the live API tokens named after tasks that have ended (the job's own, and
    those minted with it: api/users.py names them after the task too); how many."""
    live = session.scalars(select(AuthToken).where(
        AuthToken.kind == "api", AuthToken.revoked_at.is_(None),
        AuthToken.name.startswith(TASK_TOKEN_PREFIX))).all()
    by_task: dict[int, list[AuthToken]] = {}
    for row in live:
        if row.name[len(TASK_TOKEN_PREFIX):].isdigit():
            by_task.setdefault(int(row.name[len(TASK_TOKEN_PREFIX):]), []).append(row)
    if not by_task:
        return 0
    ended = session.scalars(select(CommandTask.id).where(
        CommandTask.id.in_(by_task), CommandTask.state.in_(_TERMINAL))).all()
    doomed = [row for task_id in ended for row in by_task[task_id]]
    for row in doomed:
        row.revoked_at = utcnow()
    return len(doomed)


def forget_ended_shell_keys(session: Session) -> int:
    """Blank the client private key of every shell that has ended (issue 28: it stayed in
    the database, a credential of a finished shell for anyone who reads the database or a
    backup); how many. One statement, run every reconciler cycle."""
    ended = select(CommandTask.id).where(CommandTask.state.in_(_TERMINAL))
    done = session.execute(update(ShellKey).where(
        ShellKey.client_private_key != "", ShellKey.task_id.in_(ended)).values(
        client_private_key=""))
    return int(getattr(done, "rowcount", 0) or 0)
