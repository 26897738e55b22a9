"""The slurmrestd path without a cluster: a rendered script as a job description (options
without a translation refused by name), Slurm's time and memory forms, token sources (renewal
at 80% of a lifespan, a file read again when it changes and refused unless private), and
v0.0.44 records read as squeue would print them; an owner's token minted through the run-as
helper, never for another user by the master. Live: tests/integration/test_it_slurm_rest_*."""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher.base import JobSpec
from hpcdet.dispatcher.batch_args import check_rest_args
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.rest import records
from hpcdet.dispatcher.slurm.rest.backend import make_tokens
from hpcdet.dispatcher.slurm.rest.submit import megabytes, minutes, submit_body
from hpcdet.dispatcher.slurm.rest.tokens import FileTokens, ScontrolTokens
from hpcdet.dispatcher.transport import TransportUnavailableError
from hpcdet.dispatcher.transport.settings import RestSettings, TokenSourceSettings
from hpcdet.errors import ConfigError, SchedulerError, ValidationError

JOB_DIR = "/shared/hpcdet/exp-7/trial-42"


def n(value: int) -> dict[str, Any]:
    return {"set": True, "infinite": False, "number": value}


def test_a_rendered_script_becomes_a_job_description(job_spec: Callable[[str], JobSpec]) -> None:
    spec = replace(job_spec("none"), sbatch_args=("--exclusive", "-C a100", "--mem=4G"))
    script = SlurmBackend().render(spec).script
    body = submit_body(script, "job-1.sh", environ={"PATH": "/opt/slurm/bin", "HOME": "/root"})
    assert body["script"] == script
    assert body["job"] == {
        "account": "ml-team", "comment": "hpcdet experiment 7 trial 42",
        "constraints": "a100", "cpus_per_task": 32, "current_working_directory": JOB_DIR,
        "environment": ["PATH=/opt/slurm/bin"],  # only what EXPORTED names
        "excluded_nodes": ["node[07-08]"], "kill_warning_delay": n(120),
        "kill_warning_signal": "USR2", "memory_per_node": n(4096), "name": "det-exp-7-trial-42",
        "nodes": "2", "open_mode": ["APPEND"], "partition": "gpu", "qos": "normal",
        "requeue": False, "shared": ["none"], "standard_error": f"{JOB_DIR}/slurm-%j.err",
        "standard_output": f"{JOB_DIR}/slurm-%j.out", "tasks": 2, "tasks_per_node": 1,
        "time_limit": n(120), "tres_per_node": "gres/gpu:4"}


def test_options_without_a_translation_are_refused_by_name(
        job_spec: Callable[[str], JobSpec]) -> None:
    script = SlurmBackend().render(job_spec("none")).script  # sbatch_args: --mem-per-gpu=16G
    with pytest.raises(ValidationError) as caught:
        submit_body(script, "job-1.sh")
    assert str(caught.value).startswith("job-1.sh: --mem-per-gpu is not available through "
                                        "slurmrestd (resource_manager.transport type rest)")


@pytest.mark.parametrize(("text", "expected"), [
    ("90", 90), ("1:30", 2), ("02:00:00", 120), ("1-0", 1440), ("1-2:03", 1563),
    ("0:0:1", 1)])
def test_slurm_times_in_minutes(text: str, expected: int) -> None:
    assert minutes(text) == n(expected)


