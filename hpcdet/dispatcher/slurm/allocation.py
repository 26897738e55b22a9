"""Render allocation mode's batch job for Slurm (:mod:`hpcdet.dispatcher.allocation`).

The job asks for ``slots`` tasks of ``cpus_per_slot`` CPUs each (and one GPU per task on
a GPU pool), so that each trial's ``srun --exact`` step takes exactly its ranks' share
and several trials run side by side. The agent runs in the batch step.
"""

from __future__ import annotations

import posixpath
import re

from hpcdet.dispatcher.allocation import AllocationSpec
from hpcdet.dispatcher.base import Submission
from hpcdet.dispatcher.render import DirectiveValue, render_directives
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.slurm import JOB_LOG_STEM
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.sbatch_args import parse_sbatch_args, render_parsed
from hpcdet.errors import ValidationError

TEMPLATE_NAME = "slurm_allocation.sh.j2"
# Slurm's --time forms with hours: [D-]HH:MM:SS.
_WALLTIME = re.compile(r"^(\d+-)?\d{1,3}:[0-5]\d:[0-5]\d$")
_GPU_TYPE = re.compile(r"^[A-Za-z0-9_.-]+$")
_TIME_OPTIONS = ("--time", "-t")


def render_allocation(backend: SlurmBackend, spec: AllocationSpec) -> Submission:
    """The allocation's script and ``sbatch`` argv; values are validated first."""
    _validate(spec)
    # The trials' own time limit (slurm.sbatch_args) would cut the allocation short.
    user_args = [arg for arg in parse_sbatch_args(spec.sbatch_args, path="spec.sbatch_args")
                 if arg.option not in _TIME_OPTIONS]
    template = backend._templates.get_template(TEMPLATE_NAME)
    script = template.render(
        directives=render_directives("#SBATCH", _directives(spec, backend.gpu_request)),
        user_directives=render_parsed(user_args),
        exit_file_prefix=posixpath.join(spec.job_dir, "exit-"),
        environment=sorted(spec.environment.items()),
        job_dir=spec.job_dir, command=list(spec.command))
    return backend.script_submission(spec.job_dir, spec.script_name, script)


def _validate(spec: AllocationSpec) -> None:
    for where, value in (("spec.name", spec.name), ("spec.job_dir", spec.job_dir),
                         *((f"spec.command[{i}]", w) for i, w in enumerate(spec.command)),
                         *((f"spec.environment[{k!r}]", v) for k, v in spec.environment.items())):
        check_safe(value, where)
    if not spec.name or not spec.command:
        raise ValidationError("an allocation needs a name and a command")
    if not posixpath.isabs(spec.job_dir) or "\\" in spec.job_dir:
        raise ValidationError(f"spec.job_dir must be an absolute path without a backslash: "
                              f"{spec.job_dir!r}")
    if spec.slots < 1 or spec.cpus_per_slot < 1 or spec.gpus_per_slot not in (0, 1):
        raise ValidationError(f"an allocation holds at least one slot of at least one CPU and "
                              f"at most one GPU (slots {spec.slots}, CPUs {spec.cpus_per_slot},"
                              f" GPUs {spec.gpus_per_slot})")
    if not _WALLTIME.match(spec.time_limit):
        raise ValidationError(f"spec.time_limit {spec.time_limit!r} is not [D-]HH:MM:SS")
    if spec.gpu_type is not None and not _GPU_TYPE.match(spec.gpu_type):
        raise ValidationError(f"spec.gpu_type {spec.gpu_type!r} is not a GPU type name")


def _directives(spec: AllocationSpec, gpu_request: str) -> dict[str, DirectiveValue]:
    logs = spec.job_dir.replace("%", "%%")  # "%" starts a Slurm filename pattern
    directives: dict[str, DirectiveValue] = {
        "job-name": spec.name, "chdir": spec.job_dir, "partition": spec.partition,
        "ntasks": spec.slots, "cpus-per-task": spec.cpus_per_slot,
        "output": f"{logs}/{JOB_LOG_STEM}.out", "error": f"{logs}/{JOB_LOG_STEM}.err",
        "time": spec.time_limit, "account": spec.account, "qos": spec.qos,
        "wckey": spec.wckey, "comment": spec.comment, "nice": spec.nice,
        "exclude": spec.exclude,
        # An allocation that ends early is not requeued: its trials fall back to jobs.
        "no-requeue": True,
    }  # fmt: skip
    if spec.gpus_per_slot:
        if gpu_request != "tres":
            raise ValidationError("allocation mode with GPUs needs a cluster that takes "
                                  "TRES GPU requests (--gpus-per-task)")
        typed = f"{spec.gpu_type}:" if spec.gpu_type else ""
        directives["gpus-per-task"] = f"{typed}{spec.gpus_per_slot}"
    return directives
