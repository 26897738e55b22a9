"""What every backend checks in a :class:`~hpcdet.dispatcher.base.JobSpec` before rendering,
and the exit file every job script writes: shared by the Slurm and PBS packages."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from hpcdet.dispatcher.base import ContainerSpec, JobPhase, JobRef, JobSpec, JobStatus
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.transport.base import Transport
from hpcdet.errors import ValidationError

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TEXT_FIELDS = ("name", "job_dir", "partition", "time_limit", "account", "qos", "wckey",
                "comment", "exclude", "signal", "script_name", "gpu_type")


def spec_strings(spec: JobSpec) -> Iterator[tuple[str, str]]:
    """Every string in ``spec`` that reaches the script, with the name of its field."""
    for field in _TEXT_FIELDS:
        value = getattr(spec, field)
        if value is not None:
            yield f"spec.{field}", str(value)
    yield from ((f"spec.command[{i}]", arg) for i, arg in enumerate(spec.command))
    yield from ((f"spec.sbatch_args[{i}]", arg) for i, arg in enumerate(spec.sbatch_args))
    for key, value in spec.environment.items():
        yield f"spec.environment key {key!r}", key
        yield f"spec.environment[{key!r}]", value
    yield from container_strings(spec.container)


def container_strings(container: ContainerSpec) -> Iterator[tuple[str, str]]:
    """Every string of the container wrapping, with its field's name."""
    yield "spec.container.run_type", container.run_type
    if container.image is not None:
        yield "spec.container.image", container.image
    for i, mount in enumerate(container.bind_mounts):
        yield f"spec.container.bind_mounts[{i}].host_path", mount.host_path
        yield f"spec.container.bind_mounts[{i}].container_path", mount.container_path
    for i, name in enumerate(container.pass_environment):
        yield f"spec.container.pass_environment[{i}]", name


def check_strings_and_names(spec: JobSpec) -> None:
    """No string may hold a newline, CR or NUL; variable names must be shell names."""
    for where, value in spec_strings(spec):
        check_safe(value, where)
    for name in spec.environment:
        if not ENV_NAME.match(name):
            raise ValidationError(f"spec.environment: invalid variable name {name!r}")


def check_shape(spec: JobSpec) -> None:
    """A plain script name, a command, and counts a scheduler can ask for: positive nodes,
    ranks per node and CPUs per rank, and no negative number of GPUs."""
    if not spec.script_name or "/" in spec.script_name or spec.script_name.startswith("."):
        raise ValidationError(f"spec.script_name must be a plain file name: {spec.script_name!r}")
    if not spec.command:
        raise ValidationError("spec.command must not be empty")
    for field in ("nodes", "ranks_per_node", "cpus_per_rank"):
        value = getattr(spec, field)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValidationError(f"spec.{field} must be a positive integer, not {value!r}")
    gpus = spec.gpus_per_node
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        raise ValidationError(f"spec.gpus_per_node must be a non-negative integer, not {gpus!r}")


def read_exit_file(job: JobRef, files: Transport) -> int | None:
    """The status the job script recorded in ``<job_dir>/exit-<jobid>``, if any (the caller
    has checked ``job.job_id`` is one of its scheduler's ids). Read through ``files`` (the
    backend's transport); an unreachable cluster raises
    :class:`~hpcdet.dispatcher.transport.TransportUnavailableError`, never "no file"."""
    path = posixpath.join(job.job_dir, f"exit-{job.job_id}")
    try:  # never a link the job put there
        data = files.read_file(path, 0, 64)
        return int(data.decode("utf-8").strip())
    except (OSError, ValueError):
        return None


def status_from_exit_file(job: JobRef, files: Transport) -> JobStatus:
    """A job the scheduler no longer knows: what its exit file says, else MISSING."""
    code = read_exit_file(job, files)
    if code is None:
        return JobStatus(job.job_id, JobPhase.MISSING, "", source="none")
    phase = JobPhase.COMPLETED if code == 0 else JobPhase.FAILED
    return JobStatus(job.job_id, phase, phase.value, exit_code=code, source="exit-file")
