"""``det-master init`` and ``det-master doctor`` against the dev Slurm cluster (25.11).

init detects the cluster and writes a shared site's files; doctor on that config (with the
dev cluster's job root, TLS files and a migrated database) passes every check, its
compute-node job included; then three things are broken at once, each on this test's own
copy (the machine's MUNGE, sudoers rules and job root stay as they are), and each is named
with its fix: a MUNGE socket the service account cannot reach, a service account without a
sudo rule, a job root without POSIX ACLs (a ``ramfs`` mount, unmounted after).

``det_master`` is the executable under test: the built wheel's, installed into a fresh venv
outside the repository (the ``installed_hpcdet`` fixture), or another install's
(``HPCDET_TEST_DET_MASTER``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from required import missing

from hpcdet.master.db import migrate
from hpcdet.master.doctor import CHECK_NAMES
from hpcdet.master.settings.core import load_settings

# multiuser: the run-as helper, its sudo rule and user_b of `scripts/dev-cluster users`.
# isolated: the compute-node probe runs in partition fairshare (node4), which only the
# isolated tier uses and one test at a time; there it shares the wheel built for
# test_it_packaging.py (installed_hpcdet, once per session).
pytestmark = [pytest.mark.slurm, pytest.mark.multiuser, pytest.mark.isolated]
ISOLATED_POOL = "fairshare"

# runas.conf's job_root, as scripts/dev-cluster users installs it.
DEV_JOB_ROOT = os.environ.get("HPCDET_MULTIUSER_JOB_ROOT", "/srv/hpcdet-dev/jobs")


@pytest.fixture
def det_master(request: pytest.FixtureRequest) -> str:
    """The det-master under test: ``HPCDET_TEST_DET_MASTER`` if set, else the built wheel's,
    installed into a fresh venv outside the repository (tests/integration/packaging_helpers.py),
    whose ``det --help`` must work too: what a site installs is what is checked."""
    chosen = os.environ.get("HPCDET_TEST_DET_MASTER")
    if chosen:
        return chosen
    installed = request.getfixturevalue("installed_hpcdet")
    help_text = installed.run("det", "--help")
    assert help_text.returncode == 0 and "experiment" in help_text.stdout, help_text.stderr
    return str(installed.bin / "det-master")


def run(det_master: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``det-master ARGS`` in ``env``; another install's runs its own code, not the repo's
    (no PYTHONPATH)."""
    if Path(det_master).parent != Path(sys.executable).parent:
        env = {name: value for name, value in env.items() if name != "PYTHONPATH"}
    return subprocess.run([det_master, *args], env=env, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture
def ramfs(tmp_path: Path) -> Iterator[Path]:
    """A directory on ramfs (no POSIX ACLs), 1733 like a job root; unmounted after."""
    if os.geteuid() != 0:
        missing("mounting a ramfs needs root")
    mount = tmp_path / "ramfs"
    mount.mkdir()
    subprocess.run(["mount", "-t", "ramfs", "hpcdet-doctor-test", str(mount)], check=True)
    try:
        mount.chmod(0o1733)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_init_then_doctor_passes_then_names_three_breaks_with_their_fixes(
        det_master: str, slurm: dict[str, str], dev_tls_dir: Path, tmp_path: Path,
        ramfs: Path) -> None:
    out, state = tmp_path / "init", tmp_path / "state"
    made = run(det_master, slurm, "init", "--out", str(out), "--state-dir", str(state),
               "--job-root", DEV_JOB_ROOT, "--config-dir", str(out), "--admin", "user_a",
               "--tls-cert", str(dev_tls_dir / "server.pem"),
               "--tls-key", str(dev_tls_dir / "server.key"))
    assert made.returncode == 0, made.stderr
    assert "Slurm (slurm 25.11" in made.stdout and "MUNGE socket: /run/munge/" in made.stdout
    unit = (out / "hpcdet-master.service").read_text()
    assert f"Environment=SLURM_CONF={slurm['SLURM_CONF']}\n" in unit
    if shutil.which("systemd-analyze") is None:
        missing("systemd-analyze is not installed (scripts/ensure-systemd-analyze)")
    units = ["hpcdet-master.service", "hpcdet-vacuum-metrics.service",
             "hpcdet-vacuum-metrics.timer"]
    verify = subprocess.run(["systemd-analyze", "verify", *units], cwd=out, capture_output=True,
                            text=True, check=False)
    assert verify.returncode == 0 and verify.stderr == "", verify.stderr
    written = yaml.safe_load((out / "master.yaml").read_text())
    written["resource_manager"]["default_compute_resource_pool"] = ISOLATED_POOL  # see above
    config = tmp_path / "site.yaml"
    config.write_text(yaml.safe_dump(written))
    settings = load_settings(config, environ={})
    assert settings.resource_manager.type == "slurm" and settings.runas.owner_mode
    migrate(settings.db_url)

    good = run(det_master, slurm, "doctor", "--config", str(config), "--json")
    report = json.loads(good.stdout)
    statuses = {check["check"]: check["status"] for check in report["checks"]}
    assert good.returncode == 0 and report["ok"], good.stdout + good.stderr
    assert tuple(statuses) == CHECK_NAMES  # every check, in order
    assert statuses == {"config": "ok", "database": "ok", "munge": "ok", "runas-helper": "ok",
                        "sudoers": "ok", "job-root": "ok", "tls": "ok", "master": "skip",
                        "scheduler": "ok", "operator": "ok", "harness": "ok"}
    assert not [p for p in Path(DEV_JOB_ROOT).iterdir() if p.name.startswith(".hpcdet-doctor")]

    hidden = tmp_path / "munge"  # under pytest's 0700 tmp dir: hpcdet cannot reach it
    hidden.mkdir(mode=0o700)
    doc = yaml.safe_load(config.read_text())
    doc["resource_manager"]["job_storage_root"] = str(ramfs)
    broken_config = tmp_path / "broken.yaml"
    broken_config.write_text(yaml.safe_dump(doc))
    with socket.socket(socket.AF_UNIX) as fake_munged:
        fake_munged.bind(str(hidden / "munge.socket.2"))
        broken = run(det_master, slurm, "doctor", "--config", str(broken_config),
                     "--munge-socket", str(hidden / "munge.socket.2"),
                     "--service-user", "user_b", "--no-harness")
    assert broken.returncode == 1 and "Traceback" not in broken.stdout + broken.stderr
    lines = {line.split()[1]: line for line in broken.stdout.splitlines()}
    assert lines["munge"].startswith("FAIL") and "user_b cannot connect to" in lines["munge"]
    assert "-- fix: let user_b reach the socket" in lines["munge"]
    assert lines["sudoers"].startswith("FAIL") and "no sudo rule lets user_b run" \
        in lines["sudoers"]
    assert lines["sudoers"].endswith("user_b ALL=(ALL,!root) NOPASSWD: "
                                     "/usr/local/libexec/hpcdet-runas")
    assert lines["job-root"].startswith("FAIL") and "no POSIX ACLs" in lines["job-root"]
    assert "-- fix: put the job root on a filesystem with POSIX ACLs" in lines["job-root"]
    assert list(ramfs.iterdir()) == []
