"""Submitting: writing the script and reading sbatch's answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher.base import Submission
from hpcdet.dispatcher.commands import UnparseableOutputError
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.errors import SchedulerError


def _submission(tmp_path: Path) -> Submission:
    path = str(tmp_path / "exp-1" / "trial-1" / "job-1.sh")
    return Submission("#!/bin/bash\nsrun true\n", path, ("sbatch", "--parsable", path))


@pytest.mark.parametrize(("stdout", "job_id"), [("12345\n", "12345"), ("678;cluster-a\n", "678")])
def test_submit_writes_the_script_and_returns_the_job_id(
    tmp_path: Path, recorded_slurm: Any, stdout: str, job_id: str
) -> None:
    runner = recorded_slurm({"sbatch": stdout})
    submission = _submission(tmp_path)
    assert SlurmBackend(runner=runner).submit(submission) == job_id
    assert runner.calls == [submission.argv]
    script = Path(submission.script_path)
    assert script.read_text() == submission.script
    assert script.stat().st_mode & 0o777 == 0o700
    assert [p.name for p in script.parent.iterdir()] == ["job-1.sh"]  # no temporary left


def test_submit_replaces_an_earlier_script(tmp_path: Path, recorded_slurm: Any) -> None:
    submission = _submission(tmp_path)
    Path(submission.script_path).parent.mkdir(parents=True)
    Path(submission.script_path).write_text("old")
    SlurmBackend(runner=recorded_slurm({"sbatch": "1\n"})).submit(submission)
    assert Path(submission.script_path).read_text() == submission.script


@pytest.mark.parametrize("stdout", ["", "Submitted batch job 12\n", "12abc\n", "x;y\n"])
def test_unparseable_sbatch_output_is_a_clear_error(
    tmp_path: Path, recorded_slurm: Any, stdout: str
) -> None:
    backend = SlurmBackend(runner=recorded_slurm({"sbatch": stdout}))
    with pytest.raises(
        UnparseableOutputError, match="could not make sense of sbatch output"
    ) as info:
        backend.submit(_submission(tmp_path))
    assert isinstance(info.value, SchedulerError)
    assert info.value.stdout == stdout
    assert "'<jobid>' or '<jobid>;<cluster>'" in str(info.value)


def test_sbatch_failure_propagates(tmp_path: Path, recorded_slurm: Any) -> None:
    error = SchedulerError(
        ["sbatch"],
        1,
        "",
        "sbatch: error: Batch job submission failed: Invalid partition name specified",
    )
    with pytest.raises(SchedulerError, match="Invalid partition name"):
        SlurmBackend(runner=recorded_slurm({"sbatch": error})).submit(_submission(tmp_path))
