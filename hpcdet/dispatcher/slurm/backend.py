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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from hpcdet.dispatcher.base import (
    ArrayLimits,
    ArraySpec,
    ContainerSpec,
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
from hpcdet.dispatcher.render import DirectiveValue, render_directives
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.script_backend import ScriptBackend, last_line
from hpcdet.dispatcher.slurm import JOB_LOG_STEM, PLUGIN, arrays
from hpcdet.dispatcher.slurm.cluster import SlurmClusterMixin
from hpcdet.dispatcher.slurm.config import SlurmConfig, read_config
from hpcdet.dispatcher.slurm.sbatch_args import SbatchArg, parse_sbatch_args, render_parsed
from hpcdet.dispatcher.slurm.status import (
    SLURM_APIS,
    CliStatusReader,
    SlurmCommands,
    StatusReader,
)
from hpcdet.dispatcher.slurm.task import gpu_options
from hpcdet.dispatcher.spec_values import check_shape, check_strings_and_names
from hpcdet.dispatcher.transport import Transport
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
_SQUEUE_NAMES_FORMAT = "JobArrayID:|,Name:|"
_SACCT_NAMES_FORMAT = "JobID,JobName"
# How far back sacct looks for a job by name (its default is since midnight).
_FIND_WINDOW = "now-7days"


class SlurmBackend(SlurmClusterMixin, ScriptBackend):
    """Runs trials as Slurm batch jobs; see the module docstring for what it assumes."""

    name = "slurm"
    # What scancel/squeue print for ids Slurm has already forgotten or finished.
    already_gone = ("Invalid job id specified", "already completing or completed")

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
        slurm_api: str = "cli",
    ) -> None:
        self._connect(runner=runner, transport=transport, runas=runas,
                      template_dir=template_dir, template_name=template_name)
        self.sbatch, self.squeue, self.sacct, self.scancel = sbatch, squeue, sacct, scancel
        self.sinfo, self.scontrol = sinfo, scontrol
        if gpu_request not in GPU_REQUESTS:
            raise ValueError(f"gpu_request must be one of {GPU_REQUESTS}, not {gpu_request!r}")
        # How this cluster takes a GPU request: TRES (--gpus), GRES only, or not at all.
        self.gpu_request = gpu_request
        self._config: SlurmConfig | None = None  # read once (cluster_config)
        # Where poll's statuses come from: the text commands, or pyslurm (.status).
        self.status_reader = make_status_reader(slurm_api, self)

    def render(self, spec: JobSpec) -> Submission:
        """Validate every value of ``spec`` and render the script; no side effects."""
        validate_spec(spec)
        template = self._templates.get_template(self.template_name)
        script = template.render(**_template_context(spec, self.gpu_request))
        return self.script_submission(spec.job_dir, spec.script_name, script, spec.owner)

    def _submit_argv(self, script_path: str) -> tuple[str, ...]:
        return (self.sbatch, "--parsable", script_path)

    def _parse_submit_output(self, argv: Sequence[str], stdout: str) -> str:
        return parse_sbatch_output(argv, stdout)

    def _helper_submit_args(self, submission: Submission) -> tuple[tuple[str, ...],
                                                                   tuple[str, ...]]:
        return helper_submit_args(submission)

    def with_expedited_requeue(self, spec: JobSpec) -> JobSpec:
        """``spec`` asking for an expedited requeue where it is requeueable and the cluster
        allows one (:attr:`SlurmConfig.expedited_requeue`: one ``scontrol show config``,
        read once); plain ``--requeue`` elsewhere."""
        expedite = spec.requeue and self.cluster_config().expedited_requeue
        return replace(spec, expedited_requeue=expedite)

    def cluster_config(self) -> SlurmConfig:
        """What the controller says it is (release, limits, parameters): one ``scontrol show
        config``, read once."""
        if self._config is None:
            self._config = read_config(self.runner, self.scontrol)
        return self._config

    def _read_array_limits(self) -> ArrayLimits:
        """``MaxArraySize`` and ``MaxJobCount`` of :meth:`cluster_config`."""
        return self.cluster_config().array_limits

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
        self._refuse_array_as_owner(submission)
        arrays.write_index(array, self.transport)
        return self.submit(submission)

    array_task_id = staticmethod(arrays.task_id)
    array_entry = staticmethod(arrays.array_entry)
    array_pending_task_ids = staticmethod(arrays.pending_task_ids)

    @staticmethod
    def array_task_prefix(array_id: str) -> str:
        return f"{array_id}_"

    def check_job_id(self, job_id: str) -> str:
        return _checked_id(job_id)

    def _statuses(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """The queue (one ``squeue``, or pyslurm's job table), then accounting (at most one
        ``sacct``): :func:`with_accounting`. Poll reads exit files for jobs neither knows."""
        return with_accounting(self.status_reader.in_queue(job_ids), job_ids,
                               self.status_reader.in_accounting)

    def startup_problem(self) -> str | None:
        return self.status_reader.problem()

    def _cancel_argv(self, job_ids: Sequence[str]) -> tuple[str, ...]:
        """``scancel`` all of ``job_ids`` at once (jobs already gone are not an error)."""
        return (self.scancel, *job_ids)

    def _find_names(self, names: Sequence[str]) -> dict[str, str]:
        """One ``squeue --name``, then one ``sacct --name`` (last 7 days) for the rest."""
        found = self._find_in_queue(names)
        missing = [name for name in names if name not in found]
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
        "signal": spec.signal, "requeue": _requeue(spec), "no-requeue": not spec.requeue,
        "time": spec.time_limit, "account": spec.account, "qos": spec.qos,
        "wckey": spec.wckey, "comment": spec.comment, "nice": spec.nice,
        "exclude": spec.exclude,
    }  # fmt: skip
    return {**directives, **gpu_directives(spec, gpu_request)}


