"""The command-task wrapper and sbatch argv, rendered and run by a real bash.

Slurm is stood in for by the environment variables it sets and by the files the wrapper's
standard output and error go to; the real cluster runs it in tests/integration.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hang_guard import HANG_GUARD_S, wait_until

from hpcdet.dispatcher.render import make_environment
from hpcdet.dispatcher.slurm.task import (
    TaskSpec,
    check_script,
    environment_file,
    pattern_word,
    render_task,
    task_files,
    wrap_script,
)
from hpcdet.errors import ValidationError

SPEC = TaskSpec(task_id=7, name="my job", job_dir="/shared/hpcdet/tasks/task-7",
                workdir="/home/alice/run", submit_dir="/home/alice", comment="hpcdet:c:task-7",
                args=("one", "two words"), options=(("time", "10"), ("hold", None)),
                partition="debug", account="det-alice", output="out-%j.log", error="err-%x.log")


def test_golden_wrapper(golden_check: Callable[[str, str], None]) -> None:
    golden_check("slurm_task.sbatch", render_task(SPEC, make_environment()).script)


def test_every_option_goes_on_the_command_line_hpcdets_first() -> None:
    submission = render_task(SPEC, make_environment(), sbatch="/opt/slurm/bin/sbatch")
    assert submission.script_path == "/shared/hpcdet/tasks/task-7/hpcdet-task.sh"
    assert submission.argv == (
        "/opt/slurm/bin/sbatch", "--parsable", "--job-name=my job",
        "--comment=hpcdet:c:task-7", "--chdir=/home/alice/run",
        "--output=/shared/hpcdet/tasks/task-7/output.log", "--open-mode=append",
        "--export=ALL", "--error=/shared/hpcdet/tasks/task-7/error.log",
        "--partition=debug", "--account=det-alice", "--time=10", "--hold",
        "/shared/hpcdet/tasks/task-7/hpcdet-task.sh", "one", "two words")


def test_export_none_and_a_percent_in_the_job_directory() -> None:
    spec = replace(SPEC, job_dir="/shared/100%/task-7", export_environment=False, error=None)
    argv = render_task(spec, make_environment()).argv
    assert "--export=NONE" in argv and "--output=/shared/100%%/task-7/output.log" in argv
    assert not any(word.startswith("--error") for word in argv)


@pytest.mark.parametrize("field", ["name", "workdir", "comment", "output"])
def test_a_line_break_in_any_value_is_refused(field: str) -> None:
    with pytest.raises(ValidationError, match="newline"):
        render_task(replace(SPEC, **{field: "a\nb"}), make_environment())


@pytest.mark.parametrize(("pattern", "word"), [
    ("slurm-%j.out", 'slurm-"${SLURM_JOB_ID}".out'),
    ("%x_%u@%N.%%", '"${SLURM_JOB_NAME}"_"${SLURM_JOB_USER}"@"${SLURMD_NODENAME}".%'),
    ("%5j-%A-%a-%2t-%n-%J", '"$(printf %05d "${SLURM_JOB_ID}")"-"${SLURM_JOB_ID}"'
                            '-4294967294-00-0-"${SLURM_JOB_ID}".4294967291'),
    ("/a dir/$HOME`x`", "'/a dir/$HOME`x`'"),
    ("esc\\%j", "esc%j"),
    ("NONE", "/dev/null"),
])
def test_filename_patterns_become_bash_words(pattern: str, word: str) -> None:
    assert pattern_word(pattern) == word


def test_environment_file_quotes_values_and_checks_names() -> None:
    text = environment_file({"B": "it's $HOME", "A": ""})
    assert text.splitlines()[1:] == ["export A=''", "export B='it'\"'\"'s $HOME'"]
    with pytest.raises(ValidationError, match="not a valid variable name"):
        environment_file({"BAD-NAME": "x"})
    with pytest.raises(ValidationError, match="newline"):
        environment_file({"A": "two\nlines"})


@pytest.mark.parametrize(("script", "message"), [
    ("", "empty"), ("echo hi\n", "first line must start with #!"),
    ("#!/bin/sh\r\necho\r\n", "DOS line breaks"), ("#!/bin/sh\n\x00", "NUL"),
])
def test_scripts_sbatch_would_refuse_are_refused(script: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        check_script(script)


def _prepare(spec: TaskSpec, script: str,
             environment: dict[str, str] | None) -> tuple[list[str], dict[str, str]]:
    """Write the job directory; the argv and environment slurmstepd would run it with."""
    submission = render_task(spec, make_environment())
    Path(spec.job_dir).mkdir(parents=True)
    Path(submission.script_path).write_text(submission.script)
    for path, (text, mode) in task_files(spec, script, environment).items():
        Path(path).write_text(text)
        Path(path).chmod(mode)
    slurm = {"SLURM_JOB_ID": "77", "SLURM_JOB_NAME": spec.name, "SLURM_JOB_USER": "alice",
             "SLURMD_NODENAME": "node1", "PATH": os.environ["PATH"], "MASTER_SECRET": "s"}
    return ["bash", submission.script_path, *spec.args], slurm


def _run(spec: TaskSpec, script: str, environment: dict[str, str] | None,
         tmp_path: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run the wrapper to its end, its output and error going to the master's copies."""
    argv, env = _prepare(spec, script, environment)
    with (tmp_path / "output.log").open("w") as out, (tmp_path / "error.log").open("w") as err:
        return subprocess.run(argv, cwd=spec.workdir, env=env, stdout=out, stderr=err,
                              input=stdin, text=True, timeout=HANG_GUARD_S)


