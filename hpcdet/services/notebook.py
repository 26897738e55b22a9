"""The job side of ``det notebook``: JupyterLab behind the master's proxy.

``python -m hpcdet.services.notebook`` (the notebook task's script runs it in its working
directory) starts ``jupyter lab`` from this same Python on a free port, serving under
``/proxy/<task id>/``, with the task's secret as its token: read from the job directory's
0600 ``service_token`` and handed over in a 0600 config file of a private config
directory, never on a command line or in the environment. Once Jupyter answers it writes
``service.json``; then it waits for Jupyter and exits with its exit code. A SIGTERM (the
job cancelled) is passed on. On a munge master the job directory also holds the owner's API
token (``user_token``, 0600): it becomes ``DET_USER_TOKEN`` in Jupyter's environment (its
own user's processes only), so ``det`` and hpcdet's client in the kernel act as the owner.

Idle timeout (``HPCDET_NOTEBOOK_IDLE_SECONDS``, from the config's ``idle_timeout``):
Jupyter's own activity tracking ends it. Kernels idle that long are culled (connected or
not), and a server with no kernel or terminal and no request for that long shuts down
(``ServerApp.shutdown_no_activity_timeout``; Jupyter checks once a minute), so the job
ends with exit code 0 and the task COMPLETED.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from hpcdet.services.service_file import (
    free_port,
    owner_token,
    read_token,
    remove_service_file,
    write_service_file,
)

IDLE_ENV = "HPCDET_NOTEBOOK_IDLE_SECONDS"
# The owner's API token (a munge master writes it, 0600), and where det looks for one.
USER_TOKEN_ENV = "DET_USER_TOKEN"
START_SECONDS = 600.0


def jupyter_config(token: str, root_dir: str, idle_seconds: int | None) -> dict[str, Any]:
    """Jupyter's settings (``jupyter_server_config.json``): the token, and idle culling."""
    config: dict[str, Any] = {
        "IdentityProvider": {"token": token},
        "ServerApp": {"root_dir": root_dir, "open_browser": False,
                      # The master's proxy authenticates callers and adds the token;
                      # the browser's origin is the master's.
                      "allow_remote_access": True, "trust_xheaders": True,
                      # The job runs as whom the scheduler runs it (root in a dev cluster).
                      "allow_root": os.geteuid() == 0},
        "LabApp": {"news_url": None, "check_for_updates_class":
                   "jupyterlab.handlers.announcements.NeverCheckForUpdate"},
    }
    if idle_seconds:
        config["ServerApp"]["shutdown_no_activity_timeout"] = idle_seconds
        config["MappingKernelManager"] = {
            "cull_idle_timeout": idle_seconds, "cull_connected": True,
            "cull_interval": max(5, min(60, idle_seconds // 2))}
        config["TerminalManager"] = {"cull_inactive_timeout": idle_seconds,
                                     "cull_interval": max(5, min(60, idle_seconds // 2))}
    return config


# JupyterLab's own defaults, changed for a notebook reached through the master:
# - start the notebook's kernel without asking. Otherwise JupyterLab shows "Select Kernel"
#   whenever it opens a notebook before it has read the kernel specs (a loaded node:
#   seen in CI), and nothing runs until someone answers;
# - never ask to fetch Jupyter's news from the internet (compute nodes often have none).
# A user's own settings (Settings menu) still win over these.
LAB_DEFAULTS: dict[str, dict[str, Any]] = {
    "@jupyterlab/notebook-extension:tracker": {"autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false"},
}


def write_lab_defaults(config_dir: Path) -> None:
    """Write :data:`LAB_DEFAULTS` where JupyterLab reads default setting overrides
    (``labconfig/default_setting_overrides.json`` of its config directory)."""
    labconfig = config_dir / "labconfig"
    labconfig.mkdir(mode=0o700, exist_ok=True)
    (labconfig / "default_setting_overrides.json").write_text(
        json.dumps(LAB_DEFAULTS, indent=1), encoding="utf-8")


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a file only its owner can read (created 0600, never widened)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def jupyter_argv(port: int, task_id: str) -> list[str]:
    """The command line: nothing secret on it."""
    return [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=0.0.0.0",
            f"--port={port}", "--port-retries=0", f"--ServerApp.base_url=/proxy/{task_id}/"]


def answers(port: int, task_id: str, token: str) -> bool:
    """Whether Jupyter answers its status API (with the token) on ``port``."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/proxy/{task_id}/api/status",
                                     headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
            return int(response.status) == 200
    except (OSError, urllib.error.URLError):
        return False


def wait_until_answering(child: subprocess.Popen[bytes], port: int, task_id: str,
                         token: str, timeout: float = START_SECONDS) -> bool:
    """Whether Jupyter answered before it exited or ``timeout`` passed (then it is
    stopped)."""
    deadline = time.monotonic() + timeout
    while child.poll() is None:
        if answers(port, task_id, token):
            return True
        if time.monotonic() > deadline:
            print(f"hpcdet: JupyterLab did not answer within {timeout:.0f} s; stopping it",
                  file=sys.stderr, flush=True)
            child.terminate()
            return False
        time.sleep(0.5)
    return False


def main() -> int:
    """Run JupyterLab for the task in ``$DET_TASK_DIR`` (see the module doc)."""
    task_dir = Path(os.environ["DET_TASK_DIR"])
    task_id = os.environ["DET_TASK_ID"]
    idle = int(os.environ.get(IDLE_ENV) or 0) or None
    token = read_token(task_dir)
    remove_service_file(task_dir)
    config_dir = task_dir / "jupyter"
    config_dir.mkdir(mode=0o700, exist_ok=True)
    write_private(config_dir / "jupyter_server_config.json",
                  json.dumps(jupyter_config(token, os.getcwd(), idle), indent=1))
    write_lab_defaults(config_dir)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config_dir),
           "JUPYTER_RUNTIME_DIR": str(config_dir / "runtime")}
    user_token = owner_token(task_dir)
    if user_token is not None:  # a munge master's: det in the kernel acts as the owner
        env[USER_TOKEN_ENV] = user_token
    port = free_port()
    child = subprocess.Popen(jupyter_argv(port, task_id), env=env)
    signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
    if wait_until_answering(child, port, task_id, token):
        write_service_file(task_dir, port)
        print(f"hpcdet: JupyterLab serves task {task_id} on port {port}"
              + (f"; it stops after {idle} s idle" if idle else ""), flush=True)
    code = child.wait()
    print(f"hpcdet: JupyterLab exited with code {code}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
