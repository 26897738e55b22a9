"""``trial.json``: what the master tells one run of one trial (see ``docs/job-directory.md``).

The master rewrites the file before each job, so a resubmitted trial sees its newest
``latest_checkpoint``. A job that Slurm requeues reruns with the same file, so the newer
checkpoint the chief noted in ``latest_checkpoint.json`` (:mod:`hpcdet.jobfiles`) wins.

The chief rewrites that note as it trains, so a rank that read it later than the others
would resume from a newer checkpoint than they do, and the ranks' collectives would no
longer pair up. Every rank reads it before the process group forms (which no rank leaves
before all have joined, so before any checkpoint of this run), and the harness pins what
it read in ``$HPCDET_LATEST_CHECKPOINT`` (:func:`pin_latest_checkpoint`): later reads in
the rank, and its subprocesses, take the pinned value.

The secret token is *not* part of :class:`TrialInfo` (it would leak
into every ``repr``); :func:`read_token` reads it from the job directory on demand.
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from hpcdet.errors import HpcdetError
from hpcdet.job.secret_file import read_secret
from hpcdet.jobfiles import read_latest_checkpoint

TRIAL_INFO_VAR = "DET_TRIAL_INFO"
JOB_DIR_VAR = "DET_JOB_DIR"
# The newest checkpoint as this rank's harness read it before joining the group ("" for
# none): see the module's docstring.
PINNED_CHECKPOINT_VAR = "HPCDET_LATEST_CHECKPOINT"

_REQUIRED: dict[str, type] = {
    "master_url": str,
    "experiment_id": int,
    "trial_id": int,
    "trial_seed": int,
    "hparams": dict,
    "experiment_config": dict,
    "checkpoint_dir": str,
}
_KIND_NAMES = {str: "a string", int: "an integer", dict: "an object"}


class TrialInfoError(HpcdetError):
    """``trial.json`` or the token file is missing or malformed."""


@dataclass(frozen=True)
class TrialInfo:
    """One trial run's identity, hyperparameters and storage, as read from ``trial.json``."""

    master_url: str
    experiment_id: int
    trial_id: int
    trial_seed: int
    hparams: dict[str, Any]
    experiment_config: dict[str, Any]
    checkpoint_dir: str
    run_id: int = 1
    latest_checkpoint: str | None = None
    token_file: str = ".token"
    job_dir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, job_dir: str | None = None) -> TrialInfo:
        """Validate the decoded ``trial.json``; unknown keys are kept in ``extra``."""
        problems = [_check_field(data, key, kind) for key, kind in _REQUIRED.items()]
        problems = [p for p in problems if p]
        if problems:
            raise TrialInfoError("invalid trial.json: " + "; ".join(problems))
        known = set(_REQUIRED) | {"run_id", "latest_checkpoint", "token_file"}
        return cls(
            **{key: data[key] for key in _REQUIRED},
            run_id=int(data.get("run_id") or 1),
            latest_checkpoint=data.get("latest_checkpoint") or None,
            token_file=str(data.get("token_file") or ".token"),
            job_dir=job_dir,
            extra={k: v for k, v in data.items() if k not in known},
        )

    @property
    def entrypoint(self) -> str | list[str] | None:
        """The experiment's ``entrypoint`` (a command string or an argv list), if any."""
        value = self.experiment_config.get("entrypoint")
        return value if isinstance(value, (str, list)) else None


def trial_info_path(environ: Mapping[str, str] | None = None) -> pathlib.Path | None:
    """The path in ``$DET_TRIAL_INFO``, or None outside a hpcdet job."""
    env = os.environ if environ is None else environ
    value = env.get(TRIAL_INFO_VAR)
    return pathlib.Path(value) if value else None


def load_trial_info(environ: Mapping[str, str] | None = None) -> TrialInfo:
    """Load and validate ``trial.json`` from ``$DET_TRIAL_INFO``."""
    env = os.environ if environ is None else environ
    path = trial_info_path(env)
    if path is None:
        raise TrialInfoError(f"${TRIAL_INFO_VAR} is not set: this is not a hpcdet job")
    job_dir = env.get(JOB_DIR_VAR) or str(path.parent)
    data = _read_json(path)
    pinned = env.get(PINNED_CHECKPOINT_VAR)
    if pinned is not None:
        data["latest_checkpoint"] = pinned or None
    else:
        noted = read_latest_checkpoint(job_dir)
        if noted:
            data["latest_checkpoint"] = noted
    return TrialInfo.from_dict(data, job_dir=job_dir)


def pin_latest_checkpoint(info: TrialInfo,
                          environ: MutableMapping[str, str] | None = None) -> None:
    """Make ``info``'s latest checkpoint the one every later :func:`load_trial_info` of this
    process (and of the processes it starts) returns (the harness calls it before joining
    the process group)."""
    env = os.environ if environ is None else environ
    env[PINNED_CHECKPOINT_VAR] = info.latest_checkpoint or ""


def read_token(info: TrialInfo) -> str:
    """The trial's bearer token; ``token_file`` is relative to the job directory."""
    path = pathlib.Path(info.job_dir or ".") / info.token_file
    return read_secret(path, "the trial token file", TrialInfoError)


def master_cert_file(info: TrialInfo) -> str | None:
    """The TLS master's certificate the job verifies it with (``master_cert_file``, relative
    to the job directory); None for a plain-HTTP master (then ``$DET_MASTER_CERT_FILE``)."""
    name = info.extra.get("master_cert_file")
    if not isinstance(name, str) or not name:
        return None
    return str(pathlib.Path(info.job_dir or ".") / name)


def _read_json(path: pathlib.Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TrialInfoError(f"cannot read {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise TrialInfoError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise TrialInfoError(f"{path} must hold a JSON object")
    return data


def _check_field(data: Mapping[str, Any], key: str, kind: type) -> str:
    if key not in data:
        return f"{key} is missing"
    value = data[key]
    # bool is an int subclass; an id of `true` is a bug in whatever wrote the file.
    if isinstance(value, bool) or not isinstance(value, kind):
        return f"{key} must be {_KIND_NAMES[kind]}, not {type(value).__name__}"
    return ""
