"""Slurm job arrays: many trials' jobs in one ``sbatch --array`` (docs/job-arrays.md).

Each trial keeps its own job directory and its own rendered job script (``job-N.sh``, with
its ``trial.json``, token and context beside it). The array adds two files in its own
directory: ``tasks``, one trial script path per line (line ``i + 1`` for task ``i``), and
``array.sh``, whose ``#SBATCH`` lines are the trials' shared resources plus ``--array`` and
whose body runs the script of ``$SLURM_ARRAY_TASK_ID``'s line, with its output in that
trial's job directory as ``slurm-<array id>_<index>.out``/``.err``: the names the master
reads a job's logs under, since a task's job id is ``<array id>_<index>``.

Slurm's limits come from ``scontrol show config`` (``MaxArraySize``, ``MaxJobCount``), read
once per backend through its command runner.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from hpcdet.dispatcher.base import ArrayLimits, ArraySpec, JobSpec, Submission
from hpcdet.dispatcher.commands import Runner, UnparseableOutputError
from hpcdet.dispatcher.render import DirectiveValue, render_directives
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.transport import Transport
from hpcdet.errors import ValidationError

ARRAY_TEMPLATE_NAME = "slurm_array.sh.j2"
ARRAY_SCRIPT = "array.sh"
INDEX_FILE = "tasks"
# Slurm's defaults, for a configuration line that is missing.
DEFAULT_MAX_ARRAY_SIZE = 1001
DEFAULT_MAX_JOB_COUNT = 10000
_CONFIG_LINE = re.compile(r"^\s*(MaxArraySize|MaxJobCount)\s*=\s*(\d+)\s*$")
# What the array's script accepts from the index file: an absolute path to a job-N.sh.
_TASK_SCRIPT = re.compile(r"^/[^\n\r\x00]*/job-\d+\.sh$")


def parse_array_limits(stdout: str) -> ArrayLimits:
    """``MaxArraySize`` and ``MaxJobCount`` from ``scontrol show config`` (Slurm's defaults
    for a missing line)."""
    values = {}
    for line in stdout.splitlines():
        match = _CONFIG_LINE.match(line)
        if match:
            values[match.group(1)] = int(match.group(2))
    limits = ArrayLimits(values.get("MaxArraySize", DEFAULT_MAX_ARRAY_SIZE),
                         values.get("MaxJobCount", DEFAULT_MAX_JOB_COUNT))
    if limits.max_array_size < 1 or limits.max_job_count < 1:
        raise UnparseableOutputError(("scontrol", "show", "config"), stdout,
                                     "MaxArraySize and MaxJobCount of at least 1")
    return limits


def read_array_limits(runner: Runner, scontrol: str = "scontrol") -> ArrayLimits:
    """One ``scontrol show config``."""
    return parse_array_limits(runner((scontrol, "show", "config")))


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


def array_range(size: int, throttle: int | None) -> str:
    """``0-<size-1>`` with ``%<throttle>`` when it limits anything."""
    text = f"0-{size - 1}"
    return f"{text}%{throttle}" if throttle is not None and throttle < size else text


def array_directives(directives: dict[str, DirectiveValue],
                     array: ArraySpec) -> dict[str, DirectiveValue]:
    """A trial's ``#SBATCH`` options made the array's: its name, directory, range, and
    Slurm's own output (messages from before the task's script starts) per task."""
    logs = array.array_dir.replace("%", "%%")
    return {**directives, "job-name": array.name, "chdir": array.array_dir,
            "output": f"{logs}/slurm-%A_%a.out", "error": f"{logs}/slurm-%A_%a.err",
            "array": array_range(len(array.scripts), array.throttle)}


def render_array(spec: JobSpec, array: ArraySpec, *, sbatch: str,
                 directives: dict[str, DirectiveValue], user_directives: str,
                 render: Callable[..., str]) -> Submission:
    """The array's script: ``spec``'s directives (already rendered for a trial) made the
    array's, and the body that runs task ``$SLURM_ARRAY_TASK_ID``'s script."""
    check_array(array)
    script = render(directives=render_directives("#SBATCH", array_directives(directives, array)),
                    user_directives=user_directives,
                    index_file=posixpath.join(array.array_dir, INDEX_FILE))
    path = posixpath.join(array.array_dir, ARRAY_SCRIPT)
    return Submission(script, path, (sbatch, "--parsable", path), owner=spec.owner)


def index_text(array: ArraySpec) -> bytes:
    """The index file: task ``i``'s script on line ``i + 1``."""
    check_array(array)
    return "".join(f"{script}\n" for script in array.scripts).encode("utf-8")


def write_index(array: ArraySpec, files: Transport) -> None:
    """Create the array's directory and write its index file (atomically, 0600)."""
    files.make_dirs(array.array_dir, 0o700)
    files.write_file(posixpath.join(array.array_dir, INDEX_FILE), index_text(array), 0o600)
