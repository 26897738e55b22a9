"""Reading Slurm's queue and updating a queued job, from recorded Slurm 22.05 output."""

from __future__ import annotations

from typing import Any

import pytest

from hpcdet.dispatcher.slurm.queue import (
    FIELDS,
    SEPARATOR,
    TIME_FIELDS,
    JobUpdate,
    JobUpdateRefusedError,
    QueueEntry,
    parse_queue,
    parse_tres,
    queue_order,
    read_queue,
    squeue_argv,
    update_argv,
    update_job,
)
from hpcdet.errors import SchedulerError, ValidationError

# Recorded on the dev cluster (Slurm 22.05.8) with the squeue_argv() command ("^_" below is
# the separator \x1f): two hpcdet trial jobs and a command task, an external job waiting in
# two partitions with a "|" in its name, a held job (priority 0), a job about to start.
PENDING = """\
19^_batch^_running^_root^_PENDING^_None^_4833^_0^_normal^_hpcdet^_2026-11-21T14:02:51^_1^_2^_1^_cpu=2,mem=2000M,node=1,billing=2^_(null)^_
15^_batch^_det-3-7-1^_root^_PENDING^_BeginTime^_733^_4100^_normal^_hpcdet^_2026-11-21T14:02:51^_1^_2^_1^_cpu=2,mem=2000M,node=1,billing=2^_hpcdet:it:trial-7:run-1^_
18^_batch^_hpcdet-task^_root^_PENDING^_JobHeldUser^_0^_0^_normal^_hpcdet^_2026-11-21T14:02:51^_1^_1^_1^_cpu=1,mem=2000M,node=1,billing=1^_hpcdet:it:task-3^_
17^_batch,debug^_my analysis|v2^_root^_PENDING^_BeginTime^_4833^_0^_normal^_hpcdet^_2026-11-21T14:02:51^_3^_3^_1^_cpu=3,mem=2000M,node=1,billing=3^_(null)^_
16^_debug^_det-3-8-1^_root^_PENDING^_BeginTime^_4733^_100^_normal^_hpcdet^_2026-11-21T14:02:51^_1^_1^_1^_cpu=1,mem=2000M,node=1,billing=1,gres/gpu=1^_hpcdet:it:trial-8:run-1^_
""".replace("^_", SEPARATOR)  # noqa: E501
# Recorded a little later: a trial job holding 2 GPUs on each of 2 nodes, a plain job.
RUNNING = """\
23^_batch^_plain^_root^_RUNNING^_None^_4833^_0^_normal^_hpcdet^_2026-11-21T14:02:55^_1^_2^_1^_cpu=2,node=1,billing=2^_(null)^_
22^_debug^_det-4-9-2^_root^_RUNNING^_None^_4833^_0^_normal^_hpcdet^_2026-11-21T14:02:55^_2^_2^_2^_cpu=2,node=2,billing=2,gres/gpu=4^_hpcdet:it:trial-9:run-2^_
""".replace("^_", SEPARATOR)  # noqa: E501


