"""Early exits: ``core.train.report_early_exit`` and ``hpcdet.InvalidHP`` in the harness.

The master here is the FakeMaster of harness_fakes.py (a fake HTTP server); the real
route is covered in tests/unit/master/test_master_harness_signals.py.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from harness_fakes import FakeMaster, job_environ, run_harness, write_job_dir

import hpcdet
import hpcdet.core
from hpcdet.core import DistributedContext, EarlyExitReason, TrainContext
from hpcdet.core import _context as core_context_module
from hpcdet.core._distributed import LocalCollectives
from hpcdet.core._reporter import Backoff
from hpcdet.errors import MasterError
from hpcdet.harness import main as harness_main
from hpcdet.harness.entrypoint import Entrypoint, run_entrypoint
from hpcdet.job.cluster_env import ClusterEnv
from hpcdet.job.trial_info import load_trial_info


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (EarlyExitReason.INVALID_HP, EarlyExitReason.INVALID_HP),
        ("invalid_hp", EarlyExitReason.INVALID_HP),
        ("INVALID_HP", EarlyExitReason.INVALID_HP),
        ("ERRORED", EarlyExitReason.ERRORED),
        (" user_requested_stop ", EarlyExitReason.USER_REQUESTED_STOP),
    ],
)
def test_reasons_parse_from_members_values_and_names(given: Any, expected: Any) -> None:
    assert EarlyExitReason.parse(given) is expected


@pytest.mark.parametrize("bad", ["nope", "", None, 3, "EXITED"])
def test_unknown_reasons_are_refused_with_the_accepted_ones(bad: Any) -> None:
    with pytest.raises(ValueError, match="use one of invalid_hp, errored, user_requested_stop"):
        EarlyExitReason.parse(bad)


@pytest.mark.usefixtures("in_job")
def test_the_chief_posts_the_reason(fake_master: FakeMaster) -> None:
    with hpcdet.core.init() as core:
        core.train.report_early_exit(EarlyExitReason.INVALID_HP)
        core.train.report_early_exit("USER_REQUESTED_STOP")
        with pytest.raises(ValueError, match="unknown early exit reason 'bored'"):
            core.train.report_early_exit("bored")
    reasons = [body["reason"] for body in fake_master.early_exits()]
    assert reasons == ["invalid_hp", "user_requested_stop"]


@pytest.mark.usefixtures("in_job")
def test_the_post_is_retried_then_fails_loudly(
    fake_master: FakeMaster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core_context_module, "_REGISTER_BACKOFF", Backoff(0.01, 0.01, attempts=3))
    with hpcdet.core.init() as core:
        fake_master.fail_next = [503]
        core.train.report_early_exit(EarlyExitReason.ERRORED)
        assert fake_master.early_exits() == [{"reason": "errored"}]
        fake_master.fail_next = [503, 503, 503]
        with pytest.raises(MasterError, match="scripted failure 503"):
            core.train.report_early_exit(EarlyExitReason.ERRORED)
    assert len(fake_master.early_exits()) == 1


def test_other_ranks_only_check_the_reason() -> None:
    posted: list[EarlyExitReason] = []
    # No collective is used: a one-process stand-in for the other rank's is enough.
    worker = DistributedContext(
        rank=1, size=2, local_rank=1, local_size=2, cross_rank=0, cross_size=1,
        collectives=LocalCollectives(),
    )
    train = TrainContext(worker, None, posted.append)
    train.report_early_exit(EarlyExitReason.INVALID_HP)
    with pytest.raises(ValueError, match="unknown early exit reason"):
        train.report_early_exit("later")
    assert posted == []


@pytest.mark.usefixtures("off_cluster")
def test_outside_a_job_the_early_exit_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    with hpcdet.core.init() as core:
        core.train.report_early_exit(EarlyExitReason.INVALID_HP)
    assert "hpcdet core (dummy): early exit invalid_hp" in capsys.readouterr().err


def test_invalid_hp_is_exported_lightly() -> None:
    assert hpcdet.InvalidHP.__module__ == "hpcdet.job.early_exit"
    assert issubclass(hpcdet.InvalidHP, Exception)


RAISER = """
import hpcdet
raise hpcdet.InvalidHP("hidden must be a multiple of heads")
"""


def test_run_entrypoint_turns_invalid_hp_into_exit_0(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "train.py").write_text(RAISER)
    monkeypatch.chdir(tmp_path)
    assert run_entrypoint(Entrypoint("script", ("train.py",))) == 0
    err = capsys.readouterr().err
    assert "raised InvalidHP (hidden must be a multiple of heads); exiting 0" in err
    assert "Traceback" not in err


def test_run_entrypoint_hands_invalid_hp_to_the_handler(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text(RAISER)
    monkeypatch.chdir(tmp_path)
    seen: list[str] = []

    def handler(exc: hpcdet.InvalidHP) -> int:
        seen.append(str(exc))
        return 7

    assert run_entrypoint(Entrypoint("script", ("train.py",)), handler) == 7
    assert seen == ["hidden must be a multiple of heads"]


SCRIPT = """
import hpcdet, hpcdet.core
with hpcdet.core.init() as core:
    core.train.report_training_metrics(1, {"loss": 1.0})
    if core.info.hparams["lr"] > 0.05:
        raise hpcdet.InvalidHP("lr too large for this model")
