"""``hpcdet.core.init()``: build the real contexts in a job, dummy twins elsewhere."""

from __future__ import annotations

import atexit
import json
import os
import pathlib
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from hpcdet.client import MasterClient
from hpcdet.core._checkpoint import CheckpointContext, DummyCheckpointContext
from hpcdet.core._distributed import DistributedContext, DummyDistributedContext
from hpcdet.core._info import Info
from hpcdet.core._preempt import (
    DummyPreemptContext,
    PreemptContext,
    PreemptionWatcher,
    PreemptMode,
    poll_interval_from_environ,
)
from hpcdet.core._profiler import ProfilerContext, ProfilerScope, ReporterSink
from hpcdet.core._reporter import (
    Backoff,
    MetricsReporter,
    StreamIdentity,
    close_timeout_from_environ,
    post_with_retry,
)
from hpcdet.core._searcher import SearcherContext, dummy_searcher_context, searcher_context
from hpcdet.core._spool import spool_dir
from hpcdet.core._tensorboard_mode import TensorboardMode
from hpcdet.core._train import (
    BestValidationFetcher,
    DummyTrainContext,
    EarlyExitPoster,
    ProgressPoster,
    TrainContext,
)
from hpcdet.errors import MasterError
from hpcdet.job import process_group
from hpcdet.job.cluster_env import ClusterEnv
from hpcdet.job.early_exit import EarlyExitReason
from hpcdet.job.trial_info import (
    TrialInfo,
    load_trial_info,
    master_cert_file,
    read_token,
    trial_info_path,
)
from hpcdet.jobfiles import restart_count
from hpcdet.storage import object_store_for

DEFAULT_LOCAL_CHECKPOINTS = "checkpoints"
# Registering a checkpoint or an early exit is rare and matters: retry for a few minutes,
# then fail loudly.
_REGISTER_BACKOFF = Backoff(initial=1.0, maximum=30.0, attempts=10)
# Progress is informational and reported often: a few quick tries, then it is skipped.
_PROGRESS_BACKOFF = Backoff(initial=0.5, maximum=2.0, attempts=3)
# The preemption poll is a GET the watcher repeats anyway: a hung master must not hold up
# closing the context for the client's default 30 s.
_POLL_TIMEOUT = 10.0

_open_contexts: list[Context] = []
_open_lock = threading.Lock()


class Context:
    """Everything a training script uses to talk to hpcdet; make it with :func:`init`.

    ``train`` reports metrics, ``checkpoint`` saves and restores, ``preempt`` says when
    to stop, ``distributed`` knows the ranks, ``info`` the trial, ``searcher`` yields
    Determined 0.38's one (deprecated) searcher operation. Close it (or use it as a
    context manager) so queued metrics reach the master.
    """

    def __init__(
        self,
        *,
        distributed: DistributedContext,
        train: TrainContext,
        checkpoint: CheckpointContext,
        preempt: PreemptContext,
        info: Info,
        cleanup: list[Callable[[], None]] | None = None,
        profiler: ProfilerContext | None = None,
        searcher: SearcherContext | None = None,
    ) -> None:
        self.distributed = distributed
        self.searcher = searcher or dummy_searcher_context(distributed)
        self.train = train
        self.checkpoint = checkpoint
        self.preempt = preempt
        self.info = info
        self.profiler = profiler or ProfilerContext()
        self._cleanup = cleanup or []
        self._closed = False
        with _open_lock:
            _open_contexts.append(self)

    def __enter__(self) -> Context:
        return self

    def add_cleanup(self, step: Callable[[], None]) -> None:
        """Run ``step`` when the context closes (before what was added earlier)."""
        self._cleanup.append(step)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.close()
            return
        try:
            self.close()
        except Exception as close_exc:  # do not hide the exception already on its way out
            print(f"hpcdet core: while closing after an error: {close_exc}", file=sys.stderr)

    def close(self) -> None:
        """Ship queued metrics, then release the master connection; idempotent."""
        if self._closed:
            return
        self._closed = True
        with _open_lock:
            if self in _open_contexts:
                _open_contexts.remove(self)
        try:
            self.profiler.close()
            self.train.close()
        finally:
            for step in reversed(self._cleanup):
                step()


