"""Run-as-owner: the argv the dispatcher gives sudo and the helper, and its one-line errors."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Sequence
from typing import Any

import pytest

from hpcdet.dispatcher.base import Submission
from hpcdet.dispatcher.jobdir import job_dir_archive
from hpcdet.dispatcher.runas import RunAs, RunAsRefusedError, sudoers_line
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.queue import JobUpdate, update_job_as
from hpcdet.dispatcher.transport.local import LOCAL
from hpcdet.errors import SchedulerError, ValidationError

HELPER = "/usr/local/libexec/hpcdet-runas"
SUDO = ("sudo", "-n", "-u")


class FakeSudo:
    """Records (argv, stdin) and answers ``submit`` with a job id."""

    def __init__(self, error: SchedulerError | None = None) -> None:
        self.calls: list[tuple[tuple[str, ...], bytes | None]] = []
        self.count = 0
        self.error = error

    def __call__(self, argv: Sequence[str], *, timeout: float = 60,
                 stdin: bytes | None = None) -> str:
        self.calls.append((tuple(argv), stdin))
        if self.error is not None:
            raise self.error
        return "4242\n" if "submit" in argv else ""


def _runas(runner: FakeSudo) -> RunAs:
    return RunAs(helper=HELPER, service_user="hpcdet", runner=runner)  # type: ignore[arg-type]


def test_submit_as_owner_prepares_then_submits_through_sudo() -> None:
    sudo = FakeSudo()
    backend = SlurmBackend(runner=None, runas=_runas(sudo))
    path = "/srv/jobs/user_a/exp-1/trial-1/job-1.sh"
    job_id = backend.submit(Submission("#!/bin/bash\ntrue\n", path,
                                       ("sbatch", "--parsable", path), owner="user_a"))
    assert job_id == "4242"
    (prepare, archive), (submit, _) = sudo.calls
    assert prepare == (*SUDO, "user_a", "--", HELPER, "prepare", "/srv/jobs/user_a/exp-1/trial-1")
    assert submit == (*SUDO, "user_a", "--", HELPER, "submit", "/srv/jobs/user_a/exp-1/trial-1",
                      "job-1.sh", "--")
    assert archive is not None
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        member = tar.getmember("job-1.sh")
        assert member.mode == 0o700
        assert tar.extractfile(member).read() == b"#!/bin/bash\ntrue\n"  # type: ignore[union-attr]


def test_submit_without_owner_runs_sbatch_itself(tmp_path: Any, recorded_slurm: Any) -> None:
    runner = recorded_slurm({"sbatch": "7\n"})
    sudo = FakeSudo()
    backend = SlurmBackend(runner=runner, runas=_runas(sudo))
    path = str(tmp_path / "job.sh")
    assert backend.submit(Submission("x", path, ("sbatch", "--parsable", path))) == "7"
    assert sudo.calls == []


def test_cancel_as_owner_and_as_service(recorded_slurm: Any) -> None:
    runner, sudo = recorded_slurm(), FakeSudo()
    backend = SlurmBackend(runner=runner, runas=_runas(sudo))
    backend.cancel(["5", "6"], owner="user_b")
    backend.cancel(["7"])
    assert [argv for argv, _ in sudo.calls] == [(*SUDO, "user_b", "--", HELPER, "cancel", "5", "6")]
    assert runner.calls == [("scancel", "7")]


@pytest.mark.parametrize("user", ["root", "-uroot", "a;b", "$(id)", "../x", "A", "", "a b"])
def test_owner_names_that_are_not_plain_users_are_refused(user: str) -> None:
    sudo = FakeSudo()
    with pytest.raises(ValidationError):
        _runas(sudo).cancel(user, ["1"])
    assert sudo.calls == []


def test_missing_sudo_rule_names_the_exact_sudoers_line() -> None:
    error = SchedulerError(("sudo",), 1, "", "sudo: a password is required\n")
    with pytest.raises(RunAsRefusedError) as info:
        _runas(FakeSudo(error)).cancel("user_a", ["1"])
    message = str(info.value)
    assert "\n" not in message
    assert message.endswith(f"install this sudoers rule: {sudoers_line('hpcdet', HELPER)}")
    assert sudoers_line("hpcdet", HELPER) == f"hpcdet ALL=(ALL,!root) NOPASSWD: {HELPER}"


def test_helper_refusal_is_passed_on_as_its_one_line() -> None:
    error = SchedulerError(("sudo",), 65, "", "hpcdet-runas: invalid job id '1;id'\n")
    with pytest.raises(RunAsRefusedError, match=r"^hpcdet-runas: invalid job id '1;id'$"):
        _runas(FakeSudo(error)).cancel("user_a", ["1"])


def test_update_as_owner_sends_only_checked_key_values() -> None:
    sudo = FakeSudo()
    update_job_as(_runas(sudo), "user_a", "12", JobUpdate(partition="batch", nice=5))
    assert sudo.calls[0][0] == (*SUDO, "user_a", "--", HELPER, "update", "12", "partition=batch",
                                "nice=5")
    with pytest.raises(ValidationError):
        update_job_as(_runas(sudo), "user_a", "12", JobUpdate(partition="a b=c"))
    assert len(sudo.calls) == 1


def test_job_dir_archive_is_private_and_has_no_links() -> None:
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        info = tarfile.TarInfo("train.py")
        info.size, info.mode = 1, 0o644
        tar.addfile(info, io.BytesIO(b"x"))
        link = tarfile.TarInfo("evil")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/shadow"
        tar.addfile(link)
    archive = job_dir_archive(context_tar=context.getvalue(), trial_info={"a": 1}, token="t")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        modes = {m.name: m.mode for m in tar.getmembers()}
    assert modes == {"context/train.py": 0o600, "trial.json": 0o600, ".token": 0o600}


@pytest.mark.parametrize(("error", "message"), [
    (SchedulerError(("sudo",), 127, "", "sudo: command not found on PATH"),
     "sudo is not installed"),
    (SchedulerError(("sudo",), 1, "", "sudo: unknown user ghost\n"),
     "cannot run jobs as ghost: no such Unix user"),
])
def test_other_sudo_failures_say_what_is_wrong(error: SchedulerError, message: str) -> None:
    with pytest.raises(RunAsRefusedError, match=message):
        _runas(FakeSudo(error)).cancel("ghost", ["1"])


def test_submit_as_owner_passes_the_task_options_and_script_arguments() -> None:
    sudo = FakeSudo()
    path = "/srv/jobs/user_a/tasks/task-1/hpcdet-task.sh"
    argv = ("sbatch", "--parsable", "--job-name=x", "--chdir=/home/user_a", path, "--lr", "1")
    SlurmBackend(runner=None, runas=_runas(sudo)).submit(
        Submission("#!/bin/bash\n", path, argv, owner="user_a"))
    assert sudo.calls[1][0][-8:] == ("submit", "/srv/jobs/user_a/tasks/task-1", "hpcdet-task.sh",
                                     "--job-name=x", "--chdir=/home/user_a", "--", "--lr", "1")


def test_hold_release_requeue_as_owner() -> None:
    sudo = FakeSudo()
    runas = _runas(sudo)
    runas.hold("user_a", "1")
    runas.release("user_a", "1")
    runas.requeue("user_a", "1")
    assert [argv[-2:] for argv, _ in sudo.calls] == [("hold", "1"), ("release", "1"),
                                                      ("requeue", "1")]


def test_job_files_are_private_in_service_mode_too(tmp_path: Any) -> None:
    """Finding 9: environment_variables (in the job script) and trial.json were 0755/0644."""
    import stat

    from hpcdet.dispatcher.jobdir import prepare_job_dir

    root = prepare_job_dir(tmp_path / "job", context_tar=None, trial_info={"k": "v"}, token="t",
                           files=LOCAL)
    assert stat.S_IMODE((root / "trial.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((root / ".token").stat().st_mode) == 0o600



def test_token_is_minted_as_the_owner_and_a_failure_never_carries_stdout() -> None:
    """The ``token`` verb: the owner's own JWT through sudo; a failed mint's error (and its
    message) keeps stderr only, since stdout could hold a token."""
    sudo = FakeSudo()
    _runas(sudo).token("user_a", 600)
    assert sudo.calls == [((*SUDO, "user_a", "--", HELPER, "token", "600"), None)]
    for bad in (0, -5, True, "600"):
        with pytest.raises(ValidationError, match="number of seconds"):
            _runas(sudo).token("user_a", bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        _runas(sudo).token("root", 600)
    assert len(sudo.calls) == 1
    failed = SchedulerError(("sudo",), 1, "SLURM_JWT=secret.to.ken\n", "")
    with pytest.raises(SchedulerError) as info:
        _runas(FakeSudo(failed)).token("user_a", 600)
    assert info.value.stdout == "" and "secret" not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    refused = SchedulerError(("sudo",), 77, "SLURM_JWT=secret.to.ken\n",
                             "hpcdet-runas: refusing to run as the service account hpcdet\n")
    with pytest.raises(RunAsRefusedError, match=r"^hpcdet-runas: refusing to run as the "
                       r"service account hpcdet$") as refusal:
        _runas(FakeSudo(refused)).token("user_a", 600)
    assert refusal.value.stdout == ""
