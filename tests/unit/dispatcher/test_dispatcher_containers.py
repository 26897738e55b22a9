"""Per-rank launch commands for each container runtime."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hpcdet.dispatcher.base import BindMount, ContainerSpec
from hpcdet.dispatcher.containers import (
    RUN_TYPES,
    SLURM_TASK_VARIABLES,
    launch_argv,
    with_job_dir,
)
from hpcdet.errors import ValidationError

COMMAND = ("python3", "-m", "hpcdet.harness")
MOUNTS = (BindMount("/data", "/data", read_only=True), BindMount("/scratch/u", "/scratch"))


def test_none_leaves_the_command_alone() -> None:
    assert launch_argv(ContainerSpec(), COMMAND, cwd="/job/context") == list(COMMAND)


@pytest.mark.parametrize("runtime", ["apptainer", "singularity"])
def test_apptainer_inherits_env_and_binds_each_mount(runtime: str) -> None:
    spec = ContainerSpec(runtime, "/images/pt.sif", MOUNTS, use_gpus=True)
    assert launch_argv(spec, COMMAND, cwd="/job/context") == [
        runtime, "exec", "--nv",
        "--bind", "/data:/data:ro", "--bind", "/scratch/u:/scratch",
        "--pwd", "/job/context", "/images/pt.sif", *COMMAND,
    ]  # fmt: skip


def test_apptainer_without_gpus_has_no_nv_and_no_cleanenv() -> None:
    argv = launch_argv(ContainerSpec("apptainer", "/i.sif"), COMMAND)
    assert argv == ["apptainer", "exec", "/i.sif", *COMMAND]


def test_enroot_passes_image_verbatim_and_changes_directory_itself() -> None:
    spec = ContainerSpec("enroot", "nvidia+pytorch+24.01", MOUNTS[:1], pass_environment=("DET_X",))
    argv = launch_argv(spec, COMMAND, cwd="/job/context")
    env = [arg for name in (*SLURM_TASK_VARIABLES, "DET_X") for arg in ("--env", name)]
    assert argv == [
        "enroot", "start", "--rw",
        "--mount", "/data:/data:none:x-create=auto,rbind,ro", *env, "nvidia+pytorch+24.01",
        "/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "hpcdet-cd", "/job/context", *COMMAND,
    ]  # fmt: skip


def test_enroot_cd_wrapper_takes_the_directory_as_data(tmp_path: Path) -> None:
    # The wrapper must cd into a hostile directory without evaluating it.
    odd = tmp_path / "a b;'$(touch pwned)'"
    odd.mkdir()
    argv = launch_argv(ContainerSpec("enroot", "img"), ["pwd"], cwd=str(odd))
    wrapper = argv[argv.index("/bin/sh") :]
    out = subprocess.run(wrapper, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.strip() == str(odd)
    assert not (tmp_path / "pwned").exists()


def test_podman_runs_on_host_network_with_named_variables() -> None:
    spec = ContainerSpec(
        "podman", "docker.io/pytorch/pytorch:2.3.0", MOUNTS, use_gpus=True,
        pass_environment=("DET_MASTER", "CUDA_VISIBLE_DEVICES", "DET_MASTER"),
    )  # fmt: skip
    assert launch_argv(spec, COMMAND, cwd="/job/context") == [
        "podman", "run", "--rm", "--network=host", "--ipc=host",
        "--device", "nvidia.com/gpu=all", "-v", "/data:/data:ro", "-v", "/scratch/u:/scratch",
        "--env", "SLURM_*", "--env", "CUDA_VISIBLE_DEVICES", "--env", "DET_MASTER",
        "-w", "/job/context", "docker.io/pytorch/pytorch:2.3.0", *COMMAND,
    ]  # fmt: skip


def test_unknown_run_type_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="docker") as info:
        launch_argv(ContainerSpec("docker", "img"), COMMAND)
    for run_type in RUN_TYPES:
        assert run_type in str(info.value)


@pytest.mark.parametrize("runtime", [rt for rt in RUN_TYPES if rt != "none"])
def test_image_is_required(runtime: str) -> None:
    with pytest.raises(ValidationError, match="container.image is required"):
        launch_argv(ContainerSpec(runtime), COMMAND)


@pytest.mark.parametrize(
    ("runtime", "mount", "message"),
    [
        ("apptainer", BindMount("/a:b", "/a"), "contains"),
        ("apptainer", BindMount("/a,b", "/a"), "contains"),
        ("podman", BindMount("/a", "/b:c"), "contains"),
        ("enroot", BindMount("/a b", "/a"), "contains"),
        ("podman", BindMount("data", "/data"), "absolute"),
        ("apptainer", BindMount("/data", "data"), "absolute"),
        ("enroot", BindMount("/data\n", "/data"), "newline"),
        ("charliecloud", BindMount("/a:b", "/a"), "contains"),
        ("charliecloud", BindMount("/a", "b"), "absolute"),
    ],
)
def test_bind_paths_the_runtime_cannot_express_are_refused(
    runtime: str, mount: BindMount, message: str
) -> None:
    with pytest.raises(ValidationError, match=message) as info:
        launch_argv(ContainerSpec(runtime, "img", (mount,)), COMMAND)
    assert "container.bind_mounts[0]" in str(info.value)


def test_apptainer_takes_spaces_in_bind_paths() -> None:
    argv = launch_argv(ContainerSpec("apptainer", "i", (BindMount("/a b", "/c d"),)), COMMAND)
    assert "/a b:/c d" in argv


@pytest.mark.parametrize("name", ["1BAD", "A-B", "A B", ""])
def test_bad_variable_names_are_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="pass_environment"):
        launch_argv(ContainerSpec("podman", "img", pass_environment=(name,)), COMMAND)


def test_charliecloud_runs_ch_run_with_a_private_tmp_and_read_write_binds() -> None:
    spec = ContainerSpec("charliecloud", "/images/hpcdet", MOUNTS[1:], use_gpus=True,
                         pass_environment=("DET_MASTER",))
    # No environment options: ch-run passes the host's through (CUDA_VISIBLE_DEVICES too),
    # and no GPU flag: the driver's libraries are in the image (ch-fromhost --nvidia).
    assert launch_argv(spec, COMMAND, cwd="/job/context") == [
        "ch-run", "--private-tmp", "-b", "/scratch/u:/scratch", "--cd", "/job/context",
        "/images/hpcdet", "--", *COMMAND,
    ]  # fmt: skip


def test_charliecloud_refuses_a_read_only_bind_it_cannot_make() -> None:
    with pytest.raises(ValidationError, match=r"bind_mounts\[0\] \(/data\) is read-only") as info:
        launch_argv(ContainerSpec("charliecloud", "/images/hpcdet", MOUNTS), COMMAND)
    assert "read-write" in str(info.value)


@pytest.mark.parametrize(("runtime", "image", "flag"), [
    ("podman", "docker.io/library/python:3.11", "--pull=always"),
    ("apptainer", "docker://python:3.11", "--disable-cache"),
    ("singularity", "oras://example.org/hpcdet:1", "--disable-cache"),
])
def test_force_pull_fetches_the_image_again(runtime: str, image: str, flag: str) -> None:
    assert flag in launch_argv(ContainerSpec(runtime, image, force_pull=True), COMMAND)
    assert flag not in launch_argv(ContainerSpec(runtime, image), COMMAND)


@pytest.mark.parametrize("runtime", ["apptainer", "charliecloud", "enroot"])
def test_force_pull_of_a_local_image_changes_nothing(runtime: str) -> None:
    spec = ContainerSpec(runtime, "/images/local", force_pull=True)
    assert launch_argv(spec, COMMAND) == launch_argv(ContainerSpec(runtime, "/images/local"),
                                                     COMMAND)


@pytest.mark.parametrize(("mounts", "added"), [
    ((), True),
    ((BindMount("/jobs/exp-1/trial-2", "/jobs/exp-1/trial-2"),), False),
    ((BindMount("/jobs", "/jobs"),), False),  # the job storage root (Charliecloud's bind)
    ((BindMount("/jobs", "/elsewhere"),), True),  # not at its own path
    ((BindMount("/jobs/exp-1/trial-20", "/jobs/exp-1/trial-20"),), True),  # a sibling
])
def test_the_job_directory_is_bound_unless_a_bind_at_its_own_path_holds_it(
        mounts: tuple[BindMount, ...], added: bool) -> None:
    spec = with_job_dir(ContainerSpec("charliecloud", "/i", mounts), "/jobs/exp-1/trial-2",
                        ["DET_MASTER"])
    job = BindMount("/jobs/exp-1/trial-2", "/jobs/exp-1/trial-2")
    assert (spec.bind_mounts[-1] == job and len(spec.bind_mounts) > len(mounts)) is added
    assert spec.pass_environment == ("DET_MASTER",)
