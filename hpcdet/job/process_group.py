"""Start and stop ``torch.distributed`` for the ranks a launcher (``srun``, ``mpiexec``) started.

The harness joins the group, the Core API joins it when the harness did not, and both leave
it through here. torch is imported inside the functions: the harness must import on a login
node or in an image without torch (a non-Python entrypoint needs no process group).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import socket
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from hpcdet.errors import HpcdetError
from hpcdet.hostlist import first_host
from hpcdet.job.cluster_env import ClusterEnv
from hpcdet.job.import_hooks import when_imported

SLOT_TYPE_VAR = "DET_SLOT_TYPE"
TIMEOUT_VAR = "HPCDET_DIST_TIMEOUT"
# torch's own default for gloo. Collectives may legitimately wait this long while the
# chief validates or writes a large checkpoint; when a rank dies, Slurm ends the others
# sooner (the job script runs srun with --kill-on-bad-exit=1).
DEFAULT_TIMEOUT_S = 1800
# A script's own process group rendezvous on the harness's port + 1 (see hand_over_group).
SCRIPT_GROUP_PORT_OFFSET = 1

_harness_group = False  # True while the default group is the one the harness created
_join_deferred = False  # True while the harness waits for the entrypoint to import torch


def join_when_torch_imported(join: Callable[[], None]) -> None:
    """Run ``join`` (which joins the process group) once this process imports torch."""
    global _join_deferred
    _join_deferred = True

    def on_import(_torch: Any) -> None:
        global _join_deferred
        _join_deferred = False
        join()

    when_imported("torch", on_import)


def join_deferred() -> bool:
    """Whether the harness joins the group only when the entrypoint imports torch (and it
    has not yet): the ranks then share no group, and the Core API uses the chief's store."""
    return _join_deferred


def slot_type(environ: Mapping[str, str], experiment_config: Mapping[str, Any]) -> str:
    """``cuda``, ``cpu`` or ``rocm``: ``$DET_SLOT_TYPE``, else ``resources.slot_type``.

    Determined's Slurm launcher defaults to ``cuda``; a cuda slot on a host without a GPU
    still falls back to gloo in :func:`choose_backend`.
    """
    resources = experiment_config.get("resources")
    configured = resources.get("slot_type") if isinstance(resources, Mapping) else None
    return str(environ.get(SLOT_TYPE_VAR) or configured or "cuda").lower()


def choose_backend(slot: str) -> str:
    """``nccl`` for GPU slots on a host where CUDA works, ``gloo`` otherwise."""
    import torch

    # ROCm builds of torch expose HIP through torch.cuda and map "nccl" to RCCL.
    return "nccl" if slot in ("cuda", "rocm") and torch.cuda.is_available() else "gloo"


def init_process_group(cluster: ClusterEnv, backend: str, *, timeout_s: float) -> None:
    """Join the default process group; ``cluster.export_torch_env()`` must have run.

    A world of one uses an in-memory store, so no port is opened and no rendezvous can
    fail; scripts still find ``torch.distributed.is_initialized()`` true and can wrap the
    model in DistributedDataParallel whatever ``slots_per_trial`` is.
    """
    global _harness_group
    import torch
    import torch.distributed as dist

    _harness_group = True
    if backend == "nccl":
        torch.cuda.set_device(_cuda_device(cluster.local_rank))
    timeout = datetime.timedelta(seconds=timeout_s)
    if cluster.size == 1:
        # Public API, but only re-exported on non-Windows builds, which mypy cannot see.
        store = dist.HashStore()  # type: ignore[attr-defined]
        dist.init_process_group(backend, store=store, rank=0, world_size=1, timeout=timeout)
        return
    check_resolvable(cluster)
    dist.init_process_group(
        backend, init_method="env://", rank=cluster.rank, world_size=cluster.size, timeout=timeout
    )


def reachable_rendezvous(cluster: ClusterEnv, environ: Mapping[str, str]) -> ClusterEnv:
    """Swap an unresolvable first-node name for the node's address, when Slurm gives it.

    Node names in ``slurm.conf`` need not be host names (``NodeAddr=`` maps them). The
    batch script runs on the allocation's first node and starts ``srun`` there, so
    ``SLURM_LAUNCH_NODE_IPADDR`` is that node's address when the step starts on it.
    A ``MASTER_ADDR`` set by the user is left alone, and so are ranks ``mpiexec`` started
    (no such variable: their first host comes from ``$PBS_NODEFILE`` or MPI itself).
    """
    if cluster.size == 1 or environ.get("MASTER_ADDR") or _resolves(cluster):
        return cluster
    launch_ip = environ.get("SLURM_LAUNCH_NODE_IPADDR")
    job_nodes = environ.get("SLURM_JOB_NODELIST") or ""
    if launch_ip and job_nodes and first_host(job_nodes) == cluster.master_addr:
        return dataclasses.replace(cluster, master_addr=launch_ip)
    return cluster