"""


def _job(tmp_path: pathlib.Path, master: FakeMaster, **extra: Any) -> pathlib.Path:
    job = write_job_dir(tmp_path / "job", master.url, **extra)
    (job / "context" / "train.py").write_text(SCRIPT)
    return job


def test_the_harness_reports_invalid_hp_and_exits_0(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    job = _job(tmp_path, fake_master)
    [rank] = run_harness(job, [job_environ(job)])
    assert rank.returncode == 0, rank.stderr
    assert fake_master.early_exits() == [{"reason": "invalid_hp"}]
    assert len(fake_master.reports("training")) == 1  # the context was closed on the way out
    lines = [line for line in rank.stderr.splitlines() if "InvalidHP" in line]
    assert lines == [
        "hpcdet harness: the entrypoint raised InvalidHP (lr too large for this model): "
        "reported an invalid_hp early exit to the master; exiting 0"
    ]


def test_a_failed_invalid_hp_report_exits_1(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    job = _job(tmp_path, fake_master)
    (job / "context" / "train.py").write_text(RAISER)
    fake_master.fail_next = [400]  # refused for good: not retried
    [rank] = run_harness(job, [job_environ(job)])
    assert rank.returncode == 1
    assert (
        "the entrypoint raised InvalidHP (hidden must be a multiple of heads), "
        "but reporting it to the master failed: scripted failure 400"
    ) in rank.stderr
    assert fake_master.early_exits() == []


def test_an_unmanaged_trial_only_logs_the_invalid_hp(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    job = _job(tmp_path, fake_master, unmanaged=True)
    [rank] = run_harness(job, [job_environ(job)])
    assert rank.returncode == 0, rank.stderr
    assert (
        "the entrypoint raised InvalidHP (lr too large for this model); "
        "an unmanaged trial has no master to tell; exiting 0"
    ) in rank.stderr
    assert fake_master.early_exits() == []


def test_only_rank_0_reports_a_scripts_invalid_hp(
    job_dir: pathlib.Path, fake_master: FakeMaster, capsys: pytest.CaptureFixture[str]
) -> None:
    info = load_trial_info({"DET_TRIAL_INFO": str(job_dir / "trial.json")})
    rank_1 = ClusterEnv(rank=1, size=2, local_rank=1, local_size=2, cross_rank=0, cross_size=1,
                        job_id="1", nodelist="n1", master_addr="n1", master_port=29500)
    assert harness_main._report_invalid_hp(info, rank_1, hpcdet.InvalidHP("too deep")) == 0
    assert "raised InvalidHP (too deep); rank 0 reports it; exiting 0" in capsys.readouterr().err
    assert fake_master.early_exits() == []
