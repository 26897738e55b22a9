"""Polling and cancelling against recorded squeue/sacct output.

The recorded lines were captured from the dev cluster (Slurm 22.05.8, Debian bookworm)
with exactly the argv the backend uses; the jobs were: 1 failed to launch, 2 completed,
3 exited non-zero, 4 held (later cancelled), 5 cancelled while running, 6 hit its time
limit, 8 an array of two tasks (8_1 has the raw id 9).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher.base import JobPhase, JobRef, JobStatus
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.states import SLURM_STATES, phase_of
from hpcdet.errors import SchedulerError, ValidationError

SQUEUE_ARGV = ("squeue", "--noheader", "--states=all")
SQUEUE_FORMAT = "--Format=JobArrayID:|,State:|,RestartCnt:|,NodeList:|,Reason:|"
# One line per array task (pending tasks would otherwise share one line).
SQUEUE_ARRAY = "--array"
SACCT_ARGV = ("sacct", "--noheader", "--parsable2", "-X")
SACCT_FORMAT = "--format=JobID,JobIDRaw,State,ExitCode,NodeList,Reason"

# squeue --noheader --states=all --jobs=1,2,3,4,5,6 --Format=JobID:|,State:|,RestartCnt:|,...
SQUEUE_RECORDED = """\
2|COMPLETED|0|node[1-2]|None|
3|FAILED|0|node[1-2]|NonZeroExitCode|
1|FAILED|0|node[1-2]|JobLaunchFailure|
4|PENDING|0||JobHeldUser|
5|RUNNING|0|node1|None|
"""
# The same jobs a minute later: 5 cancelled, 6 out of time, 8_1 done.
SQUEUE_RECORDED_LATER = """\
5|CANCELLED|0|node1|None|
6|TIMEOUT|0|node1|TimeLimit|
8_1|COMPLETED|0|node1|None|
"""
# sacct --noheader --parsable2 -X --jobs=... --format=JobID,JobIDRaw,State,ExitCode,NodeList,Reason
SACCT_RECORDED = """\
1|1|FAILED|0:53|node[1-2]|None
2|2|COMPLETED|0:0|node[1-2]|None
3|3|FAILED|15:0|node[1-2]|None
4|4|CANCELLED by 0|0:0|None assigned|JobHeldUser
5|5|CANCELLED by 0|0:0|node1|None
6|6|TIMEOUT|0:0|node1|None
8_1|9|COMPLETED|0:0|node1|None
8_2|8|COMPLETED|0:0|node1|None
"""
# What squeue says (exit status 1) when it knows none of the ids asked about.
SQUEUE_UNKNOWN = SchedulerError(
    ["squeue"], 1, "", "slurm_load_jobs error: Invalid job id specified\n"
)
SACCT_DISABLED = SchedulerError(["sacct"], 1, "", "Slurm accounting storage is disabled\n")


def _jobs(tmp_path: Path, *ids: str) -> list[JobRef]:
    return [JobRef(job_id, str(tmp_path)) for job_id in ids]


def _exit_file(tmp_path: Path, job_id: str, status: str) -> None:
    (tmp_path / f"exit-{job_id}").write_text(status)


def test_squeue_answers_in_one_call(tmp_path: Path, recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": SQUEUE_RECORDED})
    result = SlurmBackend(runner=runner).poll(_jobs(tmp_path, "4", "5", "2"))
    assert runner.calls == [(*SQUEUE_ARGV, "--jobs=4,5,2", SQUEUE_FORMAT, SQUEUE_ARRAY)]
    assert result == {
        "4": JobStatus("4", JobPhase.PENDING, "PENDING", reason="JobHeldUser", restarts=0),
        "5": JobStatus("5", JobPhase.RUNNING, "RUNNING", nodes="node1", restarts=0),
        "2": JobStatus("2", JobPhase.COMPLETED, "COMPLETED", nodes="node[1-2]", restarts=0),
    }


def test_finished_jobs_in_squeue_take_the_exit_code_from_the_exit_file(
    tmp_path: Path, recorded_slurm: Any
) -> None:
    _exit_file(tmp_path, "3", "143\n")
    runner = recorded_slurm({"squeue": SQUEUE_RECORDED})
    status = SlurmBackend(runner=runner).poll(_jobs(tmp_path, "3", "1"))
    assert status["3"] == JobStatus(
        "3", JobPhase.FAILED, "FAILED", reason="NonZeroExitCode", exit_code=143,
        nodes="node[1-2]", restarts=0,
    )  # fmt: skip
    assert (status["1"].phase, status["1"].exit_code) == (JobPhase.FAILED, None)


def test_sacct_is_asked_only_about_jobs_squeue_no_longer_holds_or_shows_cancelled(
    tmp_path: Path, recorded_slurm: Any
) -> None:
    runner = recorded_slurm({"squeue": SQUEUE_RECORDED_LATER, "sacct": SACCT_RECORDED})
    result = SlurmBackend(runner=runner).poll(_jobs(tmp_path, "5", "3", "6", "4", "1"))
    assert runner.calls == [
        (*SQUEUE_ARGV, "--jobs=5,3,6,4,1", SQUEUE_FORMAT, SQUEUE_ARRAY),
        (*SACCT_ARGV, "--jobs=3,4,1,5", SACCT_FORMAT),
    ]
    # Cancelled: the queue's status, with accounting's word of who cancelled it.
    assert result["5"] == JobStatus("5", JobPhase.CANCELLED, "CANCELLED by 0", nodes="node1",
                                    restarts=0)
    assert result["6"] == JobStatus("6", JobPhase.TIMEOUT, "TIMEOUT", reason="TimeLimit",
                                    nodes="node1", restarts=0)  # fmt: skip
    assert result["4"] == JobStatus("4", JobPhase.CANCELLED, "CANCELLED by 0", reason="JobHeldUser",
                                    exit_code=0, source="sacct")  # fmt: skip
    assert result["3"] == JobStatus("3", JobPhase.FAILED, "FAILED", exit_code=15,
                                    nodes="node[1-2]", source="sacct")  # fmt: skip
    # 0:53 is "killed by signal 53", reported as a shell would: 128 + 53.
    assert (result["1"].phase, result["1"].exit_code) == (JobPhase.FAILED, 181)


def test_array_task_ids_are_kept_as_given(tmp_path: Path, recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": SQUEUE_RECORDED_LATER, "sacct": SACCT_RECORDED})
    result = SlurmBackend(runner=runner).poll(_jobs(tmp_path, "8_1", "8_2", "9"))
    assert runner.calls[1] == (*SACCT_ARGV, "--jobs=8_2,9", SACCT_FORMAT)
    assert (result["8_1"].job_id, result["8_1"].source) == ("8_1", "squeue")
    assert (result["8_2"].job_id, result["8_2"].phase) == ("8_2", JobPhase.COMPLETED)
    assert (result["9"].job_id, result["9"].source) == ("9", "sacct")  # by its raw id


def test_squeue_knowing_none_of_the_ids_is_not_an_error(
    tmp_path: Path, recorded_slurm: Any
) -> None:
    runner = recorded_slurm({"squeue": SQUEUE_UNKNOWN, "sacct": SACCT_RECORDED})
    result = SlurmBackend(runner=runner).poll(_jobs(tmp_path, "2"))
    assert len(runner.calls) == 2
    assert result["2"] == JobStatus("2", JobPhase.COMPLETED, "COMPLETED", exit_code=0,
                                    nodes="node[1-2]", source="sacct")  # fmt: skip


def test_other_squeue_failures_propagate(tmp_path: Path, recorded_slurm: Any) -> None:
    # Without squeue nothing can be said; reporting MISSING would make jobs look lost.
    down = SchedulerError(
        ["squeue"], 1, "", "slurm_load_jobs error: Unable to contact slurm controller\n"
    )
    runner = recorded_slurm({"squeue": down})
    with pytest.raises(SchedulerError, match="Unable to contact"):
        SlurmBackend(runner=runner).poll(_jobs(tmp_path, "2"))
    assert len(runner.calls) == 1


@pytest.mark.parametrize("sacct", [SACCT_DISABLED, ""], ids=["disabled", "unknown"])
def test_exit_file_answers_when_sacct_cannot(
    tmp_path: Path, recorded_slurm: Any, sacct: SchedulerError | str
) -> None:
    _exit_file(tmp_path, "11", "0\n")
    _exit_file(tmp_path, "12", "3\n")
    _exit_file(tmp_path, "14", "garbage")
    runner = recorded_slurm({"squeue": SQUEUE_UNKNOWN, "sacct": sacct})
    result = SlurmBackend(runner=runner).poll(_jobs(tmp_path, "11", "12", "13", "14"))
    assert len(runner.calls) == 2
    assert result == {
        "11": JobStatus("11", JobPhase.COMPLETED, "COMPLETED", exit_code=0, source="exit-file"),
        "12": JobStatus("12", JobPhase.FAILED, "FAILED", exit_code=3, source="exit-file"),
        "13": JobStatus("13", JobPhase.MISSING, "", source="none"),
        "14": JobStatus("14", JobPhase.MISSING, "", source="none"),
    }


def test_no_jobs_runs_no_command(recorded_slurm: Any) -> None:
    runner = recorded_slurm()
    assert SlurmBackend(runner=runner).poll([]) == {}
    assert runner.calls == []


def test_a_thousand_jobs_take_at_most_two_commands(tmp_path: Path, recorded_slurm: Any) -> None:
    def squeue(argv: Sequence[str]) -> str:  # knows the even ids, running
        ids = argv[3].removeprefix("--jobs=").split(",")
        return "".join(f"{i}|RUNNING|0|node1|None|\n" for i in ids if int(i) % 2 == 0)

    def sacct(argv: Sequence[str]) -> str:  # knows the rest, completed
        ids = argv[4].removeprefix("--jobs=").split(",")
        return "".join(f"{i}|{i}|COMPLETED|0:0|node2|None\n" for i in ids)

    runner = recorded_slurm({"squeue": squeue, "sacct": sacct})
    jobs = _jobs(tmp_path, *(str(1000 + n) for n in range(1000)))
    result = SlurmBackend(runner=runner).poll(jobs)
    assert [call[0] for call in runner.calls] == ["squeue", "sacct"]
    assert sorted(result) == sorted(job.job_id for job in jobs)
    assert sum(s.phase is JobPhase.RUNNING for s in result.values()) == 500


def test_duplicate_ids_are_asked_about_once(tmp_path: Path, recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": SQUEUE_RECORDED})
    SlurmBackend(runner=runner).poll(_jobs(tmp_path, "2", "2", "4"))
    assert runner.calls[0][3] == "--jobs=2,4"


@pytest.mark.parametrize("job_id", ["", "12,13", "--all", "1/../x", "abc", "12.batch"])
def test_malformed_job_ids_are_refused_before_any_command(
    tmp_path: Path, recorded_slurm: Any, job_id: str
) -> None:
    runner = recorded_slurm()
    with pytest.raises(ValidationError, match="invalid Slurm job id"):
        SlurmBackend(runner=runner).poll(_jobs(tmp_path, job_id))
    assert runner.calls == []


def test_unparseable_lines_are_skipped(tmp_path: Path, recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": "garbage\n2|RUNNING|0|node1|None|\n"})
    assert SlurmBackend(runner=runner).poll(_jobs(tmp_path, "2"))["2"].phase is JobPhase.RUNNING


@pytest.mark.parametrize(("native", "phase"), sorted(SLURM_STATES.items()))
def test_every_native_state_maps_through_the_table(native: str, phase: JobPhase) -> None:
    assert phase_of(native) is phase
    assert phase_of(f"{native} by 1234") is phase


# Every name job_state_string() of Slurm 25.11.7 returns (src/common/slurm_protocol_defs.c),
# its flags first; 22.05's are the same less EXPEDITING.
SLURM_2511_STATE_NAMES = (
    "COMPLETING", "STAGE_OUT", "CONFIGURING", "EXPEDITING", "RESIZING", "REQUEUED",
    "REQUEUE_FED", "REQUEUE_HOLD", "SPECIAL_EXIT", "STOPPED", "REVOKED", "RESV_DEL_HOLD",
    "SIGNALING", "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED",
    "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY")


def test_every_state_slurm_2511_can_report_has_a_phase() -> None:
    assert [name for name in SLURM_2511_STATE_NAMES if phase_of(name) is JobPhase.UNKNOWN] == []


def test_states_cover_every_scheduler_phase() -> None:
    observed = set(SLURM_STATES.values())
    assert observed == set(JobPhase) - {JobPhase.MISSING, JobPhase.UNKNOWN,
                                         JobPhase.NOT_SUBMITTED}


@pytest.mark.parametrize("native", ["", "LAUNCH_FAILED", "pending", "WEIRD_NEW_STATE"])
def test_unrecognised_states_are_unknown(native: str) -> None:
    assert phase_of(native) is JobPhase.UNKNOWN


def test_cancel_uses_one_command(recorded_slurm: Any) -> None:
    runner = recorded_slurm()
    SlurmBackend(runner=runner).cancel(["5", "6", "5", "8_1"])
    assert runner.calls == [("scancel", "5", "6", "8_1")]


def test_cancel_of_nothing_runs_no_command(recorded_slurm: Any) -> None:
    runner = recorded_slurm()
    SlurmBackend(runner=runner).cancel([])
    assert runner.calls == []


@pytest.mark.parametrize(
    "stderr",
    [
        "scancel: error: Kill job error on job id 999999: Invalid job id specified\n",
        "scancel: error: Kill job error on job id 7: Job/step already completing or completed\n",
    ],
)
def test_cancel_ignores_jobs_that_are_already_gone(recorded_slurm: Any, stderr: str) -> None:
    runner = recorded_slurm({"scancel": SchedulerError(["scancel"], 1, "", stderr)})
    SlurmBackend(runner=runner).cancel(["7", "999999"])
    assert len(runner.calls) == 1


def test_cancel_reports_real_failures(recorded_slurm: Any) -> None:
    stderr = (
        "scancel: error: Kill job error on job id 7: Invalid job id specified\n"
        "scancel: error: Kill job error on job id 8: Access/permission denied\n"
    )
    runner = recorded_slurm({"scancel": SchedulerError(["scancel"], 1, "", stderr)})
    with pytest.raises(SchedulerError, match="permission denied"):
        SlurmBackend(runner=runner).cancel(["7", "8"])
