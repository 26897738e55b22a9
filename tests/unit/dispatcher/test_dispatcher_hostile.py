"""Hostile values: the rendered script must carry them intact and never run them.

Each test renders a job whose field holds quotes, ``;``, ``$(...)`` or backticks, checks
``bash -n``, then runs the script with a stub ``srun`` that prints its argv one per line.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hang_guard import HANG_GUARD_S, wait_until

from hpcdet.dispatcher.base import BindMount, ContainerSpec, JobSpec
from hpcdet.dispatcher.containers import launch_argv
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.errors import ConfigError, ValidationError

# "{pwned}" becomes a path that must still not exist after the script ran.
HOSTILE = [
    "with space",
    "single'quote",
    'double"quote',
    "semi;colon && echo hi",
    "$(touch {pwned})",
    "`touch {pwned}`",
    "all: ' \" ; $(touch {pwned}) `touch {pwned}` # % * ~ \\ |",
]
ENV_NAME = "HPCDET_TEST_VALUE"


def _spec(job_dir: Path, **changes: Any) -> JobSpec:
    spec = JobSpec(
        name="hostile",
        job_dir=str(job_dir),
        nodes=1,
        ranks_per_node=2,
        command=("python3", "-m", "hpcdet.harness"),
        environment={ENV_NAME: "plain"},
    )
    return dataclasses.replace(spec, **changes)


def _run(
    script: str, job_dir: Path, stub_srun: Path, rc: int = 0
) -> subprocess.CompletedProcess[str]:
    path = job_dir / "job.sh"
    path.write_text(script)
    subprocess.run(["bash", "-n", str(path)], check=True)
    env = {"PATH": f"{stub_srun}:/usr/bin:/bin", "SLURM_JOB_ID": "42", "STUB_SRUN_RC": str(rc)}
    return subprocess.run(["bash", str(path)], capture_output=True, text=True, env=env)


def _srun_args(spec: JobSpec) -> list[str]:
    options = ["--kill-on-bad-exit=1", "--label", "--export=ALL", f"--nodes={spec.nodes}",
               f"--ntasks={spec.nodes * spec.ranks_per_node}",
               f"--ntasks-per-node={spec.ranks_per_node}",
               f"--cpus-per-task={spec.cpus_per_rank}"]  # fmt: skip
    return options + launch_argv(spec.container, spec.command, cwd=f"{spec.job_dir}/context")


@pytest.mark.parametrize("template", HOSTILE)
@pytest.mark.parametrize("field", ["name", "comment", "partition", "env", "command", "job_dir"])
def test_hostile_value_arrives_intact(
    tmp_path: Path, stub_srun: Path, field: str, template: str
) -> None:
    pwned = tmp_path / "pwned"
    value = template.format(pwned=pwned)
    job_dir = tmp_path / "jobs" / (value.replace("\\", "") if field == "job_dir" else "plain")
    all_changes: dict[str, dict[str, Any]] = {
        "name": {"name": value}, "comment": {"comment": value}, "partition": {"partition": value},
        "env": {"environment": {ENV_NAME: value}},
        "command": {"command": ("python3", value, "-c", value)}, "job_dir": {},
    }  # fmt: skip
    changes = all_changes[field]
    spec = _spec(job_dir, **changes)
    (job_dir / "context").mkdir(parents=True)
    result = _run(SlurmBackend().render(spec).script, job_dir, stub_srun)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:-2] == _srun_args(spec)
    assert lines[-2:] == [f"PWD={job_dir}/context", f"VALUE={spec.environment[ENV_NAME]}"]
    assert (job_dir / "exit-42").read_text() == "0\n"
    assert not pwned.exists()


@pytest.mark.parametrize("template", HOSTILE)
def test_hostile_image_and_bind_paths_arrive_intact(
    tmp_path: Path, stub_srun: Path, template: str
) -> None:
    pwned = tmp_path / "pwned"
    # apptainer splits bind specs on "," and ":", so those cannot be in bind paths.
    value = template.format(pwned=pwned).replace(",", "").replace(":", "")
    mount = BindMount(f"/data/{value}", f"/mnt/{value}", read_only=True)
    container = ContainerSpec("apptainer", f"/images/{value}.sif", (mount,), use_gpus=True)
    spec = _spec(tmp_path / "job", container=container)
    (tmp_path / "job" / "context").mkdir(parents=True)
    result = _run(SlurmBackend().render(spec).script, tmp_path / "job", stub_srun)
    assert result.returncode == 0, result.stderr
    expected = _srun_args(dataclasses.replace(spec, container=dataclasses.replace(
        container, bind_mounts=(mount, BindMount(spec.job_dir, spec.job_dir)))))  # fmt: skip
    assert result.stdout.splitlines()[:-2] == expected
    assert not pwned.exists()


@pytest.mark.parametrize("rc", [0, 1, 3, 137])
def test_script_exits_with_sruns_status_and_records_it(
    tmp_path: Path, stub_srun: Path, rc: int
) -> None:
    job_dir = tmp_path / "job"
    (job_dir / "context").mkdir(parents=True)
    result = _run(SlurmBackend().render(_spec(job_dir)).script, job_dir, stub_srun, rc=rc)
    assert result.returncode == rc
    assert (job_dir / "exit-42").read_text() == f"{rc}\n"
    assert sorted(p.name for p in job_dir.iterdir()) == ["context", "exit-42", "job.sh"]


def test_sigterm_from_scancel_is_recorded_as_143(tmp_path: Path, stub_srun: Path) -> None:
    job_dir = tmp_path / "job"
    (job_dir / "context").mkdir(parents=True)
    script = job_dir / "job.sh"
    script.write_text(SlurmBackend().render(_spec(job_dir)).script)
    started = tmp_path / "srun-started"
    env = {
        "PATH": f"{stub_srun}:/usr/bin:/bin",
        "SLURM_JOB_ID": "42",
        "STUB_SRUN_HANG": str(started),
    }
    proc = subprocess.Popen(["bash", str(script)], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL)  # fmt: skip
    # until the stub srun is running (bounded: never hangs the suite)
    wait_until(lambda: started.exists() or proc.poll() is not None, "the stub srun's start")
    os.killpg(proc.pid, signal.SIGTERM)  # as scancel does: the whole job gets SIGTERM
    assert proc.wait(timeout=HANG_GUARD_S) == 143
    assert (job_dir / "exit-42").read_text() == "143\n"


def test_missing_context_directory_fails_the_job(tmp_path: Path, stub_srun: Path) -> None:
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    result = _run(SlurmBackend().render(_spec(job_dir)).script, job_dir, stub_srun)
    assert result.returncode != 0
    assert result.stdout == ""  # srun never ran
    assert (job_dir / "exit-42").read_text() == f"{result.returncode}\n"


def test_percent_in_job_dir_is_literal_in_log_paths(tmp_path: Path) -> None:
    script = SlurmBackend().render(_spec(tmp_path / "100%x")).script
    assert f"#SBATCH --output={tmp_path}/100%%x/slurm-%j.out" in script.splitlines()


# Each case puts an unsafe character into one field; the error must name that field.
FIELDS: list[tuple[str, Callable[[JobSpec, str], JobSpec]]] = [
    ("spec.name", lambda s, v: dataclasses.replace(s, name=v)),
    ("spec.job_dir", lambda s, v: dataclasses.replace(s, job_dir=v)),
    ("spec.partition", lambda s, v: dataclasses.replace(s, partition=v)),
    ("spec.time_limit", lambda s, v: dataclasses.replace(s, time_limit=v)),
    ("spec.account", lambda s, v: dataclasses.replace(s, account=v)),
    ("spec.qos", lambda s, v: dataclasses.replace(s, qos=v)),
    ("spec.wckey", lambda s, v: dataclasses.replace(s, wckey=v)),
    ("spec.comment", lambda s, v: dataclasses.replace(s, comment=v)),
    ("spec.exclude", lambda s, v: dataclasses.replace(s, exclude=v)),
    ("spec.signal", lambda s, v: dataclasses.replace(s, signal=v)),
    ("spec.script_name", lambda s, v: dataclasses.replace(s, script_name=v)),
    ("spec.command[1]", lambda s, v: dataclasses.replace(s, command=("python3", v))),
    ("spec.sbatch_args[0]", lambda s, v: dataclasses.replace(s, sbatch_args=(f"--mem={v}",))),
    ("spec.environment['X']", lambda s, v: dataclasses.replace(s, environment={"X": v})),
    ("spec.environment key", lambda s, v: dataclasses.replace(s, environment={f"X{v}": "1"})),
    ("spec.gpu_type", lambda s, v: dataclasses.replace(s, gpus_per_node=1, gpu_type=v)),
    ("spec.container.image",
     lambda s, v: dataclasses.replace(s, container=ContainerSpec("apptainer", v))),
    ("spec.container.bind_mounts[0].host_path", lambda s, v: dataclasses.replace(
        s, container=ContainerSpec("apptainer", "i", (BindMount(f"/d{v}", "/d"),)))),
    ("spec.container.bind_mounts[0].container_path", lambda s, v: dataclasses.replace(
        s, container=ContainerSpec("apptainer", "i", (BindMount("/d", f"/d{v}"),)))),
    ("spec.container.pass_environment[0]", lambda s, v: dataclasses.replace(
        s, container=ContainerSpec("podman", "i", pass_environment=(f"X{v}",)))),
]  # fmt: skip


@pytest.mark.parametrize("char", ["\n", "\r", "\x00"], ids=["LF", "CR", "NUL"])
@pytest.mark.parametrize(("where", "change"), FIELDS, ids=[f[0] for f in FIELDS])
def test_unsafe_characters_are_refused_naming_the_field(
    tmp_path: Path, where: str, change: Callable[[JobSpec, str], JobSpec], char: str
) -> None:
    spec = change(_spec(tmp_path), f"x{char}echo INJECTED")
    with pytest.raises(ValidationError) as info:
        SlurmBackend().render(spec)
    assert str(info.value).startswith(where)
    assert repr(char) in str(info.value)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"job_dir": "relative/dir"}, "must be an absolute path"),
        ({"job_dir": "/a\\b"}, "backslash"),
        ({"name": ""}, "spec.name must not be empty"),
        ({"command": ()}, "spec.command must not be empty"),
        ({"nodes": 0}, "spec.nodes must be a positive integer"),
        ({"ranks_per_node": -1}, "spec.ranks_per_node must be a positive integer"),
        ({"cpus_per_rank": 0}, "spec.cpus_per_rank must be a positive integer"),
        ({"gpus_per_node": -1}, "spec.gpus_per_node must be a non-negative integer"),
        ({"gpus_per_node": 1, "gpu_type": "a100:2"}, "is not a GPU type name"),
        ({"launcher": "pbsdsh"}, "spec.launcher must be one of"),
        ({"environment": {"1X": "v"}}, "invalid variable name '1X'"),
        ({"environment": {"A-B": "v"}}, "invalid variable name 'A-B'"),
        ({"script_name": "../job.sh"}, "plain file name"),
    ],
)
def test_invalid_specs_are_refused(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        SlurmBackend().render(dataclasses.replace(_spec(tmp_path), **changes))
    assert message in str(info.value)


def test_controlled_sbatch_args_are_refused_at_render(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"spec\.sbatch_args\[0\]: option --partition"):
        SlurmBackend().render(_spec(tmp_path, sbatch_args=("--partition=x",)))


def test_render_has_no_side_effects(tmp_path: Path) -> None:
    SlurmBackend().render(_spec(tmp_path / "job"))
    assert not (tmp_path / "job").exists()


def test_environment_is_inherited_by_default(tmp_path: Path) -> None:
    # The job's own variables are exported; everything else comes from sbatch's default
    # --export=ALL, so nothing in the script may reset the environment.
    script = SlurmBackend().render(_spec(tmp_path)).script
    assert "env -i" not in script and "--cleanenv" not in script
    assert f"export {ENV_NAME}=plain" in script.splitlines()
    assert os.linesep == "\n"
