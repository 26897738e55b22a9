"""A live det-master with ``resource_manager.type: pbs`` on the dev OpenPBS server
(``scripts/dev-pbs up``), for the ``pbs`` integration tests.

Root may not submit to the dev server, so the master runs as ``USER`` (``runuser``) in a
directory of that user's home; ``det`` itself talks HTTP only and runs as the test's user
with ``DET_USER`` naming ``USER``. The PBS clients run as any of the dev users with
:func:`pbs_as`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pwd
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from it_helpers import BIN, REPO, LiveMaster, missing

PBS_BIN = "/opt/pbs/bin"
USER = "user_a"


def pbs_env() -> dict[str, str]:
    """The PBS clients' environment; skips (fails in CI) unless the dev server answers."""
    if shutil.which("qstat", path=f"{PBS_BIN}:/usr/bin") != f"{PBS_BIN}/qstat":
        missing("OpenPBS is not installed (run scripts/dev-pbs up)")
    if os.geteuid() != 0:
        missing("running det-master as user_a needs runuser: run as root")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        missing(f"user {USER} is missing: run scripts/dev-cluster users")
    if importlib.util.find_spec("hpcdet.dispatcher.pbs.backend") is None:
        missing("the PBS backend (hpcdet.dispatcher.pbs.backend) is not in this tree")
    env = {"PATH": f"{PBS_BIN}:/usr/bin:/bin",
           "PBS_CONF_FILE": os.environ.get("PBS_CONF_FILE", "/etc/pbs.conf")}
    probe = subprocess.run([f"{PBS_BIN}/qstat", "-B"], env=env, capture_output=True,
                           text=True, timeout=30, check=False)
    if probe.returncode != 0:
        missing(f"no OpenPBS server answers: {probe.stderr.strip()}")
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def user_dir(user: str, name: str) -> Path:
    """A fresh directory ``~user/hpcdet-it/<name>-<random>``, owned by ``user``."""
    entry = pwd.getpwnam(user)
    path = Path(entry.pw_dir) / "hpcdet-it" / f"{name}-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    for item in (path.parent, path):
        os.chown(item, entry.pw_uid, entry.pw_gid)
    return path


def chown_tree(path: Path, user: str) -> None:
    """Give ``path`` and everything under it to ``user`` (files the test wrote as root)."""
    entry = pwd.getpwnam(user)
    for item in (path, *path.rglob("*")):
        os.chown(item, entry.pw_uid, entry.pw_gid)


def pbs_as(user: str, *argv: str, check: bool = True) -> str:
    """A PBS client command (``qstat``, ``qsub``...) run as ``user``; its stdout."""
    home = pwd.getpwnam(user).pw_dir
    env = [f"HOME={home}", f"PATH={PBS_BIN}:/usr/bin:/bin",
           f"PBS_CONF_FILE={os.environ.get('PBS_CONF_FILE', '/etc/pbs.conf')}"]
    result = subprocess.run(["runuser", "-u", user, "--", "env", "-i", *env, *argv],
                            cwd=home, capture_output=True, text=True, timeout=60, check=False,
                            stdin=subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} as {user} failed ({result.returncode}):\n"
                             f"{result.stdout}\n{result.stderr}")
    return result.stdout


def qstat(job_id: str) -> dict[str, Any]:
    """PBS's record of one job, finished ones included (``qstat -x -f -F json``)."""
    out = pbs_as(USER, f"{PBS_BIN}/qstat", "-x", "-f", "-F", "json", job_id)
    record: dict[str, Any] = json.loads(out, strict=False)["Jobs"][job_id]
    return record


def qdel_all(job_ids: list[str]) -> None:
    """``qdel -W force`` of ``job_ids`` as the ``hpcdet`` manager, whatever their state."""
    if job_ids:
        pbs_as("hpcdet", f"{PBS_BIN}/qdel", "-W", "force", *job_ids, check=False)


@contextmanager
def pbs_master(name: str, rm_settings: dict[str, Any] | None = None) -> Iterator[LiveMaster]:
    """det-master (SQLite) submitting to the dev OpenPBS server as ``USER``."""
    env = pbs_env()
    base = user_dir(USER, name)
    port = free_port()
    rm = {"type": "pbs", "master_host": "127.0.0.1", "cluster_name": "it",
          "job_storage_root": f"{base}/jobs", "slot_type": "cpu", **(rm_settings or {})}
    # Its own state_dir: the default (~user/.hpcdet) is what the Slurm tests' fresh_home
    # clears, and scripts/test runs the PBS tests beside them.
    config = {"port": port, "host": "127.0.0.1", "db": {"url": f"sqlite:///{base}/m.sqlite"},
              "state_dir": f"{base}/state",
              "reconciler": {"interval_seconds": 1}, "webserver": {"workers": 1, "threads": 4},
              "auth": {"mode": "open"}, "resource_manager": rm}
    (base / "master.yaml").write_text(yaml.safe_dump(config))
    chown_tree(base, USER)
    home = pwd.getpwnam(USER).pw_dir
    child_env = {"HOME": home, "PATH": f"{PBS_BIN}:{BIN}:/usr/bin:/bin",
                 "PBS_CONF_FILE": env["PBS_CONF_FILE"], "PYTHONPATH": str(REPO),
                 "DET_USER": USER}
    argv = (shutil.which("runuser") or "runuser", "-u", USER, "--", "env", "-i",
            *[f"{k}={v}" for k, v in child_env.items()],
            str(BIN / "det-master"), "--config", str(base / "master.yaml"))
    live = LiveMaster(url=f"http://127.0.0.1:{port}", env={**os.environ, **child_env,
                                                           "HOME": os.environ["HOME"]},
                      job_root=base / "jobs", log=base / "master.log",
                      db_url=f"sqlite:///{base}/m.sqlite", argv=argv)
    try:
        live.start()
        yield live
    finally:
        live.stop()


def create_experiment(master: LiveMaster, name: str, config: dict[str, Any],
                      files: dict[str, str]) -> int:
    """``det experiment create`` of ``config`` with a context of ``files``; the id."""
    directory = master.job_root.parent / name
    directory.mkdir()
    for file_name, text in files.items():
        (directory / file_name).write_text(text)
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump({"name": name, **config}))
    out = master.det("experiment", "create", str(path), str(directory), check=True).stdout
    return int(next(li for li in out.splitlines() if li.startswith("Created")).split()[-1])