USER_SCRIPT = """#!/bin/sh
echo "args=$* greeting=$GREETING secret=${MASTER_SECRET:-unset} export=$SLURM_EXPORT_ENV"
echo "submitted from $SLURM_SUBMIT_DIR" >&2
exit 3
"""


def test_the_wrapper_runs_the_script_with_the_senders_environment(tmp_path: Path) -> None:
    spec = replace(SPEC, job_dir=str(tmp_path / "job"), workdir=str(tmp_path),
                   submit_dir="/home/alice", options=(), error=None)
    done = _run(spec, USER_SCRIPT, {"GREETING": "hi there", "PATH": os.environ["PATH"]},
                tmp_path)
    assert done.returncode == 3
    expected = "args=one two words greeting=hi there secret=unset export=ALL\n" \
               "submitted from /home/alice\n"
    assert (tmp_path / "output.log").read_text() == expected  # the master's copy
    assert (tmp_path / "out-77.log").read_text() == expected  # the user's --output
    assert (tmp_path / "job" / "exit-77").read_text() == "3\n"


def test_a_separate_error_file_and_append_mode(tmp_path: Path) -> None:
    spec = replace(SPEC, job_dir=str(tmp_path / "job"), workdir=str(tmp_path), options=(),
                   append=True)
    (tmp_path / "err-my job.log").write_text("earlier\n")
    _run(spec, USER_SCRIPT, {"PATH": os.environ["PATH"]}, tmp_path)
    assert (tmp_path / "out-77.log").read_text().startswith("args=one two words")
    assert (tmp_path / "err-my job.log").read_text() == "earlier\nsubmitted from /home/alice\n"
    assert (tmp_path / "error.log").read_text() == "submitted from /home/alice\n"


def test_export_none_keeps_slurms_environment(tmp_path: Path) -> None:
    spec = replace(SPEC, job_dir=str(tmp_path / "job"), workdir=str(tmp_path), options=(),
                   error=None, export_environment=False)
    _run(spec, USER_SCRIPT, None, tmp_path)
    assert "secret=s export=\n" in (tmp_path / "output.log").read_text()
    assert not (tmp_path / "job" / "environment.sh").exists()


def test_processes_left_behind_do_not_keep_the_job_alive(tmp_path: Path) -> None:
    spec = replace(SPEC, job_dir=str(tmp_path / "job"), workdir=str(tmp_path), options=(),
                   error=None)
    script = "#!/bin/sh\nsleep 300 &\necho started a background sleep\n"
    done = _run(spec, script, {"PATH": os.environ["PATH"]}, tmp_path)
    assert done.returncode == 0
    assert (tmp_path / "out-77.log").read_text() == "started a background sleep\n"


def test_wrap_makes_the_script_sbatch_makes() -> None:
    assert wrap_script("hostname") == ("#!/bin/sh\n# This script was created by sbatch "
                                       "--wrap.\n\nhostname\n")


SIGNALLED = """#!/bin/bash
trap 'echo "got USR1"; exit 5' USR1
trap 'sleep 0.2; echo "cleaned up"; exit 0' TERM
read -r line
echo "read: $line"
while true; do sleep 0.1; done
"""


def _started(spec: TaskSpec, tmp_path: Path) -> subprocess.Popen[bytes]:
    """The wrapper of SIGNALLED running in a session of its own, once the script reads."""
    argv, env = _prepare(spec, SIGNALLED, {"PATH": os.environ["PATH"]})
    (tmp_path / "input").write_text("from --input\n")
    with (tmp_path / "input").open("rb") as stdin, (tmp_path / "output.log").open("wb") as out:
        process = subprocess.Popen(argv, cwd=spec.workdir, env=env, stdin=stdin, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: "read: from --input" in (tmp_path / "output.log").read_text(),
                   "the job's first read")
    except AssertionError:
        process.kill()
        raise AssertionError((tmp_path / "output.log").read_text()) from None
    return process


def test_a_batch_shell_signal_reaches_the_script(tmp_path: Path) -> None:
    spec = replace(SPEC, job_dir=str(tmp_path / "job"), workdir=str(tmp_path), options=(),
                   error=None)
    process = _started(spec, tmp_path)
    process.send_signal(signal.SIGUSR1)  # --signal=B:USR1: the batch shell alone
    assert process.wait(timeout=HANG_GUARD_S) == 5
    assert (tmp_path / "out-77.log").read_text() == "read: from --input\ngot USR1\n"


def test_scancel_lets_the_script_clean_up(tmp_path: Path) -> None:
    spec = replace(SPEC, job_dir=str(tmp_path / "job"), workdir=str(tmp_path), options=(),
                   error=None)
    process = _started(spec, tmp_path)
    os.killpg(process.pid, signal.SIGTERM)  # Slurm signals every process of the job
    assert process.wait(timeout=HANG_GUARD_S) == 143
    assert (tmp_path / "output.log").read_text().endswith("cleaned up\n")
    assert (tmp_path / "job" / "exit-77").read_text() == "143\n"
