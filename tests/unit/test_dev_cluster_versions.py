"""The dev cluster's two Slurm versions: what ``scripts/dev-cluster env`` selects, and that
``scripts/build-slurm`` builds only SchedMD's source of the pinned release.

No cluster is needed: ``env`` only prints, and a refused tarball stops the build before it
starts. (The clusters themselves run in the Slurm tiers: docs/dev-cluster.md.)
"""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import tarfile
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
PREFIX_2511 = "/opt/slurm-25.11"


def dev_cluster_env(*args: str, path: str) -> tuple[int, dict[str, str], str]:
    """``scripts/dev-cluster ARGS env`` with ``PATH=path``: its exit status, the exported
    variables, and stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "HPCDET_"))}
    done = subprocess.run([str(SCRIPTS / "dev-cluster"), *args, "env"], capture_output=True,
                          text=True, env={**env, "PATH": path}, timeout=30, check=False)
    exported = {}
    for line in done.stdout.splitlines():
        words = shlex.split(line)
        if words[:1] == ["export"]:
            name, _, value = words[1].partition("=")
            exported[name] = value
    return done.returncode, exported, done.stderr


def test_2511_puts_its_own_programs_first_and_names_its_cluster() -> None:
    rc, exported, _ = dev_cluster_env("--slurm", "25.11", path="/usr/bin:/bin")
    assert rc == 0
    assert exported["PATH"] == f"{PREFIX_2511}/bin:{PREFIX_2511}/sbin:/usr/bin:/bin"
    assert exported["HPCDET_DEV_SLURM"] == "25.11"
    assert exported["SLURM_CONF"].endswith("hpcdet-dev-cluster-25.11/slurm.conf")
    assert exported["HPCDET_DEV_SLURMRESTD"] == "http://127.0.0.1:17880"


def test_2205_takes_the_other_versions_programs_out_of_path() -> None:
    """A 22.05 client first in PATH would fail against 25.11, and the other way round."""
    path = f"{PREFIX_2511}/bin:/usr/local/bin:{PREFIX_2511}/sbin:/usr/bin"
    rc, exported, _ = dev_cluster_env("--slurm=22.05", path=path)
    assert rc == 0
    assert exported["PATH"] == "/usr/local/bin:/usr/bin"
    assert exported["SLURM_CONF"].endswith("hpcdet-dev-cluster/slurm.conf")
    assert "HPCDET_DEV_SLURMRESTD" not in exported


def test_an_unknown_version_is_refused_by_name() -> None:
    rc, exported, stderr = dev_cluster_env("--slurm", "21.08", path="/usr/bin:/bin")
    assert (rc, exported) == (2, {})
    assert "--slurm must be 22.05 or 25.11, got '21.08'" in stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="build-slurm installs as root")
def test_build_slurm_refuses_a_tarball_of_other_files(tmp_path: Path) -> None:
    tarball = tmp_path / "slurm-25.11.7-src.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        data = b"#!/bin/sh\necho not slurm\n"
        info = tarfile.TarInfo("slurm-25.11.7/configure")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    cache = tmp_path / "cache"
    done = subprocess.run(
        [str(SCRIPTS / "build-slurm")], capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "HPCDET_SLURM_TARBALL": str(tarball),
             "HPCDET_SLURM_CACHE": str(cache), "HPCDET_SLURM_PREFIX": str(tmp_path / "opt")})
    assert done.returncode != 0
    assert f"{tarball} holds other files than Slurm 25.11.7" in done.stderr
    # Nothing half-built is left to be taken for a build later, and nothing installed.
    assert not (cache / "slurm-25.11.7").exists()
    assert not (tmp_path / "opt").exists()
