"""Render a :class:`~hpcdet.dispatcher.base.JobSpec` as an OpenPBS job script.

The script (``slurm_templates/pbs_job.sh.j2``; every job template lives there) holds these
``#PBS`` directives, each value validated first (no newline/CR/NUL anywhere, then a plain
character set where PBS would misread anything else):

* ``-N name``: letters, digits and ``_.+-``, at most 230 characters (qsub 23.06 refuses
  ``@:/``, spaces and names of 235+ characters).
* ``-l select=<nodes>:ncpus=<ranks*cpus>:mpiprocs=<ranks>[:ngpus=<g>][:gpu_model=<type>]``
  and ``-l place=scatter`` (several nodes: one chunk per host) or ``pack``. PBS has no
  standard GPU-type resource: ``gpu_type`` becomes the custom host resource ``gpu_model``
  (the site must define it; a different name is the backend option ``gpu_type_resource``).
* ``-l walltime=HH:MM:SS`` from ``time_limit`` (Slurm's ``[D-]HH:MM:SS``/``MM:SS``/``MM``).
* ``-q`` the queue (``partition``), ``-A`` account, ``-P`` project (``wckey``).
* ``-j n -k oed -o <job_dir>/ -e <job_dir>/``: PBS does not expand ``%j``; the directory
  form names the files ``<jobid>.OU`` and ``<jobid>.ER``, and ``-k oed`` writes them there
  directly while the job runs (instead of copying them back at the end).
* ``-r y|n`` from ``requeue``; ``-W umask=077``.
* ``-p <priority>`` from ``nice``: PBS runs a larger priority first, so ``-p = -nice``,
  clamped to PBS's -1024..1023.
* ``-v HPCDET_JOB_TAG=<comment>``: hpcdet's tag, in the job's ``Variable_List``, where
  :func:`hpcdet.dispatcher.pbs.queue.read_queue` finds it. qsub splits ``-v`` at commas,
  so the tag is limited to letters, digits and ``_.:@/+-``.

PBS has no ``--signal`` equivalent: qdel and walltime send SIGTERM, then SIGKILL after the
queue's ``kill_delay``; ``signal``, ``qos`` and ``exclude`` are refused when set (qos and
exclude) or ignored (signal, whose default every spec carries).
"""

from __future__ import annotations

import math
import posixpath
import re
import shlex

from hpcdet.dispatcher.base import ContainerSpec, JobSpec
from hpcdet.dispatcher.containers import (
    USER_RUNTIMES,
    directories_to_create,
    launch_lines,
    with_job_dir,
)
from hpcdet.dispatcher.pbs.qsub_args import parse_qsub_args, render_qsub_args
from hpcdet.dispatcher.spec_values import check_shape, check_strings_and_names
from hpcdet.errors import ValidationError

PRIORITY_MIN, PRIORITY_MAX = -1024, 1023
# priority(): nice up to this maps one to one; past it, nice n takes up half the remaining
# room at n = NICE_LINEAR + NICE_SQUEEZE.
NICE_LINEAR, NICE_SQUEEZE = 512, 5000
MAX_NAME = 230
TAG_VARIABLE = "HPCDET_JOB_TAG"
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")
_TAG = re.compile(r"^[A-Za-z0-9_.:@/+-]+$")
_PLAIN = re.compile(r"^[A-Za-z0-9_.@+-]+$")  # queue, account, project, GPU model
_PATH = re.compile(r"^/[A-Za-z0-9_./+@%=-]*$")
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def validate_spec(spec: JobSpec) -> None:
    """Refuse any value that cannot be written safely or that PBS would misread."""
    check_strings_and_names(spec)
    _match(_NAME, spec.name, "spec.name", "letters, digits and _.+- only")
    if len(spec.name) > MAX_NAME:
        raise ValidationError(f"spec.name is longer than PBS's {MAX_NAME} characters")
    _match(_PATH, spec.job_dir, "spec.job_dir", "an absolute path of letters, digits and "
           "_./+@%=- (PBS reads -o/-e paths itself)")
    check_shape(spec)
    for field in ("partition", "account", "wckey", "gpu_type"):
        value = getattr(spec, field)
        if value is not None:
            _match(_PLAIN, value, f"spec.{field}", "letters, digits and _.@+- only")
    if spec.comment is not None:
        _match(_TAG, spec.comment, "spec.comment", "letters, digits and _.:@/+- only (qsub "
               "-v splits values at commas)")
    for field in ("qos", "exclude"):
        if getattr(spec, field):
            raise ValidationError(f"spec.{field} has no PBS equivalent; leave it unset")
    _check_nice(spec)
    if spec.launcher not in ("default", "mpiexec"):
        raise ValidationError(f"spec.launcher {spec.launcher!r}: the PBS backend starts ranks "
                              "with mpiexec ('default' or 'mpiexec')")
    walltime(spec.time_limit)


