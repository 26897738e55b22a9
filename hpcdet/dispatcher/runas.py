"""Scheduler commands as the job's owner: ``sudo -n -u USER hpcdet-runas VERB ARGS...``.

With ``security.jobs_run_as: owner`` the master (the unprivileged service account) never
submits, cancels or changes a job itself: it asks the root-installed helper
(:mod:`hpcdet.runas.helper`) to do it *as the user who owns the job*, through sudo. The verbs
are scheduler-neutral (``submit``, ``cancel``, ``hold``, ``release``, ``requeue``,
``update``, ``prepare``, ``remove``; Slurm's ``token``: the owner's own JWT for slurmrestd);
the helper maps them to the scheduler's commands.
Every command still runs through the one runner of :mod:`hpcdet.dispatcher.commands`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hpcdet.dispatcher.commands import NOT_FOUND, CommandRunner
from hpcdet.errors import SchedulerError, ValidationError

DEFAULT_HELPER = "/usr/local/libexec/hpcdet-runas"
VERBS = ("submit", "cancel", "hold", "release", "requeue", "update", "prepare", "remove",
         "token")
# The helper's own refusals (see hpcdet.runas.helper EXIT_*).
HELPER_EXIT_CODES = {64: "usage", 65: "invalid argument", 69: "scheduler unavailable",
                     77: "not permitted", 78: "helper misconfigured"}
_USER = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")
# What sudo -n prints when no rule lets the service account run the helper.
_SUDO_REFUSALS = ("a password is required", "is not allowed to execute",
                  "may not run sudo", "is not in the sudoers file")


def sudoers_line(service_user: str, helper: str) -> str:
    """The one sudoers rule the helper needs (never lets the service account be root)."""
    return f"{service_user} ALL=(ALL,!root) NOPASSWD: {helper}"


class RunAsRefusedError(SchedulerError):
    """sudo or the helper refused; ``args[0]`` is one line saying why and what to do."""

    def __init__(self, error: SchedulerError, message: str) -> None:
        super().__init__(error.argv, error.returncode, error.stdout, error.stderr)
        self.args = (message,)


@dataclass
class RunAs:
    """How to reach the helper, and the runner that starts it."""

    helper: str = DEFAULT_HELPER
    service_user: str = "hpcdet"
    sudo: str = "sudo"
    runner: CommandRunner = field(default_factory=CommandRunner)

    def argv(self, user: str, verb: str, *args: str) -> tuple[str, ...]:
        """``sudo -n -u USER HELPER VERB ARGS...``; ``user`` and ``verb`` are checked."""
        if not _USER.match(user) or user == "root":
            raise ValidationError(f"cannot run jobs as {user!r}: not a plain Unix user name")
        if verb not in VERBS:
            raise ValidationError(f"unknown run-as verb {verb!r}")
        return (self.sudo, "-n", "-u", user, "--", self.helper, verb, *args)

    def run(self, user: str, verb: str, *args: str, stdin: bytes | None = None) -> str:
        """Run one verb as ``user``; raise :class:`RunAsRefusedError` on sudo/helper refusal."""
        argv = self.argv(user, verb, *args)
        try:
            return self.runner(argv, stdin=stdin)
        except SchedulerError as exc:
            raise self._explain(exc, user) from exc

    def _explain(self, exc: SchedulerError, user: str) -> SchedulerError:
        stderr = exc.stderr.strip()
        if exc.returncode == NOT_FOUND and exc.argv[:1] == [self.sudo]:
            return RunAsRefusedError(exc, f"{self.sudo} is not installed: jobs_run_as: owner "
                                     "needs sudo and scripts/install-runas-helper")
        if "unknown user" in stderr:
            return RunAsRefusedError(exc, f"cannot run jobs as {user}: no such Unix user on "
                                     "the master's host")
        if stderr.startswith("sudo:") or any(s in stderr for s in _SUDO_REFUSALS):
            return RunAsRefusedError(exc, f"sudo would not run {self.helper} as {user} "
                                     f"({stderr.splitlines()[0] if stderr else exc.returncode});"
                                     f" install this sudoers rule: "
                                     f"{sudoers_line(self.service_user, self.helper)}")
        if exc.returncode in HELPER_EXIT_CODES and stderr.startswith("hpcdet-runas:"):
            return RunAsRefusedError(exc, stderr.splitlines()[0])
        return exc

    def cancel(self, user: str, job_ids: Sequence[str]) -> str:
        return self.run(user, "cancel", *job_ids)

    def hold(self, user: str, job_id: str) -> str:
        return self.run(user, "hold", job_id)

    def release(self, user: str, job_id: str) -> str:
        return self.run(user, "release", job_id)

    def requeue(self, user: str, job_id: str) -> str:
        return self.run(user, "requeue", job_id)

    def update(self, user: str, job_id: str, values: Mapping[str, str]) -> str:
        return self.run(user, "update", job_id, *(f"{k}={v}" for k, v in values.items()))

    def prepare(self, user: str, job_dir: str, archive: bytes) -> None:
        self.run(user, "prepare", job_dir, stdin=archive)

    def remove(self, user: str, job_dir: str) -> None:
        self.run(user, "remove", job_dir)

    def token(self, user: str, lifespan_seconds: int) -> str:
        """``user``'s own Slurm JWT (what ``scontrol token`` prints: ``SLURM_JWT=...``),
        minted by the helper as ``user``: the master needs no power to mint anyone's token.

        A failure never carries the helper's stdout: it could hold a token.
        """
        if isinstance(lifespan_seconds, bool) or not isinstance(lifespan_seconds, int) \
                or lifespan_seconds <= 0:
            raise ValidationError(f"a token lifespan is a number of seconds, not "
                                  f"{lifespan_seconds!r}")
        try:
            return self.run(user, "token", str(lifespan_seconds))
        except SchedulerError as exc:
            raise _without_stdout(exc) from None  # no chain: the original holds stdout


def _without_stdout(exc: SchedulerError) -> SchedulerError:
    """``exc`` with its stdout dropped (and so out of its message), the rest kept."""
    bare = SchedulerError(exc.argv, exc.returncode, "", exc.stderr)
    return RunAsRefusedError(bare, exc.args[0]) if isinstance(exc, RunAsRefusedError) else bare
