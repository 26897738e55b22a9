"""PBS job arrays: many trials' jobs in one ``qsub -J`` (docs/job-arrays.md).

Each trial keeps its own job directory and rendered job script, as on Slurm
(:mod:`hpcdet.dispatcher.arrays`: the index file ``tasks`` and ``array.sh``). ``array.sh``
holds the trials' shared ``#PBS`` lines with the array's own name, ``-J 0-N[%M]`` and PBS's
output of the array in its directory; its body runs the script of ``$PBS_ARRAY_INDEX``'s
line with its output appended to that trial's ``<subjob id>.OU``/``.ER``: the names the
master reads a PBS job's logs under, since a task's job id is the subjob's
(``123[4].server``).

Measured on OpenPBS 23.06.06 (``scripts/dev-pbs``):

* ``qsub -J 0-3%2`` sets the array's ``max_run_subjobs`` (at most 2 subjobs run at once);
  a range needs at least two indices (``-J 0-0`` is refused), so a lone trial is a plain job.
* The server's ``max_array_size`` (``qstat -B -f -F json``; PBS's default 10000 when unset)
  is the most subjobs one array may have. PBS has no count of all jobs like Slurm's
  ``MaxJobCount``; a server-wide ``max_queued`` of the form ``[o:PBS_ALL=N]`` is read as
  one, else :data:`NO_JOB_COUNT_LIMIT`.
* An array is rerunnable (``-r y``): trials' jobs always are.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from typing import Any

from hpcdet.dispatcher.arrays import ARRAY_SCRIPT, INDEX_FILE, check_array
from hpcdet.dispatcher.base import ArrayLimits, ArraySpec, JobSpec, Submission
from hpcdet.dispatcher.commands import UnparseableOutputError
from hpcdet.errors import ValidationError

ARRAY_TEMPLATE_NAME = "pbs_array.sh.j2"
# PBS's default server max_array_size.
DEFAULT_MAX_ARRAY_SIZE = 10000
# No server-wide limit on queued jobs: the master's own budget is then not the scheduler's.
NO_JOB_COUNT_LIMIT = 1_000_000
# qsub prints an array's id as 123[].server; a subjob's is 123[4].server.
_ARRAY_ID = re.compile(r"^(?P<number>\d{1,18})\[\](?P<server>\.[A-Za-z0-9][A-Za-z0-9.-]{0,253})?$")
_SUBJOB_ID = re.compile(
    r"^(?P<number>\d{1,18})\[(?P<index>\d{1,9})\](?P<server>\.[A-Za-z0-9][A-Za-z0-9.-]{0,253})?$")
_OVERALL_QUEUED = re.compile(r"\[o:PBS_ALL=(\d+)\]")
# The #PBS lines a trial's script has that the array replaces with its own.
_ARRAY_OWNS = ("-N ", "-o ", "-e ", "-J ")


def parse_array_limits(server: Mapping[str, Any]) -> ArrayLimits:
    """``max_array_size`` (and ``max_queued``'s overall limit) from the ``Server`` object
    of ``qstat -B -f -F json``."""
    record = next((value for value in server.values() if isinstance(value, dict)), None)
    if record is None:
        raise UnparseableOutputError(("qstat", "-B", "-f", "-F", "json"), str(server),
                                     "one server's attributes")
    size = _positive(record.get("max_array_size"), DEFAULT_MAX_ARRAY_SIZE)
    overall = _OVERALL_QUEUED.search(str(record.get("max_queued") or ""))
    count = int(overall.group(1)) if overall else NO_JOB_COUNT_LIMIT
    if size < 1 or count < 1:
        raise UnparseableOutputError(("qstat", "-B", "-f", "-F", "json"), str(record),
                                     "max_array_size and max_queued of at least 1")
    return ArrayLimits(size, count)


def _positive(value: object, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else default


def array_range(size: int, throttle: int | None) -> str:
    """``0-<size-1>`` with ``%<throttle>`` (``max_run_subjobs``) when it limits anything."""
    if size < 2:
        raise ValidationError("a PBS array needs at least two subjobs (-J 0-1)")
    text = f"0-{size - 1}"
    return f"{text}%{throttle}" if throttle is not None and throttle < size else text


def array_directives(trial_lines: list[str], array: ArraySpec) -> list[str]:
    """A trial's ``#PBS`` lines made the array's: its name, its range, and PBS's own output
    of each subjob (before the trial script starts) in the array's directory."""
    logs = array.array_dir.rstrip("/") + "/"
    own = [line for line in trial_lines
           if not line.removeprefix("#PBS ").startswith(_ARRAY_OWNS)]
    return [f"#PBS -N {array.name}", *own, f"#PBS -o {logs}", f"#PBS -e {logs}",
            f"#PBS -J {array_range(len(array.scripts), array.throttle)}"]


def check_array_name(name: str) -> str:
    """PBS's ``-N``: letters, digits and ``_.+-`` (see :mod:`.render`)."""
    if not re.fullmatch(r"[A-Za-z0-9_.+-]{1,230}", name):
        raise ValidationError(f"PBS array name must be letters, digits and _.+- only: {name!r}")
    return name


def check_array_dir(path: str) -> str:
    """The array directory is an ``-o``/``-e`` path PBS reads itself (see :mod:`.render`)."""
    if not re.fullmatch(r"/[A-Za-z0-9_./+@%=-]*", path):
        raise ValidationError(f"PBS array directory must be an absolute path of letters, "
                              f"digits and _./+@%=-: {path!r}")
    return path


def render_array(spec: JobSpec, array: ArraySpec, *, qsub: str, trial_lines: list[str],
                 user_directives: str, render: Callable[..., str]) -> Submission:
    """The array's script: ``trial_lines`` (a trial's ``#PBS`` lines, already validated)
    made the array's, and the body that runs subjob ``$PBS_ARRAY_INDEX``'s script."""
    check_array(array)
    check_array_name(array.name)
    check_array_dir(array.array_dir)
    script = render(directives="\n".join(array_directives(trial_lines, array)),
                    user_directives=user_directives,
                    index_file=posixpath.join(array.array_dir, INDEX_FILE))
    path = posixpath.join(array.array_dir, ARRAY_SCRIPT)
    return Submission(script, path, (qsub, path), owner=spec.owner)


def task_id(array_id: str, index: int) -> str:
    """Subjob ``index`` of ``123[].server``: ``123[4].server``."""
    match = _ARRAY_ID.match(array_id)
    if match is None or index < 0:
        raise ValidationError(f"invalid PBS array id {array_id!r} or index {index}")
    return f"{match['number']}[{index}]{match['server'] or ''}"


def array_entry(job_id: str) -> tuple[str, int] | None:
    """``(array id, 1)`` for a subjob (``123[4].server`` is of ``123[].server``); None for
    anything else (PBS lists each subjob on its own with ``qstat -t``)."""
    match = _SUBJOB_ID.match(job_id)
    if match is None:
        return None
    return f"{match['number']}[]{match['server'] or ''}", 1


def task_prefix(array_id: str) -> str:
    """``123[``: the start of every subjob id of ``123[].server``."""
    match = _ARRAY_ID.match(array_id)
    if match is None:
        raise ValidationError(f"invalid PBS array id {array_id!r}")
    return f"{match['number']}["


def record_key(job_id: str) -> str:
    """A job's id without its server (``123[4]``, ``123``): qstat may name another suffix
    than the one given, and subjobs of one array share its number."""
    return job_id.partition(".")[0]