def _match(pattern: re.Pattern[str], value: str, where: str, expected: str) -> None:
    if not pattern.match(value):
        raise ValidationError(f"{where} must be {expected}: {value!r}")


def _check_nice(spec: JobSpec) -> None:
    if spec.nice is not None and (isinstance(spec.nice, bool) or not isinstance(spec.nice, int)):
        raise ValidationError(f"spec.nice must be an integer, not {spec.nice!r}")


def walltime(time_limit: str | None) -> str | None:
    """Slurm-style ``[D-]HH:MM:SS``, ``MM:SS`` or ``MM`` as PBS's ``HH:MM:SS``."""
    if time_limit is None:
        return None
    match = _TIME.match(time_limit.strip())
    if match is None:
        raise ValidationError(f"spec.time_limit must be [D-]HH:MM:SS, MM:SS or minutes: "
                              f"{time_limit!r}")
    days, *rest = match.groups()
    parts = [int(part) for part in rest if part is not None]
    if days is not None:
        hours, minutes, seconds = (parts + [0, 0])[:3]  # D-HH[:MM[:SS]]
    else:
        hours, minutes, seconds = ([0, 0] + parts)[-3:] if len(parts) > 1 else (0, parts[0], 0)
    total = ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds
    return f"{total // 3600:02d}:{total // 60 % 60:02d}:{total % 60:02d}"


def priority(nice: int | None) -> int | None:
    """hpcdet's nice (larger runs later) as PBS's ``-p`` (larger runs sooner).

    PBS has 2048 priorities, hpcdet's nice runs to millions (``nice_step`` 100 per point of
    ``resources.priority``: 42 is nice 4150, 80 is 7950). A plain clamp made every nice past
    1024 the same ``-p -1024``, so priorities 42 and 80 waited in submission order. Nice up
    to ``NICE_LINEAR`` maps one to one (``-p`` = -nice, as ``det job update`` sets it); a
    larger nice is squeezed into the rest of the range, still strictly ordered for every
    step of 100 (:func:`nice_of` is the inverse).
    """
    if nice is None:
        return None
    if nice <= NICE_LINEAR:
        return min(PRIORITY_MAX, -nice)
    beyond = nice - NICE_LINEAR
    room = -PRIORITY_MIN - NICE_LINEAR
    return -(NICE_LINEAR + math.ceil(room * beyond / (beyond + NICE_SQUEEZE)))


def nice_of(pbs_priority: int) -> int:
    """The smallest nice whose :func:`priority` is ``pbs_priority`` (clamped to PBS's range)."""
    target = -max(PRIORITY_MIN, min(PRIORITY_MAX, pbs_priority))
    if target <= NICE_LINEAR:
        return target
    room, step = -PRIORITY_MIN - NICE_LINEAR, target - NICE_LINEAR
    if step >= room:
        return NICE_LINEAR + room * NICE_SQUEEZE
    return NICE_LINEAR + NICE_SQUEEZE * step // (room - step)


def select(spec: JobSpec, gpu_type_resource: str, ask_for_gpus: bool = True) -> str:
    """``<nodes>:ncpus=..:mpiprocs=..[:ngpus=..][:<gpu_type_resource>=..]``."""
    chunk = [str(spec.nodes), f"ncpus={spec.ranks_per_node * spec.cpus_per_rank}",
             f"mpiprocs={spec.ranks_per_node}"]
    if spec.gpus_per_node and ask_for_gpus:
        chunk.append(f"ngpus={spec.gpus_per_node}")
        if spec.gpu_type:
            chunk.append(f"{gpu_type_resource}={spec.gpu_type}")
    return ":".join(chunk)


def directives(spec: JobSpec, gpu_type_resource: str, ask_for_gpus: bool = True) -> list[str]:
    """The ``#PBS`` lines hpcdet controls (values already validated: never quoted)."""
    logs = spec.job_dir.rstrip("/") + "/"
    lines = [f"-N {spec.name}", f"-l select={select(spec, gpu_type_resource, ask_for_gpus)}",
             f"-l place={'scatter' if spec.nodes > 1 else 'pack'}"]
    limit = walltime(spec.time_limit)
    optional = [("-l walltime=", limit), ("-q ", spec.partition), ("-A ", spec.account),
                ("-P ", spec.wckey), ("-p ", priority(spec.nice)),
                (f"-v {TAG_VARIABLE}=", spec.comment)]
    lines += [f"{flag}{value}" for flag, value in optional if value is not None]
    lines += ["-j n", "-k oed", f"-o {logs}", f"-e {logs}", f"-r {'y' if spec.requeue else 'n'}",
              "-W umask=077"]
    return [f"#PBS {line}" for line in lines]


