"""``python -m hpcdet.harness``: what every rank runs inside the job.

The flow: read ``trial.json`` -> derive this rank from Slurm -> export the ``env://``
variables -> catch the preemption signals -> join the process group -> seed the RNGs ->
run the entrypoint -> close what the script left open -> leave the process group.

Decisions worth knowing:

* A trial class (``model_def:MyTrial``, or Determined's ``python3 -m
  determined.launch.torch_distributed --trial model_def:MyTrial``) runs in process like a
  script: :func:`hpcdet.pytorch.run_trial_class` trains it in the group joined here.
* An in-process Python entrypoint joins the process group when it first imports torch
  (:mod:`hpcdet.job.import_hooks`), even with one slot (an in-memory store, no port),
  so scripts that use torch can rely on ``torch.distributed.is_initialized()``. A trial
  class (a PyTorchTrial) joins before it starts. A script that never imports torch never
  loads it: a one-slot trial of the standard library costs ~30 MB, not ~300 MB with torch.
  Every rank of a trial runs the same code, so all of them import torch and meet.
  A script that calls ``init_process_group``
  itself (Determined's ``core_api_pytorch_mnist/model_def_distributed.py`` does) gets
  the group handed over: the harness leaves its group and the call runs as written, on
  ``MASTER_PORT + 1`` for ``env://`` (:func:`process_group.script_may_own_group`).
  A subprocess entrypoint gets only the variables:
  the group is its own business, and our store would hold the port it needs.
* Every rank is seeded with the trial seed, the same on all ranks (as Determined does),
  so models start identical; data order differs through each rank's sampler shard.
  numpy and torch are seeded when they are imported.
* ``MASTER_ADDR``/``MASTER_PORT`` already in the environment win over the derived ones.
* The process ends with :func:`exit_process`, which skips the interpreter's final
  teardown (see there why).
* A script (or trial class) that raises :class:`~hpcdet.InvalidHP` has rank 0 report an
  ``invalid_hp`` early exit to the master, and exits 0 (Determined does the same for
  ``det.InvalidHP``).
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import os
import random
import socket
import sys
import threading
from collections.abc import Mapping, Sequence

from hpcdet.core._context import close_open_contexts, report_job_early_exit
from hpcdet.core._preempt import install_signal_handlers, preemption_signalled
from hpcdet.errors import HpcdetError
from hpcdet.harness.entrypoint import (
    EXIT_USAGE,
    Entrypoint,
    interpreter_first_on_path,
    parse_entrypoint,
    run_entrypoint,
)
from hpcdet.harness.rank_labels import RankLabels, labels_needed
from hpcdet.job import process_group
from hpcdet.job.cluster_env import ClusterEnv
from hpcdet.job.early_exit import EarlyExitReason, InvalidHP
from hpcdet.job.import_hooks import when_imported
from hpcdet.job.rank_env import mpi_world
from hpcdet.job.trial_info import TrialInfo, load_trial_info, pin_latest_checkpoint
from hpcdet.jobfiles import PREEMPTED, restart_count, write_exit_reason


def main(argv: Sequence[str] | None = None) -> int:
    """Run this rank of the trial; returns the process exit code."""
    args = _parse_args(argv)
    _line_buffered_output()
    try:
        info = load_trial_info()
        pin_latest_checkpoint(info)  # before the group forms: the same on every rank
        cluster = process_group.reachable_rendezvous(ClusterEnv.from_environ(), os.environ)
        cluster = cluster.export_torch_env()
        entry = parse_entrypoint(args.entrypoint or info.entrypoint)
    except (HpcdetError, ValueError) as exc:
        _say(str(exc))
        return EXIT_USAGE
    install_signal_handlers()
    interpreter_first_on_path()
    labels = RankLabels(cluster.rank) if labels_needed(cluster.launcher) else None
    try:
        if entry.kind in ("script", "module", "trial_class"):
            code = _run_in_process(info, cluster, entry)
        else:
            _banner(cluster, "backend none")
            code = run_entrypoint(entry)
        _note_preemption(info, cluster, code)
    finally:
        if labels is not None:
            labels.close()
    return code


def _note_preemption(info: TrialInfo, cluster: ClusterEnv, code: int) -> None:
    """Tell the master (through the job directory) that this run stopped because it was asked.

    A clean exit after SIGTERM/SIGUSR2 or the master's stop is a preemption: the master
    resubmits the trial from its checkpoint without counting a restart. The file survives
    a master that is down, and it names the execution (Slurm's or PBS's job id, and the
    requeue count: :func:`slurm_restart_count`).
    """
    job_id = os.environ.get("SLURM_JOB_ID") or os.environ.get("PBS_JOBID")
    if code != 0 or not cluster.is_chief or not preemption_signalled() or not job_id:
        return
    try:
        write_exit_reason(info.job_dir or ".", job_id, slurm_restart_count(os.environ),
                          PREEMPTED, rank=cluster.rank)
    except OSError as exc:
        _say(f"could not record the preemption in the job directory: {exc}")


def _run_in_process(info: TrialInfo, cluster: ClusterEnv, entry: Entrypoint) -> int:
    seed_everything(info.trial_seed)
    if entry.kind == "trial_class":  # a PyTorchTrial: torch, and the group, from the start
        try:
            backend = _join_process_group(info, cluster)
        except (HpcdetError, ValueError) as exc:
            _say(str(exc))
            return EXIT_USAGE
        _banner(cluster, f"backend {backend}")
    else:
        _banner(cluster, "process group joined when the entrypoint imports torch")
        process_group.join_when_torch_imported(lambda: _join_on_torch_import(info, cluster))
    with process_group.script_may_own_group():
        code = run_entrypoint(entry, lambda exc: _report_invalid_hp(info, cluster, exc))
    return _finish(code)


def _join_on_torch_import(info: TrialInfo, cluster: ClusterEnv) -> None:
    """The entrypoint imported torch: join the group now, as if it had been there all along.

    Raises SystemExit (out of the entrypoint's ``import torch``) if the group cannot be
    joined, which ends the rank as a failure to start would.
    """
    try:
        backend = _join_process_group(info, cluster)
    except (HpcdetError, ValueError) as exc:
        _say(str(exc))
        raise SystemExit(EXIT_USAGE) from None
    _say(f"the entrypoint imported torch: rank {cluster.rank}/{cluster.size} joined the "
         f"process group, backend {backend}")


def _report_invalid_hp(info: TrialInfo, cluster: ClusterEnv, exc: InvalidHP) -> int:
    """Report the script's InvalidHP as the trial's early exit (rank 0); 0 once reported."""
    what = f"the entrypoint raised InvalidHP ({exc})"
    if not cluster.is_chief:
        _say(f"{what}; rank 0 reports it; exiting 0")
        return 0
    try:
        reported = report_job_early_exit(info, EarlyExitReason.INVALID_HP)
    except HpcdetError as report_exc:
        _say(f"{what}, but reporting it to the master failed: {report_exc}")
        return 1
    if reported:
        _say(f"{what}: reported an invalid_hp early exit to the master; exiting 0")
    else:
        _say(f"{what}; an unmanaged trial has no master to tell; exiting 0")
    return 0


def _join_process_group(info: TrialInfo, cluster: ClusterEnv) -> str:
    """Join the group; returns the backend, or "none" for one rank without torch."""
    if not _torch_available():
        if cluster.size > 1:
            raise HpcdetError("torch is not installed, and a trial with several slots needs it")
        return "none"
    slot = process_group.slot_type(os.environ, info.experiment_config)
    backend = process_group.choose_backend(slot)
    timeout_s = process_group.timeout_from_environ()
    process_group.init_process_group(cluster, backend, timeout_s=timeout_s)
    return backend


def _finish(code: int) -> int:
    """Flush what the script left open, then leave the group (waiting for peers on success)."""
    try:
        close_open_contexts()
    except Exception as exc:
        _say(f"closing the core context failed: {exc}")
        code = code or 1
    try:
        process_group.teardown(barrier=code == 0)
    except Exception as exc:
        _say(f"leaving the process group failed: {exc}")
    return code


def slurm_restart_count(environ: Mapping[str, str]) -> int:
    """How many times Slurm (``SLURM_RESTART_COUNT``) or PBS (``HPCDET_RESTART_COUNT``,
    from the job script) has requeued this job; 0 if unset."""
    return restart_count(environ)


def exit_process(code: int) -> None:
    """End the process like a normal exit, minus the interpreter's final teardown.

    Non-daemon threads are joined (by ``threading._shutdown``, which the interpreter calls
    itself and which first stops idle executor workers), ``atexit`` handlers run and the
    standard streams are flushed, as at any exit; then ``os._exit``. The skipped teardown
    races with torch's C++ threads: gloo's workers can still drop tensors (taking the GIL)
    while the interpreter is torn down, and the process dies with SIGABRT ("terminate
    called without an active exception") after a successful run, which Slurm records as a
    failed job. We saw it in a few percent of 2-rank runs when a model wrapped in DDP was
    still referenced at exit.
    """
    getattr(threading, "_shutdown")()  # noqa: B009 - private, so not in the type stubs
    atexit._run_exitfuncs()
    if code == 0:  # a failed rank leaves MPI unfinalised, so that mpiexec stops the others
        mpi_world.finalize()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def seed_everything(seed: int) -> None:
    """Seed Python's generator now, and numpy's and torch's once they are imported.

    Seeding at import gives the generators the state they would have had if seeded at
    start (nothing can draw from them before they exist), without importing either for
    code that uses neither.
    """
    random.seed(seed)
    when_imported("numpy", lambda numpy: numpy.random.seed(seed % 2**32))
    when_imported("torch", lambda torch: torch.manual_seed(seed))  # every CUDA device too


def _torch_available() -> bool:
    """Whether torch can be imported, found without importing it."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def _banner(cluster: ClusterEnv, group: str) -> None:
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    _say(
        f"rank {cluster.rank}/{cluster.size} local {cluster.local_rank}/{cluster.local_size} "
        f"node {node} master_addr {cluster.master_addr}:{cluster.master_port} {group}"
    )


def _say(message: str) -> None:
    print(f"hpcdet harness: {message}", file=sys.stderr, flush=True)


def _line_buffered_output() -> None:
    # Slurm writes our output to a file: without this, lines of different ranks would
    # interleave by buffer, not by line, and the last lines vanish on a kill.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(line_buffering=True)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m hpcdet.harness",
        description="Run one rank of a hpcdet trial (started by the job script with srun).",
    )
    parser.add_argument(
        "entrypoint",
        nargs=argparse.REMAINDER,
        help="command to run instead of the experiment's entrypoint",
    )
    return parser.parse_args(argv)