def test_memory_and_bad_forms() -> None:
    assert [megabytes(t)["number"] for t in ("4G", "500", "500M", "1025K", "1T")] == [
        4096, 500, 500, 2, 1024 * 1024]
    assert minutes("UNLIMITED")["infinite"]
    for bad in (lambda: minutes("1h"), lambda: megabytes("4GiB")):
        with pytest.raises(ValueError):
            bad()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_scontrol_tokens_are_renewed_at_80_percent_and_kept_per_user(
        recorded_slurm: Any) -> None:
    """The master's own token from its own ``scontrol token``; an owner's from ``mint_as``
    (the run-as helper's token verb), never ``username=``; each renewed at 80% of its life."""
    minted = iter(f"SLURM_JWT=tok.en.{i}\n" for i in range(10))
    runner = recorded_slurm({"scontrol": lambda argv: next(minted)})
    asked: list[tuple[str, int]] = []

    def mint_as(user: str, lifespan: int) -> str:
        asked.append((user, lifespan))
        return next(minted)

    clock = Clock()
    tokens = ScontrolTokens(runner, 100, mint_as=mint_as, clock=clock)
    assert tokens.token() == "tok.en.0" and tokens.token() == "tok.en.0"
    clock.now += 79
    assert tokens.token() == "tok.en.0"
    clock.now += 1
    assert tokens.token() == "tok.en.1"
    assert tokens.token("user_a") == "tok.en.2" and tokens.token("user_a") == "tok.en.2"
    assert runner.calls == [("scontrol", "token", "lifespan=100")] * 2
    assert asked == [("user_a", 100)]
    tokens.invalidate("user_a")
    assert tokens.token("user_a") == "tok.en.3" and tokens.renewals == 4
    clock.now += 80
    assert tokens.token("user_a") == "tok.en.4" and asked[-1] == ("user_a", 100)


def test_without_run_as_no_other_users_token_is_minted(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"scontrol": "SLURM_JWT=own.to.ken\n"})
    tokens = ScontrolTokens(runner, 100)
    with pytest.raises(SchedulerError, match="no token for user_a: another user's tokens "
                       r"come from the run-as helper \(security.jobs_run_as: owner\)"):
        tokens.token("user_a")
    assert runner.calls == []
    garbled = ScontrolTokens(runner, 100, mint_as=lambda user, lifespan: "oops: secret\n")
    with pytest.raises(SchedulerError) as caught:
        garbled.token("user_a")
    assert "hpcdet-runas token (as user_a) holds no token" in str(caught.value)
    assert "secret" not in str(caught.value)


def test_one_users_slow_mint_holds_up_no_one_else(recorded_slurm: Any) -> None:
    """Minting through sudo and the helper takes a while: user_b's token and the master's
    own are handed out meanwhile; a second request for user_a waits for the first mint."""
    started, release = threading.Event(), threading.Event()
    minted: list[str] = []

    def mint_as(user: str, lifespan: int) -> str:
        minted.append(user)
        if user == "user_a":
            started.set()
            assert release.wait(10)
        return f"SLURM_JWT=tok.{user}.x\n"

    runner = recorded_slurm({"scontrol": "SLURM_JWT=own.to.ken\n"})
    tokens = ScontrolTokens(runner, 100, mint_as=mint_as)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(tokens.token, "user_a")
        assert started.wait(10)
        second = pool.submit(tokens.token, "user_a")
        assert tokens.token("user_b") == "tok.user_b.x" and tokens.token() == "own.to.ken"
        release.set()
        assert first.result(10) == second.result(10) == "tok.user_a.x"
    assert sorted(minted) == ["user_a", "user_b"]  # user_a's second request: no new mint


def test_make_tokens_mints_owners_tokens_through_the_run_as_helper(recorded_slurm: Any) -> None:
    settings = RestSettings("http://127.0.0.1:6820", TokenSourceSettings(
        "scontrol", lifespan_seconds=900))
    asked: list[tuple[str, ...]] = []

    def sudo(argv: Sequence[str], *, timeout: float = 60, stdin: bytes | None = None) -> str:
        asked.append(tuple(argv))
        return "SLURM_JWT=tok.user_a.x\n"

    runas = RunAs(runner=sudo)  # type: ignore[arg-type]
    tokens = make_tokens(settings, recorded_slurm(), runas)
    assert tokens.token("user_a") == "tok.user_a.x"
    assert asked == [("sudo", "-n", "-u", "user_a", "--", runas.helper, "token", "900")]
    assert isinstance(make_tokens(settings, recorded_slurm()), ScontrolTokens)
    with pytest.raises(SchedulerError, match="no token for user_a"):
        make_tokens(settings, recorded_slurm()).token("user_a")


