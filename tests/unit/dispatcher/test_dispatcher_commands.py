"""The one place scheduler commands run."""

from __future__ import annotations

import pytest

from hpcdet.dispatcher.base import get_backend
from hpcdet.dispatcher.commands import CommandRunner
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.errors import SchedulerError


def test_returns_stdout_and_counts_calls() -> None:
    runner = CommandRunner()
    assert runner(["echo", "hello"]) == "hello\n"
    runner(["true"])
    assert runner.count == 2
    assert list(runner.calls) == [("echo", "hello"), ("true",)]


def test_history_is_bounded_but_the_count_is_not() -> None:
    runner = CommandRunner(history=2)
    for _ in range(3):
        runner(["true"])
    assert runner.count == 3 and len(runner.calls) == 2


def test_non_zero_exit_raises_with_everything_captured() -> None:
    with pytest.raises(SchedulerError) as info:
        CommandRunner()(["sh", "-c", "echo out; echo 'squeue: error: bad' >&2; exit 3"])
    assert (info.value.returncode, info.value.stdout, info.value.stderr) == (
        3, "out\n", "squeue: error: bad\n"
    )  # fmt: skip
    assert info.value.argv[0] == "sh"
    assert str(info.value) == "sh exited with 3: squeue: error: bad"


def test_missing_command_says_what_to_check() -> None:
    with pytest.raises(SchedulerError) as info:
        CommandRunner()(["hpcdet-no-such-sbatch", "--parsable"])
    assert info.value.returncode == 127
    assert "not found on PATH" in str(info.value)
    assert "SLURM_CONF" in str(info.value)


def test_environment_is_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm-test/slurm.conf")
    assert CommandRunner()(["sh", "-c", 'printf %s "$SLURM_CONF"']) == "/etc/slurm-test/slurm.conf"


def test_timeout_is_a_scheduler_error() -> None:
    with pytest.raises(SchedulerError, match="timed out") as info:
        CommandRunner()(["sleep", "10"], timeout=0.2)
    assert info.value.returncode == 124


def test_registry_builds_the_slurm_backend() -> None:
    backend = get_backend("slurm", sbatch="/opt/slurm/bin/sbatch")
    assert isinstance(backend, SlurmBackend)
    assert backend.name == "slurm" and backend.sbatch == "/opt/slurm/bin/sbatch"
    assert isinstance(backend.runner, CommandRunner)
