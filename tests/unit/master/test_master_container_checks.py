"""What the master refuses about a trial's container at submission, and what it binds.

Paths are real files under ``tmp_path``: the checks stat the master's own file system.
"""

from __future__ import annotations

import errno
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher import BindMount
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.transport import LocalTransport
from hpcdet.dispatcher.transport.local import LOCAL
from hpcdet.errors import ConfigError
from hpcdet.master.queue.pools import Pool
from hpcdet.master.scheduling import container_checks
from hpcdet.master.scheduling.jobspec import TrialRun, build_job_spec
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

POOL = Pool("debug", "debug", slot_type="cpu", cpus_per_node=4)


def settings(tmp_path: Path, run_type: str, **rm: Any) -> MasterSettings:
    return MasterSettings(resource_manager=replace(
        ResourceManagerSettings(), container_run_type=run_type,
        job_storage_root=str(tmp_path / "jobs"), apptainer_image_root=str(tmp_path / "images"),
        **rm))


def run(tmp_path: Path) -> TrialRun:
    return TrialRun(7, 42, 1, str(tmp_path / "jobs" / "exp-7" / "trial-42"))


def config(image: str = "hpcdet", binds: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"resources": {"slots_per_trial": 1}, "environment": {"image": image},
            "bind_mounts": binds or [],
            "checkpoint_storage": {"type": "shared_fs", "host_path": "/ckpt-elsewhere"}}


@pytest.fixture
def images(tmp_path: Path) -> Path:
    """An apptainer image file and a Charliecloud directory image with /data and /ckpt…"""
    root = tmp_path / "images"
    (root / "hpcdet" / "data").mkdir(parents=True)
    (root / "hpcdet" / "ckpt-elsewhere").mkdir()
    (root / "hpcdet" / str(tmp_path / "jobs").lstrip("/")).mkdir(parents=True)
    (root / "hpcdet.sif").write_text("sif")
    return root


def errors_of(exc: pytest.ExceptionInfo[ConfigError]) -> str:
    return "\n".join(exc.value.errors)


@pytest.mark.parametrize("run_type", ["apptainer", "podman", "enroot", "charliecloud"])
def test_a_missing_bind_host_path_is_refused_by_its_place(tmp_path: Path, images: Path,
                                                          run_type: str) -> None:
    binds = [{"host_path": str(tmp_path), "container_path": "/data"},
             {"host_path": str(tmp_path / "gone"), "container_path": "/data"}]
    image = "hpcdet.sif" if run_type == "apptainer" else "hpcdet"
    with pytest.raises(ConfigError) as info:
        build_job_spec(settings(tmp_path, run_type), config(image, binds), run(tmp_path), POOL,
                       files=LOCAL)
    assert errors_of(info) == (f"<config>.bind_mounts[1].host_path: '{tmp_path / 'gone'}' does "
                               "not exist on the master's host (bind mounts must exist before "
                               "the trial starts)")


