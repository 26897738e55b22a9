"""The failure summary (hpcdet.master.reports.failure): the classifier on recorded lines,
the API's ``failure`` object, ``det trial describe``'s line, the trial page's box and the
log highlighter. Chromium: tests/web (not yet: see the module's report).

Recorded on the dev cluster (Slurm 25.11, 2026-11-30): ``sbatch --time=0:01 --wrap 'sleep
200'`` wrote the time-limit line and ended TIMEOUT 0:0; ``scancel`` of another job wrote the
"DUE to SIGNAL Terminated" line and sacct said ``CANCELLED by 0``. bash on this machine
wrote the Segmentation fault / Killed lines (exit 139 / 137). The GPU lines are PyTorch's
own message text (no GPU here); the srun and oom-kill lines are Slurm's message formats.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from log_seed import add_experiment, add_job, add_trial, sessions

from hpcdet.cli.failure_text import failure_line
from hpcdet.cli.task import describe_text
from hpcdet.dispatcher import JobPhase
from hpcdet.master.models import CommandTask, StateChange, TrialLog
from hpcdet.master.reports.failure import (
    FAILURE_LINE,
    TAIL_LINES,
    JobEnd,
    LogLine,
    classify,
    with_time_limit,
)
from hpcdet.master.web.trial_logs import log_level

TIME_LIMIT = ("[2026-11-30T11:40:19.007] error: *** JOB 1000465 ON node1 CANCELLED AT "
              "2026-11-30T11:40:19 DUE TO TIME LIMIT ***")
SCANCELLED = ("[2026-11-30T11:40:16.154] error: *** JOB 1000466 ON node1 CANCELLED AT "
              "2026-11-30T11:40:16 DUE to SIGNAL Terminated ***")
SEGFAULT = ('bash: line 1: 32593 Segmentation fault      python3 -c "import ctypes; '
            'ctypes.string_at(0)"')
KILLED = 'bash: line 1: 32636 Killed                  bash -c "kill -9 $$"'
GPU_OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
           "GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.")
SRUN_OOM = ("srun: error: node3: task 0: Out Of Memory")
OOM_KILL = ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=1000470.0. Some of "
            "your processes may have been killed by the cgroup out-of-memory handler.")
PBS_WALLTIME = "=>> PBS: job killed: walltime 3630 exceeded limit 3600"


def lines(*texts: str) -> list[LogLine]:
    return [LogLine(i + 1, text) for i, text in enumerate(("step 10 loss=0.3", *texts))]


@pytest.mark.parametrize(("end", "log", "cause", "words"), [
    (JobEnd("TIMEOUT", "TIMEOUT"), [TIME_LIMIT], "time_limit", "hit its time limit"),
    (JobEnd("FAILED", "FAILED", 1), [TIME_LIMIT], "time_limit", "hit its time limit"),
    (JobEnd("FAILED", "FAILED", 1), ["Traceback (most recent call last):", GPU_OOM],
     "oom_gpu", "ran out of GPU memory"),
    (JobEnd("OUT_OF_MEMORY", "OUT_OF_MEMORY", 0), [OOM_KILL], "oom_host",
     "ran out of host memory"),
    (JobEnd("FAILED", "FAILED", 1), [SRUN_OOM], "oom_host", "ran out of host memory"),
    (JobEnd("FAILED", "FAILED", 137), [KILLED], "oom_host", "ran out of host memory"),
    (JobEnd("FAILED", "FAILED", 139), [SEGFAULT], "signal",
     "was killed by SIGSEGV (segmentation fault)"),
    (JobEnd("CANCELLED", "CANCELLED by 0"), [SCANCELLED], "cancelled", "cancelled by root"),
    (JobEnd("CANCELLED", "CANCELLED", cancelled_by="user_a"), [], "cancelled",
     "cancelled by user_a"),
    (JobEnd("NODE_FAIL", "NODE_FAIL"), [], "node_failure", "its node failed"),
    (JobEnd("PREEMPTED", "PREEMPTED"), [], "preempted", "was preempted by the scheduler"),
    (JobEnd("FAILED", "F", None), [PBS_WALLTIME], "time_limit", "hit its time limit"),
    (JobEnd("FAILED", "FAILED", 2), ["ValueError: bad"], "exit_code", "exited with code 2"),
    (JobEnd("FAILED", "FAILED", None), [], "unknown",
     "failed; the scheduler gave no exit code"),
    (JobEnd("MISSING", None, None), [], "unknown", "the scheduler lost track of its job"),
])
def test_classify_recorded_endings(end: JobEnd, log: list[str], cause: str,
                                   words: str) -> None:
    found = classify(end, lines(*log))
    assert (found.cause, found.words) == (cause, words)
    assert "None" not in found.words
    assert not set(found.words.split()) & {phase.value for phase in JobPhase}  # no raw enum


def test_last_error_line_is_the_failure_line_with_its_id() -> None:
    found = classify(JobEnd("FAILED", "FAILED", 1),
                     lines("Traceback (most recent call last):", GPU_OOM, "cleanup done"))
    assert found.last_error == LogLine(3, GPU_OOM)
    assert classify(JobEnd("FAILED", "FAILED", 1), lines("all fine")).last_error is None


def test_only_the_tail_is_read() -> None:
    early = [LogLine(1, GPU_OOM)] + [LogLine(i, "ok") for i in range(2, TAIL_LINES + 2)]
    assert classify(JobEnd("FAILED", "FAILED", 1), early).cause == "exit_code"


@pytest.mark.parametrize("text", [TIME_LIMIT, SCANCELLED, SEGFAULT, KILLED, GPU_OOM,
                                  "RuntimeError: CUDA out of memory.", SRUN_OOM, OOM_KILL,
                                  PBS_WALLTIME, "Killed"])
def test_the_highlighter_marks_the_hpc_failure_lines(text: str) -> None:
    assert log_level(text) == "error"


def test_the_highlighter_leaves_ordinary_lines() -> None:
    assert log_level("Killed 3 stale workers? no: skipped") == ""
    assert log_level("memory ok, no oom") == ""


def test_the_page_script_highlights_the_same_lines() -> None:
    script = (Path(__file__).parents[3] / "hpcdet/master/static/records.js").read_text()
    found = re.search(r"var FAILURE = /(.*)/;", script)
    assert found is not None and found.group(1) == FAILURE_LINE.pattern


def test_cli_line_from_the_failure_object() -> None:
    failure = {"cause": "oom_gpu", "words": "ran out of GPU memory",
               "last_error_line": {"log_id": 7, "line_number": 3, "text": GPU_OOM}}
    assert failure_line({"failure": failure}) == f"failed: ran out of GPU memory — {GPU_OOM}\n"
    assert failure_line({"failure": None}) == ""


def test_api_and_page_of_a_timed_out_trial(app: Flask, client: FlaskClient) -> None:
    with sessions(app).begin() as session:
        exp = add_experiment(session)
        trial = add_trial(session, exp, state="ERROR")
        add_job(session, trial, phase="TIMEOUT", native_state="TIMEOUT", exit_code=0)
        session.add_all(TrialLog(trial_id=trial.id, job_id="101", stream="stderr", line=text)
                        for text in ("step 1", TIME_LIMIT, "after"))
        trial_id = trial.id
    user = {"X-Hpcdet-User": "alice"}
    body = client.get(f"/api/v1/trials/{trial_id}", headers=user).get_json()
    failure = body["trial"]["failure"]
    assert failure["cause"] == "time_limit" and failure["words"] == "hit its time limit"
    last = failure["last_error_line"]
    assert (last["line_number"], last["text"]) == (2, TIME_LIMIT)
    page = client.get(f"/trials/{trial_id}", headers=user).get_data(as_text=True)
    assert 'data-failure="time_limit"' in page and "hit its time limit" in page
    assert f'#log-{last["log_id"]}"' in page and f'id="log-{last["log_id"]}"' in page
    assert page.index("data-failure=") < page.index('id="facts"')  # at the top


def test_a_killed_trial_says_who_and_a_running_one_has_no_failure(
        app: Flask, client: FlaskClient) -> None:
    with sessions(app).begin() as session:
        exp = add_experiment(session)
        killed = add_trial(session, exp, state="CANCELED")
        add_job(session, killed, phase="CANCELLED", native_state="CANCELLED by 0")
        session.add(StateChange(entity_kind="trial", entity_id=killed.id,
                                from_state="RUNNING", to_state="STOPPING_KILLED",
                                cause="kill requested", actor="user_a"))
        running = add_trial(session, exp)
        ids = killed.id, running.id
    user = {"X-Hpcdet-User": "alice"}
    failure = client.get(f"/api/v1/trials/{ids[0]}", headers=user).get_json()["trial"]["failure"]
    assert (failure["cause"], failure["words"]) == ("cancelled", "cancelled by user_a")
    assert client.get(f"/api/v1/trials/{ids[1]}",
                      headers=user).get_json()["trial"]["failure"] is None


def test_experiment_lists_its_errored_trials_causes(app: Flask, client: FlaskClient) -> None:
    with sessions(app).begin() as session:
        exp = add_experiment(session)
        for code in (139, 139):
            trial = add_trial(session, exp, state="ERROR")
            add_job(session, trial, phase="FAILED", native_state="FAILED", exit_code=code)
        add_trial(session, exp, state="COMPLETED")
        exp_id = exp.id
    user = {"X-Hpcdet-User": "alice"}
    body = client.get(f"/api/v1/experiments/{exp_id}", headers=user).get_json()
    [entry] = body["experiment"]["failures"]
    assert entry["cause"] == "signal" and len(entry["trial_ids"]) == 2
    page = client.get(f"/experiments/{exp_id}", headers=user).get_data(as_text=True)
    assert "was killed by SIGSEGV (segmentation fault)" in page
    assert page.index("data-failures") < page.index("data-poll-status")


def test_an_errored_task_says_why_from_its_log_files(app: Flask, client: FlaskClient,
                                                     tmp_path: Path) -> None:
    (tmp_path / "output.log").write_text("epoch 1\n")
    (tmp_path / "error.log").write_text(f"warming up\n{SEGFAULT}\n")
    with sessions(app).begin() as session:
        task = CommandTask(owner="alice", name="t", state="ERROR", job_id="303",
                           job_dir=str(tmp_path), options=[], args=[], cwd="/", workdir="/",
                           output_pattern="out.txt", native_state="FAILED", exit_code=139)
        session.add(task)
        session.flush()
        task_id = task.id
    body = client.get(f"/api/v1/tasks/{task_id}",
                      headers={"X-Hpcdet-User": "alice"}).get_json()["task"]
    failure = body["failure"]
    assert failure["cause"] == "signal" and failure["signal"] == "SIGSEGV"
    # The line's id is its byte offset in error.log (where ?offset= reads from).
    assert failure["last_error_line"] == {"log_id": len("warming up\n"), "line_number": None,
                                          "text": SEGFAULT}
    assert describe_text(body).splitlines()[1].startswith("failed: was killed by SIGSEGV")


def test_the_docs_say_what_the_classifier_does() -> None:
    from hpcdet.master.reports import failure

    doc = " ".join((Path(__file__).parents[3] / "docs/web.md").read_text().split())
    assert "hpcdet/master/reports/failure.py" in doc
    assert f"last {failure.TAIL_LINES} lines" in doc
    assert failure.EXPERIMENT_TRIALS == 5 and "five most recently ended errored" in doc
    for words in ("ran out of GPU memory", "ran out of host memory", "hit its time limit",
                  "its node failed"):
        assert words in doc


def test_the_line_that_tells_the_cause_is_linked_before_a_later_srun_line() -> None:
    srun = "srun: error: node1: task 0: Exited with exit code 1"
    found = classify(JobEnd("FAILED", "FAILED", 1), lines(GPU_OOM, srun))
    assert found.cause == "oom_gpu" and found.last_error == LogLine(2, GPU_OOM)
    assert classify(JobEnd("FAILED", "FAILED", 2), lines(srun)).last_error == LogLine(2, srun)


@pytest.mark.parametrize(("args", "words"), [
    (["--time=1"], "hit its time limit of 1 minute"),
    (["--mem=1G", "-t 90"], "hit its time limit of 1 hour 30 minutes"),
    (["-t2-3:04"], "hit its time limit of 2 days 3 hours 4 minutes"),
    (["--time 0:30"], "hit its time limit of 30 seconds"),
    (["--time=infinite"], "hit its time limit"),
    (["--time=1:x"], "hit its time limit"),
    ([], "hit its time limit"),
])
def test_the_time_limit_is_named_when_the_config_set_it(args: list[str], words: str) -> None:
    found = with_time_limit(classify(JobEnd("TIMEOUT", "TIMEOUT"), lines(TIME_LIMIT)),
                            {"slurm": {"sbatch_args": args}})
    assert found.words == words
    # Only a time limit names one.
    other = with_time_limit(classify(JobEnd("NODE_FAIL"), []), {"slurm": {"sbatch_args": args}})
    assert other.words == "its node failed"


def test_a_cancelled_job_links_slurms_line_and_its_killed_is_no_oom() -> None:
    killed = "/var/spool/slurmd/job7/slurm_script: line 48: 19183 Killed      srun python"
    found = classify(JobEnd("CANCELLED", "CANCELLED by 0", 137), lines(SCANCELLED, killed))
    assert (found.cause, found.words) == ("cancelled", "cancelled by root")
    assert found.last_error == LogLine(2, SCANCELLED)
