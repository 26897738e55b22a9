"""The Slurm backend: render an sbatch script, submit it, poll many jobs, cancel.

Environment assumptions:

* The Slurm client commands (``sbatch``, ``squeue``, ``sacct``, ``scancel``) are on the
  ``PATH`` of the process using this backend, and ``SLURM_CONF`` points at the cluster's
  ``slurm.conf`` unless it is in the default place. Commands inherit the environment
  unchanged (see :mod:`hpcdet.dispatcher.commands`).
* Job directories are on a filesystem shared by this host and the compute nodes: the
  script, its logs and its exit file live there.
* Job accounting (``slurmdbd``) is *optional*. ``squeue`` answers for jobs Slurm still
  holds (running, queued, and finished within ``MinJobAge``); ``sacct`` for older ones;
  without accounting, the exit file the job script writes (``<job_dir>/exit-<jobid>``)
  says whether a finished job succeeded.
* Output formats are those of Slurm 22.05 (Debian bookworm's); only machine formats are
  parsed: ``sbatch --parsable``, ``squeue --noheader --format``, ``sacct --parsable2``.
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from hpcdet.dispatcher.base import (
    ArrayLimits,
    ArraySpec,
    Backend,
    ContainerSpec,
    JobRef,
    JobSpec,
    JobStatus,
    Submission,
)
from hpcdet.dispatcher.commands import Runner, UnparseableOutputError
from hpcdet.dispatcher.containers import (
    USER_RUNTIMES,
    directories_to_create,
    launch_lines,
    with_job_dir,
)
from hpcdet.dispatcher.jobdir import tar_of
from hpcdet.dispatcher.render import DirectiveValue, make_environment, render_directives
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.slurm import JOB_LOG_STEM, PLUGIN, arrays
from hpcdet.dispatcher.slurm.cluster import SlurmClusterMixin
from hpcdet.dispatcher.slurm.sbatch_args import SbatchArg, parse_sbatch_args, render_parsed
from hpcdet.dispatcher.slurm.states import phase_of
from hpcdet.dispatcher.slurm.task import gpu_options
from hpcdet.dispatcher.spec_values import (
    check_shape,
    check_strings_and_names,
    read_exit_file,
    status_from_exit_file,
)
from hpcdet.dispatcher.transport import LocalTransport, Transport
from hpcdet.errors import SchedulerError, ValidationError

logger = logging.getLogger(__name__)

TEMPLATE_NAME = "slurm_job.sh.j2"


# Job ids as Slurm prints them: plain, array task (123_4), het component (123+0).
_JOB_ID = PLUGIN.job_id_pattern
_SBATCH_PARSABLE = re.compile(r"^(\d+)(?:;\S+)?$")
# A GRES type is written into --gpus/--gres, where ":" and "," have meanings.
_GPU_TYPE = re.compile(r"^[A-Za-z0-9_.-]+$")
GPU_REQUESTS = ("tres", "gres", "none")
# How ranks start: srun (the default), srun with Slurm's PMIx plugin, or the MPI library's
# own mpiexec inside the allocation (see _launcher_argv).
LAUNCHERS = ("default", "srun", "srun-pmix", "mpiexec")
# Container runtimes that build the rank's environment from named variables only.
_ENV_BUILDING_RUNTIMES = ("enroot", "podman")
# What scancel/squeue print for ids Slurm has already forgotten or finished.
_ALREADY_GONE = ("Invalid job id specified", "already completing or completed")
# --Format with "|" after each field (no padding); the reason last, as the only field
# that could hold a "|".
# JobArrayID: an array task as <array id>_<index> (JobID would print its raw id), a plain
# job as its id.
_SQUEUE_FORMAT = "JobArrayID:|,State:|,RestartCnt:|,NodeList:|,Reason:|"
_SQUEUE_NAMES_FORMAT = "JobArrayID:|,Name:|"
_SACCT_NAMES_FORMAT = "JobID,JobName"
# How far back sacct looks for a job by name (its default is since midnight).
_FIND_WINDOW = "now-7days"
_SACCT_FORMAT = "JobID,JobIDRaw,State,ExitCode,NodeList,Reason"

# Parses one output line into (id, status) pairs, or None for a line it cannot read.
_LineParser = Callable[[str], "list[tuple[str, JobStatus]] | None"]


class SlurmBackend(SlurmClusterMixin, Backend):
    """Runs trials as Slurm batch jobs; see the module docstring for what it assumes."""

    name = "slurm"

    def __init__(
        self,
        *,
        runner: Runner | None = None,
        template_dir: str | None = None,
        template_name: str = TEMPLATE_NAME,
        sbatch: str = "sbatch",
        squeue: str = "squeue",
        sacct: str = "sacct",
        scancel: str = "scancel",
        sinfo: str = "sinfo",
        scontrol: str = "scontrol",
        runas: RunAs | None = None,
        transport: Transport | None = None,
        gpu_request: str = "tres",
    ) -> None:
        # Job files go through the transport; commands through its runner (or ``runner``).
        self.transport: Transport = transport if transport is not None else LocalTransport()
        self.runner: Runner = runner if runner is not None else self.transport.runner
        # Set in run-as-owner mode: jobs with an owner are submitted/cancelled through it.
        self.runas = runas
        self.template_name = template_name
        self.sbatch, self.squeue, self.sacct, self.scancel = sbatch, squeue, sacct, scancel
        self.sinfo, self.scontrol = sinfo, scontrol
        self._templates = make_environment(template_dir)
        if gpu_request not in GPU_REQUESTS:
            raise ValueError(f"gpu_request must be one of {GPU_REQUESTS}, not {gpu_request!r}")
        # How this cluster takes a GPU request: TRES (--gpus), GRES only, or not at all.
        self.gpu_request = gpu_request
        self._array_limits: ArrayLimits | None = None  # read once (array_limits)

    def render(self, spec: JobSpec) -> Submission:
        """Validate every value of ``spec`` and render the script; no side effects."""
        validate_spec(spec)
        template = self._templates.get_template(self.template_name)
        script = template.render(**_template_context(spec, self.gpu_request))
        script_path = posixpath.join(spec.job_dir, spec.script_name)
        return Submission(script, script_path, (self.sbatch, "--parsable", script_path),
                          owner=spec.owner)

    def submit(self, submission: Submission) -> str:
        """Write the script (mode 0700, atomically) and ``sbatch`` it; return the job id.

        With an owner and a run-as helper, the helper writes the script (0700, the owner's)
        and submits it as the owner.
        """
        if self.runas is not None and submission.owner:
            return submit_as(self.runas, submission.owner, submission)
        write_script(submission.script_path, submission.script, self.transport)
        stdout = self.runner(submission.argv)
        return parse_sbatch_output(submission.argv, stdout)

    def array_limits(self) -> ArrayLimits:
        """``MaxArraySize`` and ``MaxJobCount``: one ``scontrol show config``, then cached."""
        if self._array_limits is None:
            self._array_limits = arrays.read_array_limits(self.runner, self.scontrol)
        return self._array_limits

    def render_array(self, spec: JobSpec, array: ArraySpec) -> Submission:
        """The array's script: ``spec``'s options (one of its trials'), ``array``'s tasks."""
        validate_spec(spec)
        user_args = parse_sbatch_args(spec.sbatch_args, path="spec.sbatch_args")
        template = self._templates.get_template(arrays.ARRAY_TEMPLATE_NAME)
        return arrays.render_array(spec, array, sbatch=self.sbatch,
                                   directives=_directives(spec, user_args, self.gpu_request),
                                   user_directives=render_parsed(user_args),
                                   render=template.render)

    def submit_array(self, submission: Submission, array: ArraySpec) -> str:
        """Write the index file and the array's script, then one ``sbatch``.

        Not in run-as-owner mode: the master batches trials only where it writes the files.
        """
        if self.runas is not None and submission.owner:
            raise ValidationError("job arrays are not submitted in run-as-owner mode")
        arrays.write_index(array, self.transport)
        return self.submit(submission)

    @staticmethod
    def array_task_id(array_id: str, index: int) -> str:
        return arrays.task_id(array_id, index)

    @staticmethod
    def array_entry(job_id: str) -> tuple[str, int] | None:
        return arrays.array_entry(job_id)

    @staticmethod
    def array_pending_task_ids(job_id: str) -> list[str]:
        return arrays.pending_task_ids(job_id)

    @staticmethod
    def array_task_prefix(array_id: str) -> str:
        return f"{array_id}_"

    def check_job_id(self, job_id: str) -> str:
        return _checked_id(job_id)

    def poll(self, jobs: Sequence[JobRef]) -> dict[str, JobStatus]:
        """One ``squeue``, then at most one ``sacct`` for the rest, then exit files."""
        if not jobs:
            return {}
        ids = list(dict.fromkeys(_checked_id(job.job_id) for job in jobs))
        found = self._squeue(ids)
        unknown = [job_id for job_id in ids if job_id not in found]
        if unknown:
            found.update(self._sacct(unknown))
        return {job.job_id: _resolve(found.get(job.job_id), job, self.transport)
                for job in jobs}

    def cancel(self, job_ids: Sequence[str], owner: str | None = None) -> None:
        """``scancel`` all of ``job_ids`` at once; jobs already gone are not an error."""
        if not job_ids:
            return
        ids = tuple(dict.fromkeys(_checked_id(job_id) for job_id in job_ids))
        try:
            if self.runas is not None and owner:
                self.runas.cancel(owner, ids)
            else:
                self.runner((self.scancel, *ids))
        except SchedulerError as exc:
            if not _only_already_gone(exc.stderr):
                raise

    def find(self, names: Sequence[str]) -> dict[str, str]:
        """One ``squeue --name``, then one ``sacct --name`` (last 7 days) for the rest."""
        wanted = list(dict.fromkeys(names))
        for name in wanted:
            check_safe(name, "job name")
        if not wanted:
            return {}
        found = self._find_in_queue(wanted)
        missing = [name for name in wanted if name not in found]
        if missing:
            found.update(self._find_in_accounting(missing))
        return found

    def _find_in_queue(self, names: Sequence[str]) -> dict[str, str]:
        argv = (self.squeue, "--noheader", "--states=all", f"--name={','.join(names)}",
                f"--Format={_SQUEUE_NAMES_FORMAT}")  # fmt: skip
        return _newest_by_name(self.runner(argv), names, sep="|")

    def _find_in_accounting(self, names: Sequence[str]) -> dict[str, str]:
        argv = (self.sacct, "--noheader", "--parsable2", "-X", f"--name={','.join(names)}",
                f"--starttime={_FIND_WINDOW}", f"--format={_SACCT_NAMES_FORMAT}")  # fmt: skip
        try:
            return _newest_by_name(self.runner(argv), names, sep="|")
        except SchedulerError as exc:
            logger.info("sacct unavailable; only squeue was searched: %s", exc)
            return {}

    def _squeue(self, ids: Sequence[str]) -> dict[str, JobStatus]:
        # --array: one line per array task (pending tasks otherwise share one line).
        argv = (self.squeue, "--noheader", "--states=all", f"--jobs={','.join(ids)}",
                f"--Format={_SQUEUE_FORMAT}", "--array")  # fmt: skip
        try:
            stdout = self.runner(argv)
        except SchedulerError as exc:
            # When it knows none of the ids, squeue fails instead of printing nothing.
            if _only_already_gone(exc.stderr):
                return {}
            raise
        return _rows(stdout, _parse_squeue_line, set(ids))

    def _sacct(self, ids: Sequence[str]) -> dict[str, JobStatus]:
        argv = (self.sacct, "--noheader", "--parsable2", "-X", f"--jobs={','.join(ids)}",
                f"--format={_SACCT_FORMAT}")  # fmt: skip
        try:
            stdout = self.runner(argv)
        except SchedulerError as exc:
            # Accounting is optional (e.g. "Slurm accounting storage is disabled").
            logger.info("sacct unavailable, falling back to exit files: %s", exc)
            return {}
        return _rows(stdout, _parse_sacct_line, set(ids))

    def node_hosts(self, nodes: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """One ``scontrol show node``: each node's name, NodeHostName and NodeAddr."""
        wanted = [check_safe(node, "node name") for node in nodes]
        if not wanted:
            return {}
        stdout = self.runner((self.scontrol, "--oneliner", "show", "node", ",".join(wanted)))
        return parse_node_hosts(stdout)


def parse_node_hosts(stdout: str) -> dict[str, tuple[str, ...]]:
    """``{NodeName: (NodeName, NodeHostName, NodeAddr)}`` from ``scontrol -o show node``."""
    found: dict[str, tuple[str, ...]] = {}
    for line in stdout.splitlines():
        fields = dict(word.split("=", 1) for word in line.split() if "=" in word)
        name = fields.get("NodeName")
        if name:
            names = (name, fields.get("NodeHostName", ""), fields.get("NodeAddr", ""))
            found[name] = tuple(dict.fromkeys(n for n in names if n))
    return found


BACKEND = SlurmBackend


# ---- rendering ---------------------------------------------------------------------------


def validate_spec(spec: JobSpec) -> None:
    """Refuse any value that cannot be written safely or that Slurm would misread."""
    check_strings_and_names(spec)
    if not spec.name:
        raise ValidationError("spec.name must not be empty")
    if not posixpath.isabs(spec.job_dir):
        raise ValidationError(f"spec.job_dir must be an absolute path: {spec.job_dir!r}")
    if "\\" in spec.job_dir:
        # A backslash in --output/--error turns off Slurm's %j expansion and is dropped.
        raise ValidationError(f"spec.job_dir must not contain a backslash: {spec.job_dir!r}")
    check_shape(spec)
    _check_gpu_type_and_launcher(spec)


def _check_gpu_type_and_launcher(spec: JobSpec) -> None:
    if spec.gpu_type is not None and not _GPU_TYPE.match(spec.gpu_type):
        raise ValidationError(f"spec.gpu_type {spec.gpu_type!r} is not a GPU type name "
                              "(letters, digits, '.', '_', '-')")
    if spec.launcher not in LAUNCHERS:
        raise ValidationError(f"spec.launcher must be one of {LAUNCHERS}, not {spec.launcher!r}")
    if spec.launcher == "mpiexec" and spec.container.run_type in _ENV_BUILDING_RUNTIMES:
        # These runtimes pass only named Slurm variables into the container, so a rank would
        # read the Slurm task of mpiexec's daemon (one per node) as its own rank.
        raise ValidationError(f"launcher mpiexec cannot start ranks in a "
                              f"{spec.container.run_type} container (use srun)")


def _template_context(spec: JobSpec, gpu_request: str) -> dict[str, object]:
    context_dir = posixpath.join(spec.job_dir, "context")
    container = _effective_container(spec)
    user_args = parse_sbatch_args(spec.sbatch_args, path="spec.sbatch_args")
    return {
        "directives": render_directives("#SBATCH", _directives(spec, user_args, gpu_request)),
        "user_directives": render_parsed(user_args),
        "exit_file_prefix": posixpath.join(spec.job_dir, "exit-"),
        "environment": list(spec.environment.items()),
        "context_dir": context_dir,
        "launcher": _launcher_argv(spec),
        "launch_lines": launch_lines(container, spec.command, cwd=context_dir),
        "needs_user": container.run_type in USER_RUNTIMES,
        "create_dirs": directories_to_create(container),
    }


def _directives(spec: JobSpec, user_args: Sequence[SbatchArg],
                gpu_request: str) -> dict[str, DirectiveValue]:
    """The ``#SBATCH`` options hpcdet controls, with the GPU request this cluster takes.

    ``user_args``: ``spec.sbatch_args`` parsed, which some of these options give way to.
    """
    # "%" starts a Slurm filename pattern in --output/--error; "%%" is a literal "%".
    logs = spec.job_dir.replace("%", "%%")
    # For srun the allocation holds one task per node with the CPUs of all its ranks; the
    # srun step then starts one rank per slot in it (see JobSpec). mpiexec takes its slots
    # from the allocation's tasks (SLURM_TASKS_PER_NODE), so there each rank is a task.
    per_node: int | None = 1
    cpus: int | None = spec.ranks_per_node * spec.cpus_per_rank
    if spec.launcher == "mpiexec":
        per_node, cpus = spec.ranks_per_node, spec.cpus_per_rank
    if any(arg.option == "--cpus-per-gpu" for arg in user_args):
        cpus = None  # sbatch refuses --cpus-per-task together with the user's --cpus-per-gpu
    directives: dict[str, DirectiveValue] = {
        "job-name": spec.name, "chdir": spec.job_dir, "partition": spec.partition,
        "nodes": spec.nodes, "ntasks-per-node": per_node, "cpus-per-task": cpus,
        "output": f"{logs}/{JOB_LOG_STEM}.out", "error": f"{logs}/{JOB_LOG_STEM}.err",
        # A requeued job keeps its id and so its files: append, or Slurm truncates what the
        # master already read (and the logs of the earlier run are lost).
        "open-mode": "append",
        "signal": spec.signal, "requeue": spec.requeue, "no-requeue": not spec.requeue,
        "time": spec.time_limit, "account": spec.account, "qos": spec.qos,
        "wckey": spec.wckey, "comment": spec.comment, "nice": spec.nice,
        "exclude": spec.exclude,
    }  # fmt: skip
    return {**directives, **gpu_directives(spec, gpu_request)}


def gpu_directives(spec: JobSpec, gpu_request: str) -> dict[str, DirectiveValue]:
    """Determined's slots as Slurm GPUs (:func:`hpcdet.dispatcher.slurm.task.gpu_options`)."""
    return dict(gpu_options(spec.nodes, spec.gpus_per_node, spec.gpu_type, gpu_request))


def _launcher_argv(spec: JobSpec) -> list[str]:
    """The command that starts one rank per slot; the container's argv follows it.

    ``mpiexec`` (Open MPI's, measured with Debian's 4.1.4) finds the allocation through
    Slurm's variables and starts its daemons with ``srun``; ``--bind-to none`` leaves CPU
    placement to Slurm, as srun does. Ranks inherit the script's environment.
    """
    if spec.launcher == "mpiexec":
        return ["mpiexec", "-n", str(spec.nodes * spec.ranks_per_node),
                "--map-by", f"ppr:{spec.ranks_per_node}:node", "--bind-to", "none"]
    pmix = ["--mpi=pmix"] if spec.launcher == "srun-pmix" else []
    return ["srun", *pmix, *_srun_options(spec)]


def _srun_options(spec: JobSpec) -> list[str]:
    # --export=ALL so that a user's "--export=NONE" for sbatch cannot strip DET_* from ranks.
    options = ["--kill-on-bad-exit=1", "--label", "--export=ALL", f"--nodes={spec.nodes}",
               f"--ntasks={spec.nodes * spec.ranks_per_node}",
               f"--ntasks-per-node={spec.ranks_per_node}",
               # Since 22.05 srun no longer inherits sbatch's --cpus-per-task: pass it again.
               f"--cpus-per-task={spec.cpus_per_rank}"]  # fmt: skip
    return options


def _effective_container(spec: JobSpec) -> ContainerSpec:
    """The container with the job directory bound in and the job's variables passed on
    (:func:`hpcdet.dispatcher.containers.with_job_dir`)."""
    return with_job_dir(spec.container, spec.job_dir, list(spec.environment))


# ---- submitting --------------------------------------------------------------------------


def write_script(path: str, text: str, files: Transport) -> None:
    """Write ``text`` to ``path`` with mode 0700 via a temporary file and a rename.

    Owner-only: the script holds the experiment's ``environment_variables`` (secrets).
    """
    files.write_file(path, text.encode("utf-8"), 0o700)


def submit_as(runas: RunAs, owner: str, submission: Submission) -> str:
    """Write the script into the job directory and submit it, both as ``owner``.

    ``submission.argv`` is ``sbatch --parsable [options] SCRIPT [args]``: the options and the
    script's arguments go to the helper's ``submit``, which checks them again.
    """
    job_dir, name = posixpath.split(submission.script_path)
    argv = list(submission.argv)
    if submission.script_path not in argv:
        raise ValidationError(f"the submit command does not name {submission.script_path}")
    at = argv.index(submission.script_path)
    options = [word for word in argv[1:at] if word != "--parsable"]
    args = (job_dir, name, *options, "--", *argv[at + 1:])
    runas.prepare(owner, job_dir, tar_of({name: (submission.script.encode("utf-8"), 0o700)}))
    return parse_sbatch_output(runas.argv(owner, "submit", *args),
                               runas.run(owner, "submit", *args))


def parse_sbatch_output(argv: Sequence[str], stdout: str) -> str:
    """The job id from ``sbatch --parsable`` output: ``12345`` or ``12345;cluster``."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    match = _SBATCH_PARSABLE.match(lines[-1]) if lines else None
    if match is None:
        raise UnparseableOutputError(argv, stdout, "'<jobid>' or '<jobid>;<cluster>'")
    return match.group(1)


# ---- polling -----------------------------------------------------------------------------


def _checked_id(job_id: str) -> str:
    # Ids reach argv and a file name: refuse anything but digits, "_" and "+".
    if not _JOB_ID.match(job_id):
        raise ValidationError(f"invalid Slurm job id {job_id!r}")
    return job_id


def _rows(stdout: str, parse: _LineParser, wanted: set[str]) -> dict[str, JobStatus]:
    """Parse each output line; keep the statuses of ``wanted`` ids (later lines win)."""
    found: dict[str, JobStatus] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        parsed = parse(line)
        if parsed is None:
            logger.warning("skipping an unexpected Slurm output line: %r", line)
            continue
        for key, status in parsed:
            if key in wanted:
                found[key] = replace(status, job_id=key)
    return found


def _parse_squeue_line(line: str) -> list[tuple[str, JobStatus]] | None:
    """``JobID|State|RestartCnt|NodeList|Reason|``, e.g. ``123|PENDING|0||Priority|``."""
    text = line.strip()
    fields = (text[:-1] if text.endswith("|") else text).split("|", 4)
    if len(fields) != 5 or not fields[2].strip().isdigit():
        return None
    job_id, state, restarts, nodes, reason = (field.strip() for field in fields)
    status = JobStatus(job_id, phase_of(state), state, reason=_none_if(reason, "None"),
                       nodes=nodes or None, source="squeue",
                       restarts=_finished_executions(state, int(restarts)))  # fmt: skip
    return [(job_id, status)]


def _finished_executions(state: str, restarts: int) -> int:
    """Slurm counts a requeue at once, while the ended execution may still be COMPLETING
    (its code checkpointing after SIGTERM). Count it once it is over, so that whoever
    reads the count also sees what that execution left behind (its exit reason)."""
    return restarts - 1 if state == "COMPLETING" and restarts > 0 else restarts


def _newest_by_name(stdout: str, names: Sequence[str], *, sep: str) -> dict[str, str]:
    """``{name: highest job id}`` from ``id<sep>name`` lines; an array's task (``12_3``,
    ``12_[4-9]``) counts as its array's id (``12``); het components are skipped."""
    found: dict[str, str] = {}
    wanted = set(names)
    for line in stdout.splitlines():
        job_id, _, name = line.strip().rstrip(sep).partition(sep)
        job_id = job_id.partition("_")[0]
        if name in wanted and job_id.isdigit() and int(job_id) > int(found.get(name, "0")):
            found[name] = job_id
    return found


def _parse_sacct_line(line: str) -> list[tuple[str, JobStatus]] | None:
    """``JobID|JobIDRaw|State|ExitCode|NodeList|Reason``, e.g. ``7|7|FAILED|1:0|n1|None``."""
    fields = line.strip().split("|", 5)
    if len(fields) != 6:
        return None
    job_id, raw_id, state, exit_code, nodes, reason = (field.strip() for field in fields)
    status = JobStatus(job_id, phase_of(state), state, reason=_none_if(reason, "None"),
                       exit_code=_exit_code(exit_code), nodes=_none_if(nodes, "None assigned"),
                       source="sacct")  # fmt: skip
    return [(job_id, status), (raw_id, status)]


def _exit_code(text: str) -> int | None:
    """sacct's ``rc:signal``; death by a signal reads as 128+signal, as in a shell."""
    code, _, signal = text.partition(":")
    if not code.isdigit():
        return None
    return 128 + int(signal) if signal.isdigit() and int(signal) else int(code)


def _none_if(value: str, placeholder: str) -> str | None:
    return None if value in ("", placeholder) else value


def _resolve(status: JobStatus | None, job: JobRef, files: Transport) -> JobStatus:
    """Fill in what the scheduler did not say from the job's exit file."""
    if status is None:
        return status_from_exit_file(job, files)
    if status.phase.is_terminal and status.exit_code is None:
        return replace(status, exit_code=read_exit_file(job, files))
    return status


def _only_already_gone(stderr: str) -> bool:
    """True if every error line says the job is unknown or already finished."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    return bool(lines) and all(any(m in line for m in _ALREADY_GONE) for line in lines)
