"""One unmanaged trial run: asked of the master by the chief, reported with its token.

The chief creates (or finds, by the script's external ids) the experiment and the trial
through the caller's own session (``det``'s login, ``DET_USER_TOKEN``, TLS), then hands
the trial's token and trial.json to every rank. From there the run uses the Core API's
own contexts, as a job of the master would, except that every rank ships its metrics
(Determined's unmanaged trials do) and nothing is spooled in a job directory. The chief
sends a heartbeat every minute and, at the end, the trial's outcome.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import sys
import tempfile
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

import yaml

from hpcdet.client import MasterClient
from hpcdet.core import _context as core_context
from hpcdet.core._distributed import DistributedContext
from hpcdet.errors import MasterError
from hpcdet.job.trial_info import TrialInfo

HEARTBEAT_SECONDS = 60.0
# The scheduler job a script runs in, linked to its trial: its end ends the trial.
_JOB_VARIABLES = ("SLURM_JOB_ID", "PBS_JOBID")


@dataclasses.dataclass(frozen=True)
class RunStart:
    """What the chief hands every rank: where the master is, the trial, its token."""

    master_url: str
    cert_file: str | None
    trial_info: dict[str, Any]
    token: str


def start_run(session: Any, config: dict[str, Any], *, external_experiment_id: str | None,
              external_trial_id: str | None, hparams: dict[str, Any] | None,
              workspace: str | None, project: str | None) -> RunStart:
    """Create or find the experiment and start a run of its trial (the chief only)."""
    body: dict[str, Any] = {"unmanaged": True, "config": yaml.safe_dump(config),
                            "external_id": external_experiment_id}
    if workspace:
        body.update(workspace=workspace, project=project)
    exp = session.post("/experiments", body)["experiment"]
    job = next((os.environ[v] for v in _JOB_VARIABLES if os.environ.get(v)), None)
    answer = session.post(f"/experiments/{exp['id']}/trials", {
        "hparams": hparams or {}, "external_id": external_trial_id, "job": job})
    info = dict(answer["trial_info"])
    info["master_url"] = session.url  # the address this script reached it at
    return RunStart(session.url, session.client.cert_file, info, str(answer["token"]))


def on_every_rank(dist: DistributedContext, make: Callable[[], RunStart]) -> RunStart:
    """``make()`` on the chief, its result (or its error) on every rank."""
    result: RunStart | BaseException | None = None
    if dist.is_chief:
        try:
            result = make()
        except Exception as exc:  # every rank must leave the broadcast, then fail alike
            result = exc
    result = dist.broadcast(result) if dist.size > 1 else result
    if isinstance(result, BaseException):
        raise result
    assert result is not None
    return result


def trial_of(start: RunStart) -> TrialInfo:
    """The run's TrialInfo; an object store's staging directory is a private local one."""
    data = dict(start.trial_info)
    storage = data["experiment_config"].get("checkpoint_storage") or {}
    if storage.get("type") not in ("shared_fs", "directory"):
        data["checkpoint_dir"] = tempfile.mkdtemp(prefix=f"hpcdet-trial-{data['trial_id']}-")
    pathlib.Path(data["checkpoint_dir"]).mkdir(parents=True, exist_ok=True)
    return TrialInfo.from_dict(data)


class RunReporter:
    """The chief's heartbeat thread and the outcome it reports when the run closes."""

    def __init__(self, connect: Callable[[float], MasterClient], trial_id: int) -> None:
        self._client = connect(10.0)
        self._trial_id = trial_id
        self._stop = threading.Event()
        self.failure: str | None = None
        self._thread = threading.Thread(target=self._beat, name="hpcdet-heartbeat",
                                        daemon=True)
        self._hooks = _ExitHooks(self)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                self._client.patch(f"/trials/{self._trial_id}", {})
            except MasterError as exc:  # the next beat tries again
                print(f"hpcdet core_v2: heartbeat failed: {exc}", file=sys.stderr)

    def close(self) -> None:
        """Stop beating and report COMPLETED, or ERROR if the script failed."""
        self._stop.set()
        self._hooks.restore()
        # The client is not shared between threads: a beat under way finishes first.
        self._thread.join(timeout=15.0)
        state = "ERROR" if self.failure else "COMPLETED"
        try:
            self._client.patch(f"/trials/{self._trial_id}", {"state": state})
        except MasterError as exc:
            print(f"hpcdet core_v2: reporting the trial {state} failed: {exc}",
                  file=sys.stderr)
        finally:
            self._client.close()


class _ExitHooks:
    """Notes an uncaught exception or a non-zero ``sys.exit`` as the run's failure."""

    def __init__(self, reporter: RunReporter) -> None:
        self._reporter = reporter
        self._excepthook, self._exit = sys.excepthook, sys.exit
        sys.excepthook, sys.exit = self._on_exception, self._on_exit  # type: ignore[assignment]

    def _on_exception(self, kind: type[BaseException], exc: BaseException,
                      tb: TracebackType | None) -> None:
        self._reporter.failure = f"{kind.__name__}: {exc}"
        self._excepthook(kind, exc, tb)

    def _on_exit(self, code: Any = 0) -> None:
        if code not in (0, None):
            self._reporter.failure = f"exit code {code}"
        self._exit(code)

    def restore(self) -> None:
        if sys.excepthook == self._on_exception:
            sys.excepthook = self._excepthook
        if sys.exit == self._on_exit:
            sys.exit = self._exit


class UnmanagedContext(core_context.Context):
    """A core context whose ``with`` block's exception marks the trial ERROR."""

    run_reporter: RunReporter | None = None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is not None and self.run_reporter is not None:
            self.run_reporter.failure = f"{type(exc).__name__}: {exc}"
        super().__exit__(exc_type, exc, tb)
