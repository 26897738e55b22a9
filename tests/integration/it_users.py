"""Running ``det`` as the dev cluster's real Unix users (``user_a``, ``user_b``,
``intruder``: ``scripts/dev-cluster users``) with ``runuser``, for the ``multiuser`` tests."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest
from it_helpers import BIN, REPO, LiveMaster, write_experiment

USERS = ("user_a", "user_b", "intruder")


def check_users() -> None:
    """Fail, saying how to fix it, unless the dev cluster's users, root and munged are here."""
    missing = [u for u in USERS if not _exists(u)]
    if missing:
        pytest.fail(f"users {', '.join(missing)} are missing: run scripts/dev-cluster users")
    if os.geteuid() != 0:
        pytest.fail("these tests run det as other users with runuser: run them as root")
    if shutil.which("munge") is None or subprocess.run(
            ["munge", "-n"], capture_output=True, check=False).returncode != 0:
        pytest.fail("munged is not running: scripts/dev-cluster up starts it")


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
        return True
    except KeyError:
        return False


def as_user(master: LiveMaster, user: str, *args: str,
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``det -m URL ARGS`` run as Unix user ``user`` with that user's HOME."""
    home = pwd.getpwnam(user).pw_dir
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "PYTHONPATH": str(REPO),
           "DET_MASTER": master.url, **(extra_env or {})}
    argv = ["runuser", "-u", user, "--", "env", "-i",
            *[f"{k}={v}" for k, v in env.items()], str(BIN / "det"), "-m", master.url, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def fresh_home(user: str) -> None:
    shutil.rmtree(Path(pwd.getpwnam(user).pw_dir) / ".hpcdet", ignore_errors=True)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    return result.stdout


def sleeper_experiment(user: str, name: str) -> Path:
    """An experiment directory in ``user``'s home, owned by ``user`` (pytest's tmp_path is
    root's and 0700)."""
    entry = pwd.getpwnam(user)
    directory = Path(entry.pw_dir) / "hpcdet-it" / name
    shutil.rmtree(directory, ignore_errors=True)
    config = {"name": name, "entrypoint": "python3 sleeper.py", "max_restarts": 0,
              "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}}}
    path = write_experiment(directory, config, {"sleeper.py": "import time\ntime.sleep(60)\n"})
    for item in (directory.parent, directory, *directory.iterdir()):
        os.chown(item, entry.pw_uid, entry.pw_gid)
    return path
