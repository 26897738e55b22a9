"""The shared exception root.

Domain code raises these; only the edges decide how they are shown: the CLI turns them
into one line and an exit code, the master's API turns them into the common JSON error
shape (``{"error": {"code", "message", "details"}, "status": N}``).

::

    HpcdetError
     ├── ConfigError          a user-supplied document is wrong (lists every problem)
     ├── ValidationError      a single value is unacceptable (e.g. unsafe for a job script)
     ├── SchedulerError       a scheduler command failed (carries argv, rc, stdout, stderr)
     └── MasterError          the master answered with an error or could not be reached
"""

from __future__ import annotations

from collections.abc import Sequence


class HpcdetError(Exception):
    """Root of every error hpcdet raises on purpose."""


class ConfigError(HpcdetError):
    """A configuration document is invalid; ``errors`` holds one line per problem."""

    def __init__(self, errors: Sequence[str], *, title: str = "invalid configuration") -> None:
        self.errors = list(errors)
        self.title = title
        super().__init__(f"{title}:\n  " + "\n  ".join(self.errors))


class ValidationError(HpcdetError):
    """One value is not acceptable where it was supplied."""


class SchedulerError(HpcdetError):
    """A scheduler command (sbatch, squeue, sacct, scancel, ...) failed."""

    def __init__(self, argv: Sequence[str], returncode: int, stdout: str, stderr: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        detail = stderr.strip() or stdout.strip() or "no output"
        super().__init__(f"{argv[0]} exited with {returncode}: {detail}")


class MasterError(HpcdetError):
    """The master returned an error response, or could not be reached."""

    def __init__(self, message: str, *, status: int | None = None, code: str = "error") -> None:
        self.status = status
        self.code = code
        super().__init__(message)