def check_resolvable(cluster: ClusterEnv) -> None:
    """Fail now, with a fix, if the rendezvous host has no address.

    Otherwise every rank retries the name until the process-group timeout (30 minutes).
    """
    if not _resolves(cluster):
        raise HpcdetError(
            f"the rendezvous host {cluster.master_addr!r} (first node of the job) does not "
            "resolve; set MASTER_ADDR to its address in the experiment's "
            "environment.environment_variables"
        )


def _resolves(cluster: ClusterEnv) -> bool:
    try:
        socket.getaddrinfo(cluster.master_addr, cluster.master_port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    return True


def timeout_from_environ(environ: Mapping[str, str] | None = None) -> float:
    """Collective timeout in seconds: ``$HPCDET_DIST_TIMEOUT`` or 30 minutes."""
    env = os.environ if environ is None else environ
    raw = env.get(TIMEOUT_VAR)
    try:
        return float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise ValueError(f"{TIMEOUT_VAR}={raw!r} is not a number of seconds") from None


def imported_torch_distributed() -> Any | None:
    """``torch.distributed`` if this process has imported torch, else None (not importing it).

    No process group can exist before torch is imported, so asking about one must not be
    what loads torch into a trial that never uses it.
    """
    if "torch" not in sys.modules:
        return None
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    return dist


def is_initialized() -> bool:
    """Whether the default process group exists (False when torch is absent or not imported)."""
    dist = imported_torch_distributed()
    return bool(dist is not None and dist.is_available() and dist.is_initialized())


def teardown(*, barrier: bool) -> None:
    """Leave the process group; with ``barrier``, wait for every rank first.

    Callers pass ``barrier=False`` after a failure: the other ranks may never arrive.
    """
    global _harness_group
    _harness_group = False
    if not is_initialized():
        return
    import torch.distributed as dist

    try:
        if barrier:
            wait_for_all_ranks()
    finally:
        dist.destroy_process_group()


@contextmanager
def script_may_own_group() -> Iterator[None]:
    """While an in-process entrypoint runs, let it call ``init_process_group`` itself.

    Determined's scripts may create the default process group themselves
    (``dist.init_process_group("nccl")``), which fails when one exists ("trying to
    initialize the default process group twice"). Within this context, such a call first
    hands the harness's group over (:func:`hand_over_group`), then runs as the script
    wrote it: the script owns the group from then on. Scripts that never call it keep
    the harness's group.
    """
    patched: list[tuple[Any, Any]] = []  # (torch.distributed, its own init_process_group)
    active = True

    def patch(_torch: Any) -> None:
        try:
            import torch.distributed as dist
        except ImportError:
            return
        if not active or not dist.is_available():
            return
        real = dist.init_process_group

        def init_process_group(*args: Any, **kwargs: Any) -> Any:
            if _harness_group and dist.is_initialized():
                hand_over_group(uses_env=_uses_env_rendezvous(args, kwargs))
            return real(*args, **kwargs)

        dist.init_process_group = init_process_group
        patched.append((dist, real))

    # torch may not be imported yet: then the call is patched when the script imports it.
    when_imported("torch", patch)
    try:
        yield
    finally:
        active = False
        for dist, real in patched:
            dist.init_process_group = real


def hand_over_group(*, uses_env: bool, environ: dict[str, str] | None = None) -> None:
    """Leave the harness's group so that the script can create its own.

    A script rendezvousing over ``env://`` gets ``MASTER_PORT`` + 1: the harness's store
    may still hold its port on the first node for a moment (every rank computes the same
    new port, so they meet again).
    """
    global _harness_group
    import torch.distributed as dist

    env: Any = os.environ if environ is None else environ
    dist.destroy_process_group()
    _harness_group = False
    where = "its own rendezvous"
    if uses_env and str(env.get("MASTER_PORT", "")).isdigit():
        env["MASTER_PORT"] = str(int(env["MASTER_PORT"]) + SCRIPT_GROUP_PORT_OFFSET)
        where = f"env:// on {env.get('MASTER_ADDR')}:{env['MASTER_PORT']}"
    print(f"hpcdet harness: the entrypoint creates its own process group ({where}); the "
          "harness's group is handed over to it", file=sys.stderr, flush=True)


def _uses_env_rendezvous(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``init_process_group(*args, **kwargs)`` rendezvous over ``env://``."""
    init_method = args[1] if len(args) > 1 else kwargs.get("init_method")
    return kwargs.get("store") is None and init_method in (None, "env://")


def wait_for_all_ranks() -> None:
    """``torch.distributed.barrier()``, naming this rank's GPU for NCCL.

    Without ``device_ids`` NCCL guesses the device from the rank and warns about it.
    """
    import torch
    import torch.distributed as dist

    if dist.get_backend() == "nccl":
        dist.barrier(device_ids=[torch.cuda.current_device()])
    else:
        dist.barrier()


def _cuda_device(local_rank: int) -> int:
    """The GPU for this rank: ``local_rank``, unless Slurm bound one GPU per task."""
    import torch

    count = torch.cuda.device_count()
    # With --gpus-per-task=1 every task sees exactly one device, index 0.
    return local_rank if local_rank < count else 0