# The '*': parameters will be added, and keyword-only arguments can grow in any order
# without breaking callers (Determined's init() makes the same choice).
def init(
    *,
    distributed: DistributedContext | None = None,
    checkpoint_storage: str | os.PathLike[str] | None = None,
    hparams: dict[str, Any] | None = None,
    preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    tensorboard_mode: TensorboardMode = TensorboardMode.AUTO,
) -> Context:
    """Start the Core API.

    Inside a hpcdet job (``$DET_TRIAL_INFO`` is set) the contexts talk to the master;
    anywhere else they are dummies, so the same script runs on a laptop: metrics go to
    stderr, checkpoints to ``checkpoint_storage`` (default ``./checkpoints``) and
    ``info.hparams`` is ``hparams`` (default ``{}``).

    In a job the chief also asks the master every ``$HPCDET_PREEMPT_POLL_SECONDS``
    seconds (default 5) whether the trial should stop, for ``preempt.should_preempt()``;
    a value that is not a number > 0 raises ValidationError here.

    Arguments:
        distributed: use this instead of the ranks the harness set up.
        checkpoint_storage: the local checkpoint directory of a run outside a job. In a
            job the trial's ``checkpoint_dir`` is used, as the master must find them.
        hparams: hyperparameters of a run outside a job (ignored in a job).
        preempt_mode: who calls ``preempt.should_preempt()`` (:class:`PreemptMode`).
        tensorboard_mode: accepted for Determined's signature (:class:`TensorboardMode`);
            hpcdet writes and uploads no TensorBoard files in either mode.

    Example::

        import hpcdet.core

        with hpcdet.core.init() as core_context:
            lr = core_context.info.hparams.get("lr", 0.1)
            for step in range(1, 101):
                loss = train_step(lr)
                core_context.train.report_training_metrics(step, {"loss": loss})
    """
    TensorboardMode(tensorboard_mode)  # refuse what Determined refuses
    mode = PreemptMode(preempt_mode)
    if trial_info_path() is None:
        context = _dummy_init(distributed, checkpoint_storage, hparams)
    else:
        context = _real_init(load_trial_info(), distributed, checkpoint_storage)
    # Both builders make a default-mode PreemptContext (real or dummy); the mode only
    # changes how should_preempt() asks, so swap in one of the same class with it.
    context.preempt = type(context.preempt)(context.distributed, mode)
    return context


def close_open_contexts() -> None:
    """Close every context a script left open (the harness calls this after it)."""
    with _open_lock:
        contexts = list(_open_contexts)
    errors = []
    for context in contexts:
        try:
            context.close()
        except Exception as exc:  # close the others anyway, then report the first
            errors.append(exc)
    if errors:
        raise errors[0]


atexit.register(close_open_contexts)


def _dummy_init(
    distributed: DistributedContext | None,
    checkpoint_storage: str | os.PathLike[str] | None,
    hparams: dict[str, Any] | None,
) -> Context:
    return dummy_context(distributed or DummyDistributedContext(), Info.dummy(hparams),
                         checkpoint_storage)


def dummy_context(dist: DistributedContext, info: Info,
                  checkpoint_storage: str | os.PathLike[str] | None) -> Context:
    """The Core API outside a job: metrics printed, checkpoints in a local directory."""
    train = DummyTrainContext(dist)
    storage = pathlib.Path(checkpoint_storage or DEFAULT_LOCAL_CHECKPOINTS).absolute()
    return Context(
        distributed=dist,
        train=train,
        checkpoint=DummyCheckpointContext(storage, dist, info=info, train=train),
        preempt=DummyPreemptContext(dist),
        info=info,
    )