def test_one_squeue_lists_every_waiting_and_running_job(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": PENDING + RUNNING})
    entries = read_queue(runner)
    assert len(runner.calls) == 1
    argv = runner.calls[0]
    assert argv[:2] == ("squeue", "--noheader")
    assert "--states=PENDING,RUNNING," in argv[2] and "COMPLETED" not in argv[2]
    assert not any(arg.startswith(("--user", "-u", "--me")) for arg in argv)
    assert len(entries) == 7


def test_a_partition_filter_is_passed_to_squeue(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": ""})
    assert read_queue(runner, partitions=["batch", "debug"]) == []
    assert runner.calls[0][-1] == "--partition=batch,debug"


def test_the_format_ends_every_field_with_the_separator() -> None:
    fmt = next(arg for arg in squeue_argv() if arg.startswith("--Format="))
    assert fmt.count(SEPARATOR) == len(FIELDS) + 1 + len(TIME_FIELDS)
    assert f"Comment:{SEPARATOR},NodeList:{SEPARATOR},TimeUsed:" in fmt
    assert fmt.endswith(f"StartTime:{SEPARATOR}")


def test_fields_are_read_from_the_recorded_lines() -> None:
    by_id = {entry.job_id: entry for entry in parse_queue(PENDING + RUNNING)}
    trial = by_id["15"]
    assert (trial.partition, trial.name, trial.user, trial.state) == (
        "batch", "det-3-7-1", "root", "PENDING")
    assert (trial.priority, trial.nice, trial.qos, trial.account) == (733, 4100, "normal",
                                                                      "hpcdet")
    assert trial.reason == "BeginTime" and trial.comment == "hpcdet:it:trial-7:run-1"
    assert (trial.tasks, trial.cpus, trial.nodes, trial.gpus) == (1, 2, 1, 0)
    assert trial.pending and trial.submit_time is not None
    assert trial.submit_time.startswith("2026-11-21T14:02:51")
    assert by_id["17"].name == "my analysis|v2"
    assert by_id["17"].partitions == ("batch", "debug")
    assert by_id["17"].comment is None and by_id["19"].reason is None
    assert by_id["16"].gpus == 1 and by_id["22"].gpus == 4 and not by_id["22"].pending


def test_the_order_is_running_then_priority_then_submit_time_then_id() -> None:
    order = [entry.job_id for entry in queue_order(parse_queue(PENDING + RUNNING))]
    assert order == ["22", "23", "17", "19", "16", "15", "18"]


def test_an_unreadable_line_is_skipped_not_misread(caplog: pytest.LogCaptureFixture) -> None:
    broken = PENDING.splitlines()[1].replace("det-3-7-1", f"bad{SEPARATOR}name")
    bad_priority = PENDING.splitlines()[2].replace("JobHeldUser\x1f0", "JobHeldUser\x1fN/A")
    entries = parse_queue("\n".join([broken, bad_priority, PENDING.splitlines()[0], ""]))
    assert [entry.job_id for entry in entries] == ["19"]
    assert "skipping an unexpected squeue line" in caplog.text


def test_tres_lists_become_a_mapping() -> None:
    assert parse_tres("cpu=2,mem=2000M,node=1,gres/gpu=1") == {
        "cpu": "2", "mem": "2000M", "node": "1", "gres/gpu": "1"}
    assert parse_tres("") == {} and parse_tres("N/A") == {}


def test_entries_survive_a_json_round_trip() -> None:
    for entry in parse_queue(PENDING + RUNNING):
        assert QueueEntry.from_dict(entry.to_dict()) == entry


def test_an_update_is_one_scontrol_call(recorded_slurm: Any) -> None:
    runner = recorded_slurm({})
    update_job(runner, "15", JobUpdate(partition="debug", qos="high", nice=-5))
    assert runner.calls == [("scontrol", "update", "JobId=15", "Partition=debug", "QOS=high",
                             "Nice=-5")]


def test_only_the_given_values_are_updated() -> None:
    assert update_argv("15", JobUpdate(nice=0)) == ("scontrol", "update", "JobId=15", "Nice=0")
    assert update_argv("7", JobUpdate(qos="low"), scontrol="/opt/scontrol") == (
        "/opt/scontrol", "update", "JobId=7", "QOS=low")


def test_one_array_task_is_updated_by_its_task_id() -> None:
    """scontrol update JobId=12_3 splits the task off its array and changes it alone."""
    assert update_argv("12_3", JobUpdate(nice=10)) == ("scontrol", "update", "JobId=12_3",
                                                       "Nice=10")


def test_an_arrays_pending_tasks_are_updated_as_scontrol_takes_them() -> None:
    """squeue lists them as 12_[4-9%2]; scontrol refuses the %2 (dev cluster, 22.05)."""
    assert update_argv("12_[4-9%2]", JobUpdate(nice=7)) == ("scontrol", "update",
                                                            "JobId=12_[4-9]", "Nice=7")


@pytest.mark.parametrize(("job_id", "update", "message"), [
    ("15", JobUpdate(), "nothing to update for job 15"),
    ("15_[3-x]", JobUpdate(nice=1), "invalid Slurm job id"),
    ("15+1", JobUpdate(nice=1), "invalid Slurm job id"),
    ("15\nscancel 1", JobUpdate(nice=1), "invalid Slurm job id"),
    ("15", JobUpdate(partition="debug\nx"), "contains a newline"),
    ("15", JobUpdate(qos="high QOS=x"), "invalid QOS name"),
    ("15", JobUpdate(partition=""), "invalid partition name"),
    ("15", JobUpdate(nice=2**31), "nice must be an integer"),
])
def test_unsafe_or_empty_updates_are_refused_before_slurm_runs(
        recorded_slurm: Any, job_id: str, update: JobUpdate, message: str) -> None:
    runner = recorded_slurm({})
    with pytest.raises(ValidationError, match=message):
        update_job(runner, job_id, update)
    assert runner.calls == []


def test_slurms_refusal_carries_slurms_reason(recorded_slurm: Any) -> None:
    refusal = SchedulerError(["scontrol"], 1, "", "Invalid qos specification for job 10\n")
    runner = recorded_slurm({"scontrol": refusal})
    with pytest.raises(JobUpdateRefusedError) as caught:
        update_job(runner, "10", JobUpdate(qos="high"))
    assert str(caught.value) == "Invalid qos specification for job 10"
    assert isinstance(caught.value, SchedulerError) and caught.value.returncode == 1