def test_a_token_file_is_read_when_it_changes_and_must_be_private(tmp_path: Path) -> None:
    path = tmp_path / "jwt"
    path.write_text("SLURM_JWT=first.token.x\n")
    path.chmod(0o600)
    tokens = FileTokens(str(path))
    assert tokens.token() == "first.token.x" and tokens.token() == "first.token.x"
    assert tokens.renewals == 1
    path.write_text("second.token.yy\n")
    assert tokens.token() == "second.token.yy" and tokens.renewals == 2
    path.chmod(0o640)
    with pytest.raises(TransportUnavailableError, match=r"can be read by others \(mode 0640\)"):
        tokens.token()
    path.chmod(0o600)
    path.write_text("two\nlines\n")
    with pytest.raises(SchedulerError) as caught:
        tokens.token()
    assert "holds no token" in str(caught.value) and "lines" not in str(caught.value)
    with pytest.raises(SchedulerError, match="run-as-owner needs token_source type scontrol"):
        tokens.token("user_a")
    link = tmp_path / "link"
    link.symlink_to(path)
    with pytest.raises(TransportUnavailableError, match="is not a regular file"):
        FileTokens(str(link)).token()
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)
        with pytest.raises(TransportUnavailableError, match="is owned by uid 65534"):
            tokens.token()


def test_records_read_as_squeue_prints_them() -> None:
    assert records.state_word(["RUNNING", "COMPLETING"]) == "COMPLETING"
    assert records.state_word(["PENDING", "REQUEUE_HOLD"]) == "REQUEUE_HOLD"
    assert records.state_word(["FAILED"]) == "FAILED"
    pending_tasks = {"job_id": 12, "array_job_id": n(12), "array_task_id": {"set": False},
                     "array_task_string": "2-3,5%2", "job_state": ["PENDING"],
                     "state_reason": "JobArrayTaskLimit", "restart_cnt": 0, "nodes": ""}
    task = {**pending_tasks, "job_id": 13, "array_task_id": n(0), "job_state": ["RUNNING"],
            "state_reason": "None", "nodes": "node1", "restart_cnt": 1}
    found = records.job_statuses([pending_tasks, task])
    assert sorted(found) == ["12_0", "12_2", "12_3", "12_5"]
    assert found["12_0"].nodes == "node1" and found["12_0"].reason is None
    assert found["12_0"].restarts == 1 and found["12_2"].reason == "JobArrayTaskLimit"
    killed = {"job_id": 9, "array": {"job_id": 0, "task_id": {"set": False}},
              "state": {"current": ["FAILED"], "reason": "None"}, "nodes": "None assigned",
              "exit_code": {"return_code": n(0), "signal": {"id": n(9)}}}
    status = records.accounting_statuses([killed])["9"]
    assert (status.exit_code, status.nodes, status.source) == (137, None, "sacct")


def test_det_e_create_refuses_options_slurmrestd_cannot_be_sent() -> None:
    """The master's check (dispatcher.batch_args.check_rest_args), as ``-C a100`` and
    ``--mem-per-gpu=16G`` will read on the job's #SBATCH lines."""
    path = "<config>.slurm.sbatch_args"
    check_rest_args("slurm", ["-C a100", "--exclusive", "--mem=4G"], path)
    with pytest.raises(ConfigError) as caught:
        check_rest_args("slurm", ["-C a100", "--mem-per-gpu=16G", "--mail-type=END"], path)
    assert caught.value.errors[0].startswith(
        f"{path}: --mail-type, --mem-per-gpu are not available through slurmrestd")
    with pytest.raises(ValueError, match="the pbs scheduler has no rest backend"):
        check_rest_args("pbs", [], "<config>.pbs.pbsbatch_args")


def test_queue_records_carry_squeues_times() -> None:
    waiting = {"job_id": 7, "job_state": ["PENDING"], "state_reason": "Resources",
               "priority": n(5), "time_limit": n(60), "start_time": n(1_796_050_238),
               "nodes": ""}
    entry = records.queue_entry(waiting, "PENDING")
    assert (entry.time_used, entry.time_limit) == (0, 3600)
    assert entry.expected_start == dt.datetime.fromtimestamp(1_796_050_238).astimezone().isoformat()
    unlimited = records.queue_entry({**waiting, "time_limit": {"set": True, "infinite": True},
                                     "start_time": n(0)}, "PENDING")
    assert (unlimited.time_limit, unlimited.expected_start) == (None, None)
    running = records.queue_entry({**waiting, "job_state": ["RUNNING"], "start_time": n(1)},
                                  "RUNNING")
    assert running.expected_start is None and (running.time_used or 0) > 0