def test_a_path_the_master_may_not_look_into_is_taken_on_trust(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # jobs_run_as owner: the service account cannot see into the owner's 0700 home.
    def denied(path: str) -> os.stat_result:
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(container_checks.os, "stat", denied)
    assert not container_checks.missing("/home/user_a/data", files=LOCAL)
    container_checks.check_bind_mounts(config(binds=[{"host_path": "/home/user_a/data",
                                                       "container_path": "/data"}]), files=LOCAL)


def test_an_image_relative_to_the_image_root_must_exist(tmp_path: Path, images: Path) -> None:
    with pytest.raises(ConfigError) as info:
        build_job_spec(settings(tmp_path, "apptainer"), config("nope.sif"), run(tmp_path), POOL,
                       files=LOCAL)
    assert errors_of(info) == (f"<config>.environment.image: '{images / 'nope.sif'}' does not "
                               f"exist (environment.image joined to apptainer_image_root "
                               f"{images})")
    spec = build_job_spec(settings(tmp_path, "apptainer"), config("hpcdet.sif"), run(tmp_path),
                          POOL, files=LOCAL)
    assert spec.container.image == str(images / "hpcdet.sif")


@pytest.mark.parametrize(("run_type", "image"), [
    ("apptainer", "docker://python:3.11"),  # pulled by the runtime
    ("podman", "docker.io/library/python:3.11"),  # a registry reference
    ("enroot", "pytorch+24.01"),  # an enroot container name
])
def test_images_the_master_cannot_see_are_not_looked_for(tmp_path: Path, run_type: str,
                                                         image: str) -> None:
    spec = build_job_spec(settings(tmp_path, run_type), config(image), run(tmp_path), POOL,
                          files=LOCAL)
    assert spec.container.image is not None


def test_without_path_checks_nothing_is_looked_at(tmp_path: Path) -> None:
    binds = [{"host_path": "/nowhere", "container_path": "/data"}]
    spec = build_job_spec(settings(tmp_path, "charliecloud", container_path_checks=False),
                          config("/no/image", binds), run(tmp_path), POOL, files=LOCAL)
    assert spec.container.image == "/no/image"


def test_charliecloud_binds_the_job_storage_root_at_its_own_path(tmp_path: Path,
                                                                 images: Path) -> None:
    binds = [{"host_path": str(tmp_path), "container_path": "/data"}]
    spec = build_job_spec(settings(tmp_path, "charliecloud"), config("hpcdet", binds),
                          run(tmp_path), POOL, files=LOCAL)
    root = str(tmp_path / "jobs")
    assert spec.container.bind_mounts == (
        BindMount(root, root), BindMount("/ckpt-elsewhere", "/ckpt-elsewhere", create=True),
        BindMount(str(tmp_path), "/data"))
    script = SlurmBackend().render(spec).script
    # The checkpoint directory may not exist before the first checkpoint: the job makes it.
    assert "mkdir -p -- /ckpt-elsewhere || exit" in script.splitlines()
    # One bind holds the job directory: the backend adds no second one.
    assert script.count(f"-b {root}:{root}") == 1 and run(tmp_path).job_dir + ":" not in script
    assert 'export USER="${USER:-$(id -un)}"' in script


def test_charliecloud_refuses_what_ch_run_cannot_do(tmp_path: Path, images: Path) -> None:
    binds = [{"host_path": str(tmp_path), "container_path": "/data", "read_only": True},
             {"host_path": str(tmp_path), "container_path": "/opt/site"},
             {"host_path": str(tmp_path), "container_path": "/tmp/anything"}]
    with pytest.raises(ConfigError) as info:
        build_job_spec(settings(tmp_path, "charliecloud"), config("hpcdet", binds),
                       run(tmp_path), POOL, files=LOCAL)
    assert info.value.errors == [
        "<config>.bind_mounts[0].read_only: charliecloud cannot mount read-only (ch-run's -b "
        "binds are read-write); make the host path read-only instead, or drop read_only",
        f"<config>.bind_mounts[1]: the image {images / 'hpcdet'} has no directory /opt/site to "
        "bind onto (ch-run binds only onto directories a read-only image has, or under /tmp); "
        "add it: scripts/build-image --mount-point /opt/site",
    ]  # /tmp/anything is fine: ch-run makes it in the rank's private /tmp


def test_charliecloud_names_its_own_binds_too(tmp_path: Path) -> None:
    (tmp_path / "images" / "bare").mkdir(parents=True)  # no mount points at all
    with pytest.raises(ConfigError) as info:
        build_job_spec(settings(tmp_path, "charliecloud"), config("bare"), run(tmp_path), POOL,
                       files=LOCAL)
    # The checkpoint storage's; the job storage root lies under /tmp here (tmp_path).
    assert errors_of(info).startswith("the bind of /ckpt-elsewhere: the image ")


def test_a_squashfs_image_is_not_looked_into(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "hpcdet.sqfs").write_text("squashfs")
    spec = build_job_spec(settings(tmp_path, "charliecloud"), config("hpcdet.sqfs"),
                          run(tmp_path), POOL, files=LOCAL)
    assert spec.container.image == str(tmp_path / "images" / "hpcdet.sqfs")


@pytest.mark.parametrize(("run_type", "expected"), [("apptainer", True), ("singularity", True),
                                                    ("podman", False)])
def test_the_image_cache_directory_reaches_apptainer(tmp_path: Path, images: Path,
                                                     run_type: str, expected: bool) -> None:
    image = "hpcdet.sif" if run_type != "podman" else "docker.io/library/python:3.11"
    spec = build_job_spec(settings(tmp_path, run_type, image_cache_dir="/scratch/cache"),
                          config(image), run(tmp_path), POOL, files=LOCAL)
    env = spec.environment
    assert (env.get("APPTAINER_CACHEDIR") == env.get("SINGULARITY_CACHEDIR")
            == "/scratch/cache") is expected


def test_force_pull_image_reaches_the_runtime(tmp_path: Path) -> None:
    conf = config("docker.io/library/python:3.11")
    conf["environment"]["force_pull_image"] = True
    spec = build_job_spec(settings(tmp_path, "podman"), conf, run(tmp_path), POOL, files=LOCAL)
    assert "--pull=always" in SlurmBackend().render(spec).script


def test_podman_runs_a_directory_image_as_an_overlaid_rootfs(tmp_path: Path,
                                                             images: Path) -> None:
    spec = build_job_spec(settings(tmp_path, "podman"), config(str(images / "hpcdet")),
                          run(tmp_path), POOL, files=LOCAL)
    script = SlurmBackend().render(spec).script
    assert f"--rootfs {images / 'hpcdet'}:O python3 -m hpcdet.harness" in script
    with pytest.raises(ConfigError, match="environment.image: '/no/such/dir' does not exist"):
        build_job_spec(settings(tmp_path, "podman"), config("/no/such/dir"), run(tmp_path), POOL,
                       files=LOCAL)
    # A relative name is a registry reference: never joined to apptainer_image_root.
    named = build_job_spec(settings(tmp_path, "podman"), config("docker.io/library/python"),
                           run(tmp_path), POOL, files=LOCAL)
    assert named.container.image == "docker.io/library/python"


class _LoginNodeFiles(LocalTransport):
    """A fake SSH transport: the login node's file system is a directory of this host."""

    name = "ssh"

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def exists(self, path: str) -> bool:
        return super().exists(str(self.root) + path)

    def is_dir(self, path: str) -> bool:
        return super().is_dir(str(self.root) + path)


def test_over_ssh_the_paths_are_looked_up_on_the_login_node(tmp_path: Path) -> None:
    login = tmp_path / "login"
    data = tmp_path / "data"  # on this host only
    (login / str(tmp_path / "shared").lstrip("/")).mkdir(parents=True)
    data.mkdir()
    files = _LoginNodeFiles(login)
    on_login_node = config(binds=[{"host_path": str(tmp_path / "shared"),
                                   "container_path": "/shared"}])
    build_job_spec(settings(tmp_path, "podman"), on_login_node, run(tmp_path), POOL, files=files)
    only_here = config(binds=[{"host_path": str(data), "container_path": "/data"}])
    with pytest.raises(ConfigError, match=r"bind_mounts\[0\]\.host_path"):
        build_job_spec(settings(tmp_path, "podman"), only_here, run(tmp_path), POOL, files=files)
