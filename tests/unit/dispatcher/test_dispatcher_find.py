"""``SlurmBackend.find`` (jobs by name, for a restarted master) and squeue's restart count.

Recorded output of the dev cluster (Slurm 22.05):
``squeue -h --states=all --name=det-9-9-1,zzz -O "JobArrayID:|,Name:|"`` printed ``4|det-9-9-1|``;
``sacct -X -n --parsable2 --name=det-9-9-2,nope --starttime=now-7days
--format=JobID,JobName`` printed ``5|det-9-9-2``; a requeued job in squeue's poll format
printed ``2|PENDING|1||BeginTime|``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher.base import JobPhase, JobRef, JobStatus
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.errors import SchedulerError, ValidationError

SQUEUE_NAMES_FORMAT = "--Format=JobArrayID:|,Name:|"
SACCT_NAMES_FORMAT = "--format=JobID,JobName"


def _squeue_argv(names: str) -> tuple[str, ...]:
    return ("squeue", "--noheader", "--states=all", f"--name={names}", SQUEUE_NAMES_FORMAT)


def _sacct_argv(names: str) -> tuple[str, ...]:
    return ("sacct", "--noheader", "--parsable2", "-X", f"--name={names}",
            "--starttime=now-7days", SACCT_NAMES_FORMAT)


def test_a_name_squeue_knows_is_found_with_one_command(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": "4|det-9-9-1|\n"})
    found = SlurmBackend(runner=runner).find(["det-9-9-1"])
    assert found == {"det-9-9-1": "4"}
    assert runner.calls == [_squeue_argv("det-9-9-1")]


def test_names_squeue_lacks_are_asked_of_sacct_only(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": "4|det-9-9-1|\n", "sacct": "5|det-9-9-2\n"})
    found = SlurmBackend(runner=runner).find(["det-9-9-1", "det-9-9-2", "nope"])
    assert found == {"det-9-9-1": "4", "det-9-9-2": "5"}
    assert runner.calls == [_squeue_argv("det-9-9-1,det-9-9-2,nope"),
                            _sacct_argv("det-9-9-2,nope")]


def test_names_found_nowhere_are_left_out(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": "", "sacct": ""})
    assert SlurmBackend(runner=runner).find(["zzz"]) == {}
    assert [argv[0] for argv in runner.calls] == ["squeue", "sacct"]


def test_the_newest_job_of_a_name_wins_by_number(recorded_slurm: Any) -> None:
    # 12 > 9 as numbers, not as strings; array and het ids are not jobs hpcdet submits.
    runner = recorded_slurm({"squeue": "9|det-1-1-1|\n12|det-1-1-1|\n8_1|det-1-1-1|\n"
                                       "13+0|det-1-1-1|\n"})
    assert SlurmBackend(runner=runner).find(["det-1-1-1"]) == {"det-1-1-1": "12"}


def test_sacct_lines_pick_the_newest_too(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"sacct": "30|det-1-1-2\n7|det-1-1-2\n"})
    assert SlurmBackend(runner=runner).find(["det-1-1-2"]) == {"det-1-1-2": "30"}


def test_lines_of_names_not_asked_for_are_ignored(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": "4|det-9-9-10|\nnot a line\n\n", "sacct": ""})
    assert SlurmBackend(runner=runner).find(["det-9-9-1"]) == {}


def test_a_failing_sacct_leaves_what_squeue_found(recorded_slurm: Any) -> None:
    disabled = SchedulerError(["sacct"], 1, "", "Slurm accounting storage is disabled\n")
    runner = recorded_slurm({"squeue": "4|det-9-9-1|\n", "sacct": disabled})
    found = SlurmBackend(runner=runner).find(["det-9-9-1", "det-9-9-2"])
    assert found == {"det-9-9-1": "4"}
    assert len(runner.calls) == 2


def test_a_failing_squeue_is_not_read_as_nothing_found(recorded_slurm: Any) -> None:
    # Reading it as "not found" would drop intents whose jobs exist: duplicate runs.
    down = SchedulerError(["squeue"], 1, "", "slurm_load_jobs error: Unable to contact "
                          "slurm controller (connect failure)\n")
    runner = recorded_slurm({"squeue": down})
    with pytest.raises(SchedulerError):
        SlurmBackend(runner=runner).find(["det-9-9-1"])
    assert [argv[0] for argv in runner.calls] == ["squeue"]


def test_duplicate_names_are_asked_once(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": "4|det-9-9-1|\n"})
    SlurmBackend(runner=runner).find(["det-9-9-1", "det-9-9-1"])
    assert runner.calls == [_squeue_argv("det-9-9-1")]


def test_no_names_runs_no_command(recorded_slurm: Any) -> None:
    runner = recorded_slurm()
    assert SlurmBackend(runner=runner).find([]) == {}
    assert runner.calls == []


@pytest.mark.parametrize("name", ["det-1\n-1-1", "det-1-1-1\r", "det\x00"])
def test_unsafe_names_are_refused_before_any_command(recorded_slurm: Any, name: str) -> None:
    runner = recorded_slurm()
    with pytest.raises(ValidationError, match="job name"):
        SlurmBackend(runner=runner).find(["det-1-1-1", name])
    assert runner.calls == []


# the restart count in squeue's poll line ------------------------------------------------
def test_a_requeued_job_reports_its_restart_count(tmp_path: Path, recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": "2|PENDING|1||BeginTime|\n"})
    status = SlurmBackend(runner=runner).poll([JobRef("2", str(tmp_path))])
    assert status == {"2": JobStatus("2", JobPhase.PENDING, "PENDING", reason="BeginTime",
                                     restarts=1)}


def test_a_poll_line_without_a_numeric_restart_count_is_skipped(
        tmp_path: Path, recorded_slurm: Any) -> None:
    def sacct(argv: Sequence[str]) -> str:
        return ""

    runner = recorded_slurm({"squeue": "2|PENDING|x||BeginTime|\n", "sacct": sacct})
    status = SlurmBackend(runner=runner).poll([JobRef("2", str(tmp_path))])
    assert status["2"].phase is JobPhase.MISSING  # not misread as a job with no restarts


def test_a_requeue_counts_once_the_ended_execution_has_finished_completing(
        tmp_path: Path, recorded_slurm: Any) -> None:
    # Right after `scontrol requeue`, squeue says COMPLETING with the count already up
    # while the old execution's code is still checkpointing.
    runner = recorded_slurm({"squeue": "7|COMPLETING|1|node1|None|\n8|PENDING|1||BeginTime|\n"})
    result = SlurmBackend(runner=runner).poll([JobRef("7", str(tmp_path)),
                                               JobRef("8", str(tmp_path))])
    assert (result["7"].restarts, result["8"].restarts) == (0, 1)