def _real_init(
    trial: TrialInfo,
    distributed: DistributedContext | None,
    checkpoint_storage: str | os.PathLike[str] | None,
) -> Context:
    # An unmanaged trial.json comes from `det experiment create --dry-run`: the job was
    # submitted by hand and no trial exists in the master, so nothing is reported to it.
    unmanaged = bool(trial.extra.get("unmanaged"))
    # Every rank checks the settings, so a bad value stops them all alike.
    poll_seconds = None if unmanaged else poll_interval_from_environ()
    if not unmanaged:
        close_timeout_from_environ()
    cleanup: list[Callable[[], None]] = []
    dist = distributed or _distributed_from_job(trial, cleanup)
    _warn_ignored_storage(trial, checkpoint_storage)
    if unmanaged:
        return trial_context(trial, dist, None, cleanup, poll_seconds=None)
    return trial_context(trial, dist, lambda timeout: trial_client(trial, timeout=timeout),
                        cleanup, poll_seconds=poll_seconds)


# Opens a client of the trial's master with the trial's token; the argument is its timeout.
Connect = Callable[[float], MasterClient]


def trial_context(
    trial: TrialInfo,
    dist: DistributedContext,
    connect: Connect | None,
    cleanup: list[Callable[[], None]],
    *,
    poll_seconds: float | None,
    every_rank_reports: bool = False,
    context_class: type[Context] | None = None,
) -> Context:
    """The contexts of one trial run; ``connect`` None: nothing is reported.

    ``every_rank_reports``: each rank ships its own metric reports (Determined's unmanaged
    trials), not only the chief.
    """
    info = Info.from_trial_info(trial)
    reports = dist.is_chief or every_rank_reports
    client = _opened(connect, cleanup) if connect is not None and reports else None
    reporter = _reporter(client, trial, dist.rank) if client is not None else None
    chief = client if dist.is_chief else None
    progress = progress_poster(chief, trial.trial_id) if chief is not None else None
    train = (DummyTrainContext(dist) if connect is None
             else _train_context(trial, dist, chief, reporter, progress))
    if chief is not None and connect is not None and poll_seconds is not None:
        _watch_preemption(trial, connect, poll_seconds, cleanup)
    checkpoint = CheckpointContext(
        pathlib.Path(trial.checkpoint_dir),
        dist,
        info=info,
        train=train,
        registrar=_registrar(reporter) if reporter and dist.is_chief else None,
        storage=object_store_for(trial.experiment_config),
    )
    return (context_class or Context)(
        distributed=dist,
        train=train,
        checkpoint=checkpoint,
        preempt=PreemptContext(dist),
        info=info,
        cleanup=cleanup,
        profiler=_profiler(trial, dist, reporter if dist.is_chief else None, connect),
        searcher=searcher_context(dist, trial.experiment_config, progress),
    )


def _opened(connect: Connect, cleanup: list[Callable[[], None]]) -> MasterClient:
    client = connect(30.0)
    cleanup.append(client.close)
    return client


def _distributed_from_job(
    trial: TrialInfo, cleanup: list[Callable[[], None]]
) -> DistributedContext:
    return distributed_from_environment(trial.experiment_config, cleanup)


def distributed_from_environment(
    config: Mapping[str, Any], cleanup: list[Callable[[], None]]
) -> DistributedContext:
    """The harness's process group; the chief's store, for an in-process script that has
    not imported torch (the harness joins the group only when it does); or a group of our
    own when the entrypoint ran as a subprocess."""
    if process_group.is_initialized():
        return DistributedContext.from_torch_distributed()
    cluster = ClusterEnv.from_environ(_ranks_environ(os.environ))
    if cluster.size == 1:
        return DummyDistributedContext()
    if process_group.join_deferred():
        return DistributedContext(
            rank=cluster.rank, size=cluster.size, local_rank=cluster.local_rank,
            local_size=cluster.local_size, cross_rank=cluster.cross_rank,
            cross_size=cluster.cross_size, chief_ip=cluster.master_addr)
    cluster = cluster.export_torch_env()
    backend = process_group.choose_backend(process_group.slot_type(os.environ, config))
    timeout_s = process_group.timeout_from_environ()
    process_group.init_process_group(cluster, backend, timeout_s=timeout_s)
    cleanup.append(lambda: process_group.teardown(barrier=False))
    return DistributedContext.from_torch_distributed()