def _requeue(spec: JobSpec) -> DirectiveValue:
    """``--requeue``, or ``--requeue=expedite`` where the submitter found the cluster allows
    it (:meth:`SlurmBackend.with_expedited_requeue`); none for a job that is not requeueable."""
    if not spec.requeue:
        return False
    return "expedite" if spec.expedited_requeue else True


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


def helper_submit_args(submission: Submission) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The options and the script's arguments of ``sbatch --parsable [options] SCRIPT
    [args]`` (``submission.argv``), for the run-as helper's ``submit``."""
    argv = list(submission.argv)
    if submission.script_path not in argv:
        raise ValidationError(f"the submit command does not name {submission.script_path}")
    at = argv.index(submission.script_path)
    options = tuple(word for word in argv[1:at] if word != "--parsable")
    return options, tuple(argv[at + 1:])


def parse_sbatch_output(argv: Sequence[str], stdout: str) -> str:
    """The job id from ``sbatch --parsable`` output: ``12345`` or ``12345;cluster``."""
    line = last_line(stdout)
    match = _SBATCH_PARSABLE.match(line) if line is not None else None
    if match is None:
        raise UnparseableOutputError(argv, stdout, "'<jobid>' or '<jobid>;<cluster>'")
    return match.group(1)


# ---- polling -----------------------------------------------------------------------------


def _checked_id(job_id: str) -> str:
    # Ids reach argv and a file name: refuse anything but digits, "_" and "+".
    if not _JOB_ID.match(job_id):
        raise ValidationError(f"invalid Slurm job id {job_id!r}")
    return job_id


def _newest_by_name(stdout: str, names: Sequence[str], *, sep: str) -> dict[str, str]:
    """:func:`newest_by_name` of ``id<sep>name`` lines."""
    lines = (line.strip().rstrip(sep).partition(sep) for line in stdout.splitlines())
    return newest_by_name(((job_id, name) for job_id, _, name in lines), names)


def newest_by_name(jobs: Iterable[tuple[str, str]], names: Sequence[str]) -> dict[str, str]:
    """``{name: highest job id}`` over ``(job id, name)`` pairs, for the wanted ``names``; an
    array's task (``12_3``, ``12_[4-9]``) counts as its array's id (``12``); het components
    (``12+0``) are skipped."""
    found: dict[str, str] = {}
    wanted = set(names)
    for job_id, name in jobs:
        base = job_id.partition("_")[0]
        if name in wanted and base.isdigit() and int(base) > int(found.get(name, "0")):
            found[name] = base
    return found


def make_status_reader(api: str, commands: SlurmCommands) -> StatusReader:
    """The reader ``api`` names (:data:`SLURM_APIS`); pyslurm is imported only for it
    (and apart from :mod:`.status`, which it imports)."""
    cli = CliStatusReader(commands)
    if api == "cli":
        return cli
    if api == "pyslurm":
        from hpcdet.dispatcher.slurm.pyslurm_status import PyslurmStatusReader

        # Accounting stays sacct's: pyslurm.db folds exit codes above 128 (docs/admin/slurm.md).
        return PyslurmStatusReader(accounting=cli.in_accounting, commands=commands)
    raise ValueError(f"slurm_api must be one of {SLURM_APIS}, not {api!r}")


def with_accounting(found: dict[str, JobStatus], job_ids: Sequence[str],
                    accounting: Callable[[list[str]], dict[str, JobStatus]]
                    ) -> dict[str, JobStatus]:
    """``found`` (what the controller knows) completed by ONE accounting read: the jobs it
    forgot, and the jobs it shows ``CANCELLED``, since only accounting says who cancelled a
    job (``CANCELLED by <uid>``, the failure summary's "cancelled by <user>"), kept as the
    native state when it says so. The CLI's, pyslurm's and slurmrestd's readers share it."""
    unknown = [job_id for job_id in job_ids if job_id not in found]
    cancelled = [job_id for job_id, status in found.items() if status.native_state == "CANCELLED"]
    if not unknown and not cancelled:
        return found
    accounted = accounting([*unknown, *cancelled])
    found.update({job_id: accounted[job_id] for job_id in unknown if job_id in accounted})
    for job_id in cancelled:
        who = accounted.get(job_id)
        if who is not None and who.native_state.startswith("CANCELLED by "):
            found[job_id] = replace(found[job_id], native_state=who.native_state)
    return found
