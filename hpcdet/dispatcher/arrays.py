"""What every scheduler's job arrays share (docs/job-arrays.md): the index file and its checks.

An array's directory holds ``tasks``, one trial script path per line (line ``i + 1`` for
task ``i``), and ``array.sh``, the array's batch script, which picks its task's line by the
scheduler's index variable (Slurm ``SLURM_ARRAY_TASK_ID``, PBS ``PBS_ARRAY_INDEX``) and runs
that trial's own job script. Each scheduler's module renders ``array.sh``
(:mod:`hpcdet.dispatcher.slurm.arrays`, :mod:`hpcdet.dispatcher.pbs.arrays`).
"""

from __future__ import annotations

import posixpath
import re

from hpcdet.dispatcher.base import ArraySpec
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.transport import Transport
from hpcdet.errors import ValidationError

ARRAY_SCRIPT = "array.sh"
INDEX_FILE = "tasks"
# What the array's script accepts from the index file: an absolute path to a job-N.sh.
_TASK_SCRIPT = re.compile(r"^/[^\n\r\x00]*/job-\d+\.sh$")


def check_array(array: ArraySpec) -> None:
    """Refuse an array whose name, directory or task scripts cannot be written safely."""
    check_safe(array.name, "array name")
    check_safe(array.array_dir, "array directory")
    if not array.name:
        raise ValidationError("an array needs a name")
    if not posixpath.isabs(array.array_dir) or "\\" in array.array_dir:
        raise ValidationError(f"array directory must be an absolute path without a "
                              f"backslash: {array.array_dir!r}")
    if not array.scripts:
        raise ValidationError(f"array {array.name} has no tasks")
    for index, script in enumerate(array.scripts):
        if not _TASK_SCRIPT.match(check_safe(script, f"array task {index}")):
            raise ValidationError(f"array task {index}: {script!r} is not an absolute path "
                                  "to a trial's job-N.sh")
    if array.throttle is not None and array.throttle < 1:
        raise ValidationError(f"array throttle must be at least 1, not {array.throttle}")


def index_text(array: ArraySpec) -> bytes:
    """The index file: task ``i``'s script on line ``i + 1``."""
    check_array(array)
    return "".join(f"{script}\n" for script in array.scripts).encode("utf-8")


def write_index(array: ArraySpec, files: Transport) -> None:
    """Create the array's directory and write its index file (atomically, 0600)."""
    files.make_dirs(array.array_dir, 0o700)
    files.write_file(posixpath.join(array.array_dir, INDEX_FILE), index_text(array), 0o600)