def _ranks_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """Slurm's view, overridden by ``env://`` variables when set (harness or torchrun)."""
    env = dict(environ)
    if "RANK" in env and "WORLD_SIZE" in env:
        renames = {
            "RANK": "SLURM_PROCID",
            "WORLD_SIZE": "SLURM_NTASKS",
            "LOCAL_RANK": "SLURM_LOCALID",
            "LOCAL_WORLD_SIZE": "SLURM_STEP_TASKS_PER_NODE",
            "GROUP_RANK": "SLURM_NODEID",
            "GROUP_WORLD_SIZE": "SLURM_STEP_NUM_NODES",
        }
        env.update({slurm: env[name] for name, slurm in renames.items() if name in env})
    return env


def trial_client(trial: TrialInfo, *, timeout: float = 30.0) -> MasterClient:
    """A client for the trial's master with its token (and, over TLS, its certificate)."""
    return MasterClient(trial.master_url, token=read_token(trial), timeout=timeout,
                        cert_file=master_cert_file(trial))


def _train_context(
    trial: TrialInfo,
    dist: DistributedContext,
    chief: MasterClient | None,
    reporter: MetricsReporter | None,
    progress: ProgressPoster | None,
) -> TrainContext:
    """``chief``: the chief's client (None on other ranks); ``reporter``: this rank's, if it
    ships reports (the chief's; every rank's in an unmanaged trial)."""
    if chief is None or reporter is None:
        return TrainContext(dist, reporter, every_rank=reporter is not None)
    return TrainContext(dist, reporter, early_exit_poster(chief, trial.trial_id),
                        best_validation_fetcher(chief, trial.trial_id), progress)


def _profiler(
    trial: TrialInfo,
    dist: DistributedContext,
    chief_reporter: MetricsReporter | None,
    connect: Connect | None,
) -> ProfilerContext:
    """The chief shares the train reporter; other ranks open their own once profiling is on.

    Each rank reports its own timings (a gather to the chief would need every rank to
    call a collective at the same moment); every rank can, as each reads the trial's token.
    """
    scope = ProfilerScope.of_rank(dist.rank, dist.size, dist.local_rank, dist.cross_size,
                                  _node_name())
    if connect is None:
        return ProfilerContext(scope=scope)
    if chief_reporter is not None:
        return ProfilerContext(lambda: ReporterSink(chief_reporter), scope=scope)
    return ProfilerContext(lambda: _rank_sink(trial, dist.rank, connect), scope=scope)


def _rank_sink(trial: TrialInfo, rank: int, connect: Connect) -> ReporterSink:
    """A reporter of this rank's own, closed (with its client) by the profiler."""
    client = connect(30.0)
    reporter = _reporter(client, trial, rank)

    def close() -> None:
        try:
            reporter.close()
        finally:
            client.close()

    return ReporterSink(reporter, on_close=close)


def _node_name() -> str:
    """Slurm's name for this node, else the short host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def _watch_preemption(
    trial: TrialInfo, connect: Connect, poll_seconds: float, cleanup: list[Callable[[], None]]
) -> None:
    """Start the chief's preemption watcher; it has a client of its own (see _POLL_TIMEOUT)."""
    client = connect(_POLL_TIMEOUT)
    watcher = PreemptionWatcher(client, trial.trial_id, interval=poll_seconds)
    watcher.start()
    cleanup.append(watcher.close)


