"""A command's script and native options (det cmd run), for Slurm and PBS."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hpcdet.dispatcher.command_script import command_script
from hpcdet.dispatcher.pbs.backend import PbsBackend
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.tasks import TaskResources, task_dialect
from hpcdet.errors import ConfigError, ValidationError

HOSTILE = ["a b", "it's", '"$(touch /tmp/pwned)"', "; rm -rf x", "`id`", "$HOME", "*"]


def run_script(tmp_path: Path, script: str) -> str:
    path = tmp_path / "job" / "script"
    path.parent.mkdir(exist_ok=True)
    path.write_text(script)
    path.chmod(0o700)
    return subprocess.run([str(path)], capture_output=True, text=True, check=True,
                          cwd="/").stdout


def test_words_reach_the_program_unchanged(tmp_path: Path) -> None:
    script = command_script(["printf", "%s\\n", *HOSTILE])
    assert run_script(tmp_path, script).splitlines() == HOSTILE


def test_one_word_is_a_shell_command_run_in_the_job_directory(tmp_path: Path) -> None:
    out = run_script(tmp_path, command_script(["echo one && pwd; echo $DET_TASK_DIR"]))
    job = str((tmp_path / "job").resolve())
    assert out.splitlines() == ["one", job, job]


def test_the_context_and_work_dir(tmp_path: Path) -> None:
    (tmp_path / "job" / "context").mkdir(parents=True)
    assert run_script(tmp_path, command_script(["pwd"], has_context=True)).strip() == \
        str((tmp_path / "job" / "context").resolve())
    assert run_script(tmp_path, command_script(["pwd"], work_dir=str(tmp_path))).strip() == \
        str(tmp_path)


@pytest.mark.parametrize(("entrypoint", "work_dir", "message"), [
    ([], None, "the command is empty"),
    (["echo", "a\nb"], None, "entrypoint[1]"),
    (["a\x00"], None, "NUL"),
    (["pwd"], "/x\ny", "work_dir"),
])
def test_unsafe_values_are_refused(entrypoint: list[str], work_dir: str | None,
                                   message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("[", r"\[")):
        command_script(entrypoint, work_dir=work_dir)


def test_slurm_resources_follow_the_clusters_gpu_request() -> None:
    dialect = task_dialect("slurm")
    gpus = TaskResources(nodes=2, ranks_per_node=4, gpus_per_node=4, gpu_type="a100",
                         qos="high", nice=150)
    assert dialect.resource_settings(gpus, SlurmBackend()) == (
        ("nodes", "2"), ("ntasks-per-node", "4"), ("cpus-per-task", "1"),
        ("gpus-per-node", "a100:4"), ("qos", "high"), ("nice", "150"))
    gres = dialect.resource_settings(TaskResources(gpus_per_node=1),
                                     SlurmBackend(gpu_request="gres"))
    assert ("gres", "gpu:1") in gres and ("nice", "0") not in gres


def test_slurm_sbatch_args_are_refused_by_name() -> None:
    dialect = task_dialect("slurm")
    assert dialect.batch_arg_settings(["--mem=1G", "-t 5"], "<config>.slurm.sbatch_args") \
        == (("mem", "1G"), ("time", "5"))
    with pytest.raises(ConfigError) as caught:
        dialect.batch_arg_settings(["--mem=1G", "--gres=gpu:2"], "<config>.slurm.sbatch_args")
    assert caught.value.errors[0].startswith("<config>.slurm.sbatch_args[1]: ")


def test_pbs_resources_and_args() -> None:
    dialect = task_dialect("pbs")
    resources = TaskResources(nodes=2, ranks_per_node=2, gpus_per_node=2, nice=10)
    assert dialect.resource_settings(resources, PbsBackend()) == (
        ("l", "select=2:ncpus=2:mpiprocs=2:ngpus=2"), ("l", "place=scatter"), ("p", "-10"))
    assert dialect.batch_arg_settings(["-l mem=4gb"], "<config>.pbs.pbsbatch_args") == \
        (("l", "mem=4gb"),)
    with pytest.raises(ConfigError) as caught:
        dialect.batch_arg_settings(["-J 1-3"], "<config>.pbs.pbsbatch_args")
    assert caught.value.errors[0].startswith("<config>.pbs.pbsbatch_args")
