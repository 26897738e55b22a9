"""The packages as a site gets them (docs/admin/packages.md): ``python -m build``'s wheel and
sdist hold what the code loads at run time and nothing else, and the wheel installed with
``[master]`` into a fresh venv outside the repository runs ``det``, ``det-master`` (on the
dev cluster's Slurm 25.11, SQLite) and the harness, all reporting the wheel's version.

The master submits nothing: no part of the dev cluster is shared (marker ``isolated``; the
integration-isolated tier of scripts/test, in the "beside" stream)."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import free_port
from it_helpers import BIN, REPO, LiveMaster
from packaging_helpers import Built, InstalledHpcdet

pytestmark = [pytest.mark.packaging, pytest.mark.isolated, pytest.mark.slurm]

#: In the repository, never in a package: what a wheel or sdist must not carry.
_NOT_SHIPPED = ("tests/", "__pycache__", ".pyc", ".egg-info/", "/.venv", "bench/", "scripts/")


def _tracked_package_files() -> set[str]:
    """Every file git tracks under hpcdet/: the package, its templates, static files,
    migrations and the run-as helper's files."""
    out = subprocess.run(["git", "ls-files", "hpcdet"], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    return set(out.split())


def test_the_wheel_and_sdist_hold_the_package_and_nothing_else(
        installed_hpcdet: InstalledHpcdet) -> None:
    built: Built = installed_hpcdet.built
    names = built.wheel_names()
    package = {name for name in names if name.startswith("hpcdet/")}
    assert _tracked_package_files() <= package, sorted(_tracked_package_files() - package)
    # Data files the code reads (PackageLoader, Flask's folders, Alembic's script location).
    for data in ("hpcdet/slurm_templates/slurm_job.sh.j2", "hpcdet/master/templates/base.html",
                 "hpcdet/master/static/hpcdet.css", "hpcdet/master/migrations/env.py",
                 "hpcdet/master/migrations/script.py.mako", "hpcdet/py.typed",
                 "hpcdet/runas/helper.py", "hpcdet/runas/directives.py"):
        assert data in names
    assert not [n for n in names
                if not n.startswith(("hpcdet/", f"hpcdet-{built.version}.dist-info/"))]
    assert not [n for n in names if any(part in n for part in _NOT_SHIPPED)]
    with tarfile.open(built.sdist) as sdist:
        members = [m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name]
    assert {"pyproject.toml", "README.md", "hpcdet/master/migrations/env.py"} <= set(members)
    # (setuptools' sdist carries its own metadata, hpcdet.egg-info/: that one belongs there.)
    assert not [n for n in members if not n.startswith("hpcdet.egg-info/")
                and any(part in n for part in _NOT_SHIPPED)]


def test_the_installed_programs_run_outside_the_repository(
        installed_hpcdet: InstalledHpcdet) -> None:
    """det, det-master and the harness from the venv alone; no torch comes with [master]."""
    run = installed_hpcdet.run
    where = run("python", "-c", "import hpcdet, sys; print(hpcdet.__file__)")
    assert where.stdout.startswith(str(installed_hpcdet.venv)), where
    for program, args in (("det", ["--help"]), ("det-master", ["--help"]),
                          ("python", ["-m", "hpcdet.harness", "--help"])):
        result = run(program, *args)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result
    no_torch = run("python", "-c", "import torch")
    assert "No module named 'torch'" in no_torch.stderr
    # No master at this address: det still reports its own version, and says so.
    alone = run("det", "version", "--json",
                env=installed_hpcdet.env(DET_MASTER="http://127.0.0.1:9"))
    assert alone.returncode == 0, alone
    assert json.loads(alone.stdout)["client"]["version"] == installed_hpcdet.built.version


def _master_env(installed: InstalledHpcdet, slurm: dict[str, str], url: str) -> dict[str, str]:
    """The venv's environment plus the dev cluster's Slurm (its programs, SLURM_CONF); the
    project's venv taken out of PATH."""
    path = [p for p in slurm["PATH"].split(os.pathsep) if p and Path(p) != BIN]
    env = installed.env(DET_MASTER=url, DET_USER="tester")
    env["PATH"] = os.pathsep.join([str(installed.bin), *path])
    for name in ("SLURM_CONF", "HPCDET_DEV_SLURM"):
        if name in slurm:
            env[name] = slurm[name]
    return env


def test_the_installed_master_starts_and_agrees_with_det_on_the_version(
        installed_hpcdet: InstalledHpcdet, slurm: dict[str, str], tmp_path: Path) -> None:
    """A fresh SQLite database (the packaged Alembic migrations), the pages (templates and
    static files), and one version from the wheel's name to ``det version``."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    config = {"port": port, "host": "127.0.0.1", "state_dir": str(tmp_path / "state"),
              "auth": {"mode": "open"}, "webserver": {"workers": 1, "threads": 2},
              "resource_manager": {"master_host": "127.0.0.1", "cluster_name": "packaging",
                                   "job_storage_root": str(tmp_path / "jobs"),
                                   "slot_type": "cpu"}}
    (tmp_path / "master.yaml").write_text(yaml.safe_dump(config))
    env = _master_env(installed_hpcdet, slurm, url)
    master = LiveMaster(url=url, env=env, job_root=tmp_path / "jobs", log=tmp_path / "master.log",
                        argv=(str(installed_hpcdet.bin / "det-master"), "--config",
                              str(tmp_path / "master.yaml")))
    master.start()
    try:
        info = master.api("/master")
        page = httpx.get(f"{url}/", timeout=30, headers={"X-Hpcdet-User": "tester"})
        css = httpx.get(f"{url}/static/hpcdet.css", timeout=30)
        said = installed_hpcdet.run("det", "version", "--json", env=env)
    finally:
        master.stop()
    assert info["version"] == installed_hpcdet.built.version, info
    assert page.status_code == 200 and "hpcdet.css" in page.text
    assert css.status_code == 200 and css.text
    assert said.returncode == 0, said
    versions = json.loads(said.stdout)
    assert versions["client"]["version"] == versions["master"]["version"] == info["version"]
    assert (tmp_path / "state" / "hpcdet.sqlite").is_file()
