"""Train one trial in this process, with no master and no Slurm.

``det experiment create --local CONFIG CONTEXT`` uses it to debug model code quickly. The
trial runs the way the harness would run it in a one-slot job, minus what needs a cluster:

* a scratch ``trial.json`` marked *unmanaged* (as ``--dry-run`` jobs are) gives the Core API
  the hyperparameters, seed and experiment config, while metrics are printed on stderr
  (the dummy train context) and checkpoints go to ``CONTEXT/checkpoints`` unregistered;
* the working directory is CONTEXT while the trial runs, and ``RANK=0``/``WORLD_SIZE=1``
  keep it one process even inside a Slurm allocation; both are restored afterwards;
  ``MASTER_ADDR``/``MASTER_PORT`` (loopback, a free port) let a script that creates its
  own process group over ``env://`` do so, as in a job;
* no process group is joined and no signal handler is installed (Ctrl-C stops it);
* scripts and trial classes run in this process; another command runs as a child. A
  trial class goes through :func:`hpcdet.pytorch.run_trial_class` as in a job (not its
  ``local=True`` path): the scratch ``trial.json`` carries the searcher's trial seed, the
  completed config and the checkpoint directory, exactly as a ``--dry-run`` job's does.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hpcdet.core._context import close_open_contexts
from hpcdet.harness.entrypoint import interpreter_first_on_path, parse_entrypoint, run_entrypoint
from hpcdet.harness.main import seed_everything
from hpcdet.job.trial_info import JOB_DIR_VAR, TRIAL_INFO_VAR

CHECKPOINTS = "checkpoints"
LOCAL_ADDR = "127.0.0.1"
# One rank whatever Slurm's variables say (_ranks_environ prefers these to SLURM_*).
_ONE_RANK = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
             "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1"}


@dataclass(frozen=True)
class LocalTrial:
    """The one trial to train: its complete config, hyperparameters, seed and code."""

    config: Mapping[str, Any]
    hparams: Mapping[str, Any]
    trial_seed: int
    context_dir: pathlib.Path

    @property
    def checkpoint_dir(self) -> pathlib.Path:
        return self.context_dir.absolute() / CHECKPOINTS


def run_local(trial: LocalTrial) -> int:
    """Train ``trial`` in this process; returns the entrypoint's exit code.

    Raises :class:`~hpcdet.harness.entrypoint.EntrypointError` for a bad entrypoint.
    """
    entry = parse_entrypoint(trial.config.get("entrypoint"))
    with tempfile.TemporaryDirectory(prefix="hpcdet-local-") as job_dir:
        with _local_job(trial, pathlib.Path(job_dir)):
            seed_everything(trial.trial_seed)
            code = run_entrypoint(entry)
            return _close_contexts(code)


def trial_json(trial: LocalTrial) -> dict[str, Any]:
    """The unmanaged ``trial.json`` of a local run (trial 0 of experiment 0, no token)."""
    return {
        "master_url": "",
        "experiment_id": 0,
        "trial_id": 0,
        "run_id": 1,
        "trial_seed": trial.trial_seed,
        "hparams": dict(trial.hparams),
        "experiment_config": dict(trial.config),
        "latest_checkpoint": None,
        "checkpoint_dir": str(trial.checkpoint_dir),
        "token_file": None,
        "unmanaged": True,
        "local": True,
    }


@contextmanager
def _local_job(trial: LocalTrial, job_dir: pathlib.Path) -> Iterator[None]:
    info_path = job_dir / "trial.json"
    info_path.write_text(json.dumps(trial_json(trial)), encoding="utf-8")
    saved_environ, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.update({TRIAL_INFO_VAR: str(info_path), JOB_DIR_VAR: str(job_dir), **_ONE_RANK,
                       "MASTER_ADDR": LOCAL_ADDR, "MASTER_PORT": str(_free_port())})
    interpreter_first_on_path()
    os.chdir(trial.context_dir)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_environ)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOCAL_ADDR, 0))
        return int(sock.getsockname()[1])


def _close_contexts(code: int) -> int:
    """Flush what the entrypoint left open (its metrics printer); a failure fails the run."""
    try:
        close_open_contexts()
    except Exception as exc:
        print(f"hpcdet local: closing the core context failed: {exc}", file=sys.stderr)
        return code or 1
    return code
