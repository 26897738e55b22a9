"""prometheus_client's multiprocess mode for the master's processes.

Each process writes its counters to files in one directory (``PROMETHEUS_MULTIPROC_DIR``),
read and summed at each scrape. The directory is private to the master (0700 under its
state dir) and new at every start, ``<state_dir>/prometheus/<pid of det-master>``: files of a
previous run would add their counts to this one's. Directories of masters no longer running
are removed then; a running master's are left alone (a second ``det-master`` started by
mistake on the same state dir, refused later because the port is taken, must not wipe the
first one's counts). The variable must be set before prometheus_client is first imported
(it picks its value class then), and is inherited by the gunicorn workers and the reconciler.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path

log = logging.getLogger(__name__)

ENV = "PROMETHEUS_MULTIPROC_DIR"
DIR_NAME = "prometheus"


def prepare(state_dir: str | Path) -> Path:
    """Create this master's own metrics directory, remove those of masters that ended, and
    point this process's children at it."""
    base = Path(state_dir).expanduser() / DIR_NAME
    if "prometheus_client" in sys.modules:  # counters would stay in memory, per process
        log.warning("prometheus_client was imported before %s was set: /metrics shows one "
                    "process's counters only", ENV)
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    base.chmod(0o700)
    for entry in base.iterdir():
        if entry.name.isdigit() and _running(int(entry.name)):
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    path = base / str(os.getpid())
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(mode=0o700)
    os.environ[ENV] = str(path)
    return path


def _running(pid: int) -> bool:
    """Whether a process ``pid`` exists (a master that ended leaves its directory behind)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: not this master's, but alive
        return True
    return True


def enabled() -> bool:
    """Whether this process writes its metrics for the others (the master runs)."""
    return bool(os.environ.get(ENV))


def process_exited(pid: int) -> None:
    """Forget the live gauges of a process that ended (a gunicorn worker, the reconciler):
    its connections are no longer in use. Its counters stay: they still count."""
    if enabled():
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
