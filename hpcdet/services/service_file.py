"""``$DET_TASK_DIR/service.json``: how a job tells the master where its service listens.

Written atomically (a temporary file, then a rename) once the service answers, read by the
master's reconciler (``hpcdet.master.proxy.registration``).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from pathlib import Path

SERVICE_FILE = "service.json"
TOKEN_FILE = "service_token"
SERVICE_FILE_MODE = 0o640
# A munge master's API token of the task's owner (0600; hpcdet.master.scheduling.task_tokens).
USER_TOKEN_FILE = "user_token"


def free_port() -> int:
    """A port free on this node now (the service binds it a moment later)."""
    with socket.socket() as sock:
        sock.bind(("", 0))
        return int(sock.getsockname()[1])


def read_token(task_dir: Path) -> str:
    """The task's secret, from the 0600 file the master wrote into the job directory."""
    return (task_dir / TOKEN_FILE).read_text(encoding="utf-8").strip()


def owner_token(task_dir: Path | None) -> str | None:
    """The owner's API token the master wrote into the job directory, if it wrote one (an
    open master believes ``DET_USER`` instead)."""
    path = None if task_dir is None else task_dir / USER_TOKEN_FILE
    if path is None or not path.exists():
        return None
    return path.read_text(encoding="utf-8").strip() or None


def remove_service_file(task_dir: Path) -> None:
    """Forget an address a previous run of the job (before a requeue) wrote."""
    (task_dir / SERVICE_FILE).unlink(missing_ok=True)


def node_name(environ: Mapping[str, str] | None = None) -> str:
    """This node as the master should find it: under PBS the host PBS placed the job on
    (the first line of ``$PBS_NODEFILE``, the mom's name, which the master's poll knows),
    else the host name (Slurm: its NodeHostName, which the master looks up)."""
    env = os.environ if environ is None else environ
    nodefile = env.get("PBS_NODEFILE")
    if nodefile:
        try:
            with open(nodefile, encoding="utf-8") as lines:
                first = lines.readline().strip()
        except OSError:
            first = ""
        if first:
            return first
    return socket.gethostname()


def write_service_file(task_dir: Path, port: int, host: str | None = None) -> Path:
    """Write ``{"host": <this node's name, node_name()>, "port": port}`` atomically."""
    path = task_dir / SERVICE_FILE
    temporary = task_dir / f".{SERVICE_FILE}.{os.getpid()}"
    # Owner and group only (the group bits carry the master's ACL in a shared job root).
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, SERVICE_FILE_MODE)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"host": host or node_name(), "port": port}))
    os.chmod(temporary, SERVICE_FILE_MODE)
    os.replace(temporary, path)
    return path
