"""A trial job's log files as each scheduler names them, and PBS without a GPU request."""

from __future__ import annotations

from pathlib import Path

from hpcdet.dispatcher import JobSpec
from hpcdet.dispatcher.jobdir import job_log_path
from hpcdet.dispatcher.pbs.backend import PbsBackend
from hpcdet.dispatcher.transport.local import LOCAL


def test_slurm_names_are_the_default(tmp_path: Path) -> None:
    assert job_log_path(tmp_path, "42", "out", files=LOCAL) == tmp_path / "slurm-42.out"
    assert job_log_path(tmp_path, "42", "err", files=LOCAL) == tmp_path / "slurm-42.err"


def test_the_file_pbs_wrote_is_found(tmp_path: Path) -> None:
    (tmp_path / "12.pbs01.OU").write_text("hello\n")
    (tmp_path / "12.pbs01.ER").write_text("")
    assert job_log_path(tmp_path, "12.pbs01", "out", files=LOCAL) == tmp_path / "12.pbs01.OU"
    assert job_log_path(tmp_path, "12.pbs01", "err", files=LOCAL) == tmp_path / "12.pbs01.ER"


def _spec() -> JobSpec:
    return JobSpec(name="det-1-1-1", job_dir="/jobs/exp-1/trial-1", nodes=2, ranks_per_node=2,
                   command=("python3", "-m", "hpcdet.harness"), gpus_per_node=2)


def test_pbs_asks_for_gpus_unless_the_site_gives_them_unasked() -> None:
    asked = PbsBackend().render(_spec()).script
    assert "#PBS -l select=2:ncpus=2:mpiprocs=2:ngpus=2" in asked.splitlines()
    unasked = PbsBackend(gpu_request="none").render(_spec()).script
    assert "#PBS -l select=2:ncpus=2:mpiprocs=2" in unasked.splitlines()
