"""Slurm job arrays: many trials' jobs in one ``sbatch --array`` (docs/job-arrays.md).

Each trial keeps its own job directory and its own rendered job script (``job-N.sh``, with
its ``trial.json``, token and context beside it). The array adds two files in its own
directory: ``tasks``, one trial script path per line (line ``i + 1`` for task ``i``), and
``array.sh``, whose ``#SBATCH`` lines are the trials' shared resources plus ``--array`` and
whose body runs the script of ``$SLURM_ARRAY_TASK_ID``'s line, with its output in that
trial's job directory as ``slurm-<array id>_<index>.out``/``.err``: the names the master
reads a job's logs under, since a task's job id is ``<array id>_<index>``.

Slurm's limits come from ``scontrol show config`` (``MaxArraySize``, ``MaxJobCount``), read
once per backend with the rest of the controller's configuration (:mod:`.config`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from hpcdet.dispatcher.arrays import (
    ARRAY_SCRIPT,
    INDEX_FILE,
    check_array,
    index_text,
    write_index,
)
from hpcdet.dispatcher.base import ArrayLimits, ArraySpec, JobSpec, Submission
from hpcdet.dispatcher.commands import UnparseableOutputError
from hpcdet.dispatcher.render import DirectiveValue, render_directives

__all__ = ["ARRAY_SCRIPT", "INDEX_FILE", "array_directives", "array_entry", "array_range",
           "check_array", "index_text", "parse_array_limits", "pending_task_ids",
           "render_array", "task_id", "task_indices", "write_index"]

ARRAY_TEMPLATE_NAME = "slurm_array.sh.j2"
# Slurm's defaults, for a configuration line that is missing.
DEFAULT_MAX_ARRAY_SIZE = 1001
DEFAULT_MAX_JOB_COUNT = 10000
_CONFIG_LINE = re.compile(r"^\s*(MaxArraySize|MaxJobCount)\s*=\s*(\d+)\s*$")
# A task in squeue (12_3), and the entry of an array's pending tasks (12_[4-9%2]).
_TASK = re.compile(r"^(?P<array>\d+)_(?P<index>\d+)$")
_PENDING_TASKS = re.compile(r"^(?P<array>\d+)_\[(?P<ranges>[\d,\-]+)(?:%\d+)?\]$")


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


def task_id(array_id: str, index: int) -> str:
    """Slurm's id of one task: ``<array id>_<index>``."""
    return f"{array_id}_{index}"


def array_entry(job_id: str) -> tuple[str, int] | None:
    """``(array id, tasks in this entry)`` of an array entry (``12_3``, ``12_[4-9%2]``);
    None for a job that is not part of an array."""
    task = _TASK.match(job_id)
    if task:
        return task["array"], 1
    pending = _PENDING_TASKS.match(job_id)
    if not pending:
        return None
    return pending["array"], len(task_indices(pending["ranges"]))


def pending_task_ids(job_id: str) -> list[str]:
    """The task ids an entry of pending tasks stands for: ``12_[4-6]`` is 12_4, 12_5, 12_6
    (each can be updated on its own: Slurm splits it off its array)."""
    pending = _PENDING_TASKS.match(job_id)
    if not pending:
        return []
    return [task_id(pending["array"], index) for index in task_indices(pending["ranges"])]


def task_indices(ranges: str) -> list[int]:
    """``1,4-6`` as 1, 4, 5, 6 (a ``%`` throttle after them dropped): squeue's pending
    tasks, slurmrestd's ``array_task_string``, pyslurm's ``array_tasks_waiting``."""
    indices: list[int] = []
    for part in ranges.partition("%")[0].split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            indices += range(int(low), int(high or low) + 1)
    return indices
