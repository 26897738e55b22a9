"""The TensorBoard task's main loop: sync, serve, announce, keep syncing.

1. Copy every metric so far into ``<logdir>`` (emptied first: a requeued job starts over).
2. Start ``tensorboard --logdir <logdir> --path_prefix /proxy/<task id> --host 0.0.0.0
   --port <free port> --reload_interval 5`` behind the task's secret (:mod:`.guard`: a
   request without the master proxy's ``Authorization: token <secret>`` gets 401) and
   wait until it answers.
3. Write ``$DET_TASK_DIR/service.json`` (``{"host": <this node>, "port": <port>}``),
   atomically, for the master's proxy.
4. Every ``interval`` seconds copy what is new, until TensorBoard exits or the job is
   cancelled (SIGTERM: TensorBoard is stopped too).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from hpcdet.errors import HpcdetError
from hpcdet.job.secret_file import read_secret
from hpcdet.services.service_file import TOKEN_FILE, free_port, node_name, write_service_file
from hpcdet.tensorboard.sync import Syncer

RELOAD_SECONDS = 5
START_SECONDS = 120  # TensorBoard's first start on a cold node imports a lot
PORT_TRIES = 3


def tensorboard_argv(logdir: Path, path_prefix: str, port: int, token_file: Path) -> list[str]:
    """The TensorBoard command line (this Python's ``tensorboard``, behind :mod:`.guard`,
    which reads the secret from ``token_file``: nothing secret on the command line)."""
    return [sys.executable, "-m", "hpcdet.tensorboard.guard", "--logdir", str(logdir),
            "--path_prefix", path_prefix, "--host", "0.0.0.0", "--port", str(port),
            "--reload_interval", str(RELOAD_SECONDS), "--load_fast", "false",
            "--token-file", str(token_file)]


def answers(url: str, token: str) -> bool:
    """True once ``url`` answers HTTP at all (asked with the task's secret)."""
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2):  # noqa: S310
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def task_secret(task_dir: Path) -> tuple[Path, str]:
    """The task's secret file and the secret; :class:`HpcdetError` when there is none
    (TensorBoard is never served without it)."""
    path = task_dir / TOKEN_FILE
    return path, read_secret(path, "the task's secret", HpcdetError)


def start_tensorboard(logdir: Path, path_prefix: str,
                      task_dir: Path) -> tuple[subprocess.Popen[bytes], int]:
    """TensorBoard, started behind the task's secret and answering; the process and its
    port."""
    token_file, token = task_secret(task_dir)
    for _ in range(PORT_TRIES):
        port = free_port()
        process = subprocess.Popen(tensorboard_argv(logdir, path_prefix, port, token_file))
        deadline = time.monotonic() + START_SECONDS
        while process.poll() is None and time.monotonic() < deadline:
            if answers(f"http://127.0.0.1:{port}{path_prefix}/", token):
                return process, port
            time.sleep(0.5)
        if process.poll() is None:
            process.kill()
            raise HpcdetError(f"TensorBoard did not answer on port {port} within "
                              f"{START_SECONDS} s")
    raise HpcdetError(f"TensorBoard exited {PORT_TRIES} times before it answered "
                      "(see the lines above)")


def sync_logged(syncer: Syncer) -> int:
    """One sync; a master that does not answer now is reported and tried again later."""
    try:
        written = syncer.sync()
    except HpcdetError as exc:
        print(f"hpcdet.tensorboard: could not read metrics: {exc}", file=sys.stderr,
              flush=True)
        return 0
    if written:
        print(f"hpcdet.tensorboard: wrote {written} new points", flush=True)
    return written


class StopFlag:
    """Set by SIGTERM (scancel, qdel) once :meth:`install` ran; tests set it themselves."""

    def __init__(self) -> None:
        self.stopped = False

    def install(self) -> StopFlag:
        """Stop on SIGTERM (from the main thread only, as Python's signals go)."""
        signal.signal(signal.SIGTERM, self._on_term)
        return self

    def _on_term(self, _signum: int, _frame: FrameType | None) -> None:
        self.stopped = True


def run(syncer: Syncer, logdir: Path, task_dir: Path, path_prefix: str, *,
        interval: float, stop: StopFlag,
        sleep: Callable[[float], None] = time.sleep) -> int:
    """Steps 1-4 of the module doc; TensorBoard's exit status (0 when stopped)."""
    sync_logged(syncer)
    process, port = start_tensorboard(logdir, path_prefix, task_dir)
    try:
        where = write_service_file(task_dir, port)
        print(f"hpcdet.tensorboard: TensorBoard serves {path_prefix}/ on "
              f"{node_name()}:{port} ({where})", flush=True)
        while not stop.stopped and process.poll() is None:
            sleep(interval)
            sync_logged(syncer)
    finally:
        syncer.close()
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
    return 0 if stop.stopped else (process.returncode or 0)


def fresh_logdir(logdir: Path) -> Path:
    """``logdir``, emptied (a requeued job writes every point again)."""
    shutil.rmtree(logdir, ignore_errors=True)
    logdir.mkdir(parents=True)
    return logdir


def task_id_from(environ: dict[str, str], task_dir: Path) -> str:
    """``DET_TASK_ID``, else the id in the job directory's name (``task-<id>``)."""
    found = environ.get("DET_TASK_ID") or task_dir.name.removeprefix("task-")
    if not found.isdigit():
        raise HpcdetError(f"no task id: DET_TASK_ID is not set and {task_dir} is not a "
                          "task's job directory")
    return found


def parse_ids(values: Sequence[str]) -> list[int]:
    """``["1,2", "3"]`` is ``[1, 2, 3]``."""
    ids = [word for value in values for word in value.split(",") if word]
    if not all(word.isdigit() for word in ids):
        raise HpcdetError(f"ids must be whole numbers: {' '.join(values)}")
    return [int(word) for word in ids]