def template_context(spec: JobSpec, *, rsh_agent: str, gpu_type_resource: str,
                     ask_for_gpus: bool = True) -> dict[str, object]:
    """Everything ``pbs_job.sh.j2`` interpolates; ``spec`` must be validated."""
    context_dir = posixpath.join(spec.job_dir, "context")
    user_args = parse_qsub_args(spec.sbatch_args, path="spec.sbatch_args")
    wrapper = (posixpath.join(spec.job_dir, ".pbs-rsh-agent")
               if posixpath.basename(rsh_agent) == "pbs_tmrsh" else None)
    return {
        "directives": "\n".join(directives(spec, gpu_type_resource, ask_for_gpus)),
        "user_directives": render_qsub_args(user_args),
        "exit_file_prefix": posixpath.join(spec.job_dir, "exit-"),
        "qstat": qstat_path(rsh_agent),
        "environment": list(spec.environment.items()),
        "context_dir": context_dir,
        "rsh_wrapper": wrapper,
        "rsh_wrapper_lines": rsh_wrapper_lines(rsh_agent) if wrapper else [],
        "mpiexec_options": mpiexec_options(spec, wrapper or rsh_agent,
                                           attached=wrapper is not None),
        "launch_lines": launch_lines(effective_container(spec), spec.command,
                                     cwd=context_dir),
        "needs_user": spec.container.run_type in USER_RUNTIMES,
        "create_dirs": directories_to_create(effective_container(spec)),
    }


def qstat_path(rsh_agent: str) -> str:
    """The ``qstat`` a job runs for its ``run_count``: beside ``pbs_tmrsh`` (PBS's own bin
    directory on the execution hosts), else the one on the job's ``PATH``."""
    if posixpath.basename(rsh_agent) == "pbs_tmrsh" and posixpath.isabs(rsh_agent):
        return posixpath.join(posixpath.dirname(rsh_agent), "qstat")
    return "qstat"


def rsh_wrapper_lines(agent: str) -> list[str]:
    """The agent script OpenMPI starts its daemons with, around ``pbs_tmrsh``.

    pbs_tmrsh runs one program with its arguments, not the shell string an rsh agent gets,
    hence ``sh -c "$*"``. Each daemon gets its own ``$TMPDIR/hpcdet-<host>``: where hosts
    share a temporary directory (the dev server's moms are one machine) OpenMPI's session
    directories collided ("mkdir ... File exists") and mpiexec hung.
    """
    inner = ('TMPDIR="${TMPDIR:-/tmp}/hpcdet-$0"; export TMPDIR; mkdir -p "$TMPDIR" || exit; '
             'exec "$@"')
    return ["#!/bin/sh", "host=$1; shift",
            f'exec {shlex.quote(agent)} "$host" /bin/sh -c {shlex.quote(inner)} "$host" '
            '/bin/sh -c "$*"']


def mpiexec_options(spec: JobSpec, agent: str, *, attached: bool) -> list[str]:
    """OpenMPI's ``mpiexec`` options: one rank per slot of ``$PBS_NODEFILE``.

    Every daemon starts from the first host (``plm_rsh_no_tree_spawn``): only there is the
    agent script. ``attached`` (pbs_tmrsh): the daemons stay attached to their pbs_tmrsh
    (``--leave-session-attached``), so each is a task PBS tracks, signals and cleans up;
    measured on the dev server, 10 of 10 launches worked so, 4 of 10 with daemons that
    detach. ``-x`` passes the job's variables to ranks on the other hosts, whose
    environment the sister mom builds.
    """
    names = [*spec.environment, "PBS_JOBID", "PBS_NODEFILE", "HPCDET_RESTART_COUNT"]
    if spec.container.run_type == "charliecloud":
        names.append("USER")  # ch-run refuses to start without it (the template sets it)
    if spec.comment is not None:
        names.append(TAG_VARIABLE)
    # The template adds --hostfile "$PBS_NODEFILE" (a variable the shell must expand).
    options = ["-n", str(spec.nodes * spec.ranks_per_node), "--map-by",
               f"ppr:{spec.ranks_per_node}:node", "--bind-to", "none",
               "--mca", "plm_rsh_agent", agent, "--mca", "plm_rsh_no_tree_spawn", "1"]
    if attached:
        options.append("--leave-session-attached")
    for name in dict.fromkeys(names):
        options += ["-x", name]
    return options


def effective_container(spec: JobSpec) -> ContainerSpec:
    """The container with the job directory bound in and the job's variables passed on."""
    return with_job_dir(spec.container, spec.job_dir, list(spec.environment))
