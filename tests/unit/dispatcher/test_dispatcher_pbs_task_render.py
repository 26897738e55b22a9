"""The det qsub wrapper and qsub argv, rendered and run by a real bash.

PBS is stood in for by the variables it sets for a job (PBS_JOBID, PBS_JOBNAME) and by the
files the wrapper's standard output and error go to (the master's copies); the real
OpenPBS server runs it in tests/integration/test_it_qsub.py.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from hang_guard import HANG_GUARD_S

from hpcdet.dispatcher.pbs.task import DIALECT, render_task
from hpcdet.dispatcher.render import make_environment
from hpcdet.dispatcher.tasks import TaskSpec
from hpcdet.errors import ValidationError

USER_SCRIPT = """#!/bin/sh
echo "out greeting=$GREETING workdir=$PBS_O_WORKDIR bash=${BASH_VERSION:+yes}"
echo "err" >&2
exit 4
"""


def spec(tmp_path: Path, **changes: object) -> TaskSpec:
    base = TaskSpec(task_id=7, name="my-job", job_dir=str(tmp_path / "job"),
                    workdir=str(tmp_path / "submit"), submit_dir=str(tmp_path / "submit"),
                    comment="hpcdet:c:task-7", options=(("l", "walltime=00:01:00"),),
                    partition="workq", account="acct", output="", error="", joined=False)
    return replace(base, **changes)  # type: ignore[arg-type]


def run(spec: TaskSpec, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Write the job directory and run the wrapper as PBS would (output to the master's
    copies in the job directory)."""
    submission = render_task(spec, make_environment())
    Path(spec.job_dir).mkdir(parents=True)
    Path(spec.submit_dir).mkdir(parents=True, exist_ok=True)
    Path(submission.script_path).write_text(submission.script)
    files = DIALECT.task_files(spec, USER_SCRIPT, {"GREETING": "hi"})
    for path, (text, mode) in files.items():
        Path(path).write_text(text)
        Path(path).chmod(mode)
    env = {"PBS_JOBID": "77.pbs-dev", "PBS_JOBNAME": spec.name, "PATH": os.environ["PATH"]}
    job = Path(spec.job_dir)
    with (job / "output.log").open("w") as out, (job / "error.log").open("w") as err:
        return subprocess.run(["bash", submission.script_path], cwd=tmp_path, env=env,
                              stdout=out, stderr=err, text=True, timeout=HANG_GUARD_S)


def test_the_argv_puts_hpcdets_options_first(tmp_path: Path) -> None:
    argv = render_task(spec(tmp_path), make_environment(), qsub="/opt/pbs/bin/qsub").argv
    job = tmp_path / "job"
    assert argv == ("/opt/pbs/bin/qsub", "-N", "my-job", "-v", "HPCDET_JOB_TAG=hpcdet:c:task-7",
                    "-o", f"{job}/output.log", "-k", "oed", "-j", "n", "-e",
                    f"{job}/error.log", "-q", "workq", "-A", "acct", "-l", "walltime=00:01:00",
                    f"{job}/hpcdet-task.sh")


def test_qsubs_default_file_names_in_the_submit_directory(tmp_path: Path) -> None:
    done = run(spec(tmp_path), tmp_path)
    assert done.returncode == 4
    submit = tmp_path / "submit"
    expected = f"out greeting=hi workdir={submit} bash=\n"  # its #! line: /bin/sh
    assert (submit / "my-job.o77").read_text() == expected
    assert (submit / "my-job.e77").read_text() == "err\n"
    assert (tmp_path / "job" / "output.log").read_text() == expected  # the master's copy
    assert (tmp_path / "job" / "error.log").read_text() == "err\n"
    assert (tmp_path / "job" / "exit-77.pbs-dev").read_text() == "4\n"


def test_join_into_the_error_file_a_directory_and_a_shell(tmp_path: Path) -> None:
    (tmp_path / "submit" / "logs").mkdir(parents=True)
    joined = spec(tmp_path, error="logs", joined=True, interpreter="/bin/bash",
                  options=(("j", "eo"),))
    assert "-j" in render_task(joined, make_environment()).argv
    assert run(joined, tmp_path).returncode == 4
    text = (tmp_path / "submit" / "logs" / "my-job.e77").read_text()
    # -S /bin/bash runs the script instead of its #!/bin/sh line.
    assert sorted(text.splitlines()) == ["err", f"out greeting=hi workdir={tmp_path}/submit "
                                                "bash=yes"]


def test_values_are_checked_and_scripts_get_no_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="newline"):
        render_task(spec(tmp_path, name="a\nb"), make_environment())
    with pytest.raises(ValidationError, match="no arguments"):
        render_task(spec(tmp_path, args=("x",)), make_environment())
    with pytest.raises(ValidationError, match="commas"):
        render_task(spec(tmp_path, comment="a,b"), make_environment())