def best_validation_fetcher(client: MasterClient, trial_id: int) -> BestValidationFetcher:
    """Reads the experiment's best searcher metric; None when the master cannot say."""

    def fetch() -> float | None:
        try:
            best = client.get(f"/trials/{trial_id}/experiment_best_validation").get("best")
        except MasterError:
            return None  # a transient error costs at most one checkpoint, not the trial
        return None if best is None else float(best)

    return fetch


def progress_poster(client: MasterClient, trial_id: int) -> ProgressPoster:
    """Posts the trial's progress; a failure is printed, not raised (it is informational)."""

    def post(progress: float) -> None:
        try:
            post_with_retry(client, f"/trials/{trial_id}/progress", {"progress": progress},
                            backoff=_PROGRESS_BACKOFF)
        except MasterError as exc:
            print(f"hpcdet core: reporting progress {progress:.4g} failed: {exc}",
                  file=sys.stderr)

    return post


def early_exit_poster(client: MasterClient, trial_id: int) -> EarlyExitPoster:
    """Posts an early exit of trial ``trial_id`` through ``client``, with retries."""

    def post(reason: EarlyExitReason) -> None:
        body = {"reason": reason.value}
        post_with_retry(client, f"/trials/{trial_id}/early_exit", body, backoff=_REGISTER_BACKOFF)

    return post


def report_job_early_exit(trial: TrialInfo, reason: EarlyExitReason) -> bool:
    """Report ``reason`` for ``trial`` on a client of its own; the harness's chief calls it.

    The script's core context may be closed by then (an exception left its ``with``).
    Returns False for an unmanaged trial, which has no master to tell (nothing is sent).
    Raises HpcdetError when the report cannot be delivered.
    """
    if trial.extra.get("unmanaged"):
        return False
    with trial_client(trial) as client:
        early_exit_poster(client, trial.trial_id)(reason)
    return True


def _reporter(client: MasterClient, trial: TrialInfo, rank: int) -> MetricsReporter:
    """The reporter of ``rank``: one stream of this execution, spooled in the job directory."""
    stream = stream_identity(trial, rank, os.environ)
    where = (spool_dir(trial.job_dir, stream.run_id, stream.requeue, rank)
             if trial.job_dir else None)
    return MetricsReporter(client, trial.trial_id, close_timeout=close_timeout_from_environ(),
                           stream=stream, spool_dir=where)


def stream_identity(trial: TrialInfo, rank: int, environ: Mapping[str, str]) -> StreamIdentity:
    """Which execution reports (run, the scheduler's restart count), as which rank, resumed
    from what."""
    uuid = trial.latest_checkpoint
    steps = resumed_steps(pathlib.Path(trial.checkpoint_dir), uuid) if uuid else 0
    return StreamIdentity(run_id=trial.run_id, requeue=restart_count(environ),
                          rank=rank, resumed_uuid=uuid, resumed_steps=steps)


def resumed_steps(checkpoint_dir: pathlib.Path, uuid: str) -> int:
    """``steps_completed`` in the checkpoint's ``metadata.json``; 0 if it cannot be read."""
    try:
        steps = json.loads((checkpoint_dir / uuid / "metadata.json").read_text()).get(
            "steps_completed")
    except (OSError, ValueError, AttributeError):
        return 0
    return steps if isinstance(steps, int) and not isinstance(steps, bool) and steps >= 0 else 0


def _registrar(reporter: MetricsReporter) -> Callable[[dict[str, Any]], None]:
    """Registrations go through the reporter, in order with the reports before them."""
    return reporter.register_checkpoint


def _warn_ignored_storage(trial: TrialInfo, storage: str | os.PathLike[str] | None) -> None:
    if storage is not None and pathlib.Path(storage) != pathlib.Path(trial.checkpoint_dir):
        print(
            f"hpcdet core: checkpoint_storage={os.fspath(storage)!r} ignored in a job; "
            f"checkpoints go to {trial.checkpoint_dir}",
            file=sys.stderr,
        )
