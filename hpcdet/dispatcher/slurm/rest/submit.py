"""A rendered job script as slurmrestd's ``POST /slurm/v0.0.44/job/submit`` body.

slurmrestd does not read a script's ``#SBATCH`` lines: every option must be a field of the
job description. hpcdet renders one script for both paths, so the lines it wrote (its own
directives and the user's ``slurm.sbatch_args``, already validated and quoted) are read back
here exactly as sbatch reads them (:func:`~hpcdet.dispatcher.slurm.sbatch_options.script_settings`,
the reader ``det sbatch`` and the run-as helper share) and each option is translated by
:data:`FIELDS`. An option without a translation is refused with one message naming it, so a
job never runs with an option silently dropped.

The job's environment: sbatch would export the master's whole environment; through
slurmrestd the master sends only :data:`EXPORTED` (the job script sets the trial's own
variables itself).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hpcdet.dispatcher.options import Setting
from hpcdet.dispatcher.slurm.sbatch_args import render_sbatch_args
from hpcdet.dispatcher.slurm.sbatch_options import script_settings
from hpcdet.errors import ConfigError, ValidationError

# The master's variables a job submitted through slurmrestd gets (sbatch --export=ALL would
# pass them all): where the Slurm clients and Python are, the job's locale, Slurm's config.
EXPORTED = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TZ", "SLURM_CONF")
_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
_MEMORY = re.compile(r"^(\d+)([KMGT]?)B?$", re.IGNORECASE)
_SIGNAL = re.compile(r"^(?:(B):)?([A-Za-z0-9]+)(?:@(\d+))?$")
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def _number(value: int) -> dict[str, Any]:
    return {"set": True, "infinite": False, "number": value}


def minutes(text: str) -> dict[str, Any]:
    """Slurm's time forms (``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``,
    ``UNLIMITED``) in minutes, seconds rounded up as Slurm does."""
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return {"set": True, "infinite": True, "number": 0}
    match = _TIME.match(text)
    if match is None:
        raise ValueError(f"not a Slurm time: {text!r}")
    days, first, second, third = match.groups()
    if days is not None:  # D-H[:M[:S]]
        seconds = (int(days) * 24 + int(first)) * 3600 + int(second or 0) * 60 + int(third or 0)
    elif third is not None:  # H:M:S
        seconds = int(first) * 3600 + int(second) * 60 + int(third)
    else:  # M[:S]
        seconds = int(first) * 60 + int(second or 0)
    return _number(math.ceil(seconds / 60))


def megabytes(text: str) -> dict[str, Any]:
    """``4G``, ``500M``, ``4000`` (megabytes by default) in megabytes."""
    match = _MEMORY.match(text)
    if match is None:
        raise ValueError(f"not a memory size: {text!r}")
    return _number(math.ceil(int(match.group(1)) * _UNITS[(match.group(2) or "M").upper()]))


def _signal(text: str) -> dict[str, Any]:
    """``[B:]SIG[@seconds]`` (sbatch's default warning time is 60 seconds)."""
    match = _SIGNAL.match(text)
    if match is None:
        raise ValueError(f"not a --signal value: {text!r}")
    batch, signal, delay = match.groups()
    fields: dict[str, Any] = {"kill_warning_signal": signal,
                              "kill_warning_delay": _number(int(delay or 60))}
    if batch:
        fields["kill_warning_flags"] = ["BATCH_JOB"]
    return fields


def _gpus(field: str) -> Callable[[str], dict[str, Any]]:
    """``--gpus=[type:]N`` as ``tres_per_job: gres/gpu[:type]:N`` (per node likewise)."""
    return lambda text: {field: f"gres/gpu:{text}"}


def _gres(text: str) -> dict[str, Any]:
    return {"tres_per_node": ",".join(f"gres/{item.removeprefix('gres/')}"
                                      for item in text.split(",") if item)}


def _field(name: str, convert: Callable[[str], Any] = str) -> Callable[[str], dict[str, Any]]:
    return lambda text: {name: convert(text)}


def _flag(fields: dict[str, Any]) -> Callable[[str], dict[str, Any]]:
    return lambda _text: dict(fields)


# sbatch's long option -> the job description fields it sets (v0.0.44 names).
FIELDS: Mapping[str, Callable[[str], dict[str, Any]]] = {
    "job-name": _field("name"), "chdir": _field("current_working_directory"),
    "partition": _field("partition"), "nodes": _field("nodes"),
    "ntasks": _field("tasks", int), "ntasks-per-node": _field("tasks_per_node", int),
    "cpus-per-task": _field("cpus_per_task", int),
    "output": _field("standard_output"), "error": _field("standard_error"),
    "open-mode": _field("open_mode", lambda text: [text.upper()]),
    "signal": _signal, "requeue": _flag({"requeue": True}),
    "no-requeue": _flag({"requeue": False}), "time": _field("time_limit", minutes),
    "time-min": _field("time_minimum", minutes), "account": _field("account"),
    "qos": _field("qos"), "wckey": _field("wckey"), "comment": _field("comment"),
    "nice": _field("nice", int), "exclude": _field("excluded_nodes", lambda t: t.split(",")),
    "nodelist": _field("required_nodes", lambda t: t.split(",")),
    "constraint": _field("constraints"), "reservation": _field("reservation"),
    "dependency": _field("dependency"), "licenses": _field("licenses"),
    "mem": _field("memory_per_node", megabytes),
    "mem-per-cpu": _field("memory_per_cpu", megabytes),
    "gpus": _gpus("tres_per_job"), "gpus-per-node": _gpus("tres_per_node"), "gres": _gres,
    "exclusive": _flag({"shared": ["none"]}), "hold": _flag({"hold": True}),
    "mail-user": _field("mail_user"),
}
# What --nice means without a value (sbatch: 100).
_BARE_VALUES = {"nice": "100"}


def untranslated(settings: Sequence[Setting], where: str) -> str | None:
    """The one message refusing the options of ``settings`` :data:`FIELDS` cannot send."""
    refused = sorted({f"--{name}" for name, _ in settings if name not in FIELDS})
    if not refused:
        return None
    return (f"{where}: {', '.join(refused)} {'is' if len(refused) == 1 else 'are'} not "
            "available through slurmrestd (resource_manager.transport type rest); options "
            f"translated: {', '.join(f'--{name}' for name in sorted(FIELDS))}")


def check_rest_args(args: Sequence[str], path: str) -> None:
    """A user's ``slurm.sbatch_args`` (already checked as for sbatch) read as their
    ``#SBATCH`` lines will be: ConfigError naming ``path`` for options without a field."""
    script = "#!/bin/bash\n" + render_sbatch_args(args, path=path) + "\n"
    problem = untranslated(script_settings(script, path), path)
    if problem:
        raise ConfigError([problem], title="invalid slurm.sbatch_args")


def job_description(script: str, where: str, environ: Mapping[str, str] | None = None,
                    ) -> dict[str, Any]:
    """The ``job`` of a submit request for ``script`` (its ``#SBATCH`` lines translated)."""
    settings = script_settings(script, where)
    problem = untranslated(settings, where)
    if problem:
        raise ValidationError(problem)
    job = _fields(settings, where)
    source = os.environ if environ is None else environ
    job["environment"] = [f"{name}={source[name]}" for name in EXPORTED if name in source]
    _derive_tasks(job)
    return job


def _fields(settings: Sequence[Setting], where: str) -> dict[str, Any]:
    """The job description fields of ``settings`` (each option in :data:`FIELDS`)."""
    job: dict[str, Any] = {}
    for name, value in settings:
        try:
            job.update(FIELDS[name](value if value is not None else
                                    _BARE_VALUES.get(name, "")))
        except ValueError as exc:
            raise ValidationError(f"{where}: --{name}: {exc}") from None
    return job


def _derive_tasks(job: dict[str, Any]) -> None:
    """sbatch sets the task count from --nodes and --ntasks-per-node; slurmrestd leaves it
    to the request, so a job of N nodes with one task per node asks for N tasks."""
    nodes, per_node = str(job.get("nodes", "")), job.get("tasks_per_node")
    if "tasks" not in job and nodes.isdigit() and isinstance(per_node, int):
        job["tasks"] = int(nodes) * per_node


def submit_body(script: str, where: str, *, environ: Mapping[str, str] | None = None,
                extra: Sequence[Setting] = ()) -> dict[str, Any]:
    """``{"script": ..., "job": ...}``; ``extra``: options given beside the script
    (an sbatch command line's), translated like the script's own."""
    description = job_description(script, where, environ)
    for name, _value in extra:
        if name not in FIELDS:
            raise ValidationError(f"{where}: --{name} is not available through slurmrestd")
    description.update(_fields(extra, where))
    return {"script": script, "job": description}
