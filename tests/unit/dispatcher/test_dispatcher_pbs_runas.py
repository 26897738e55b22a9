"""The PBS backend in run-as-owner mode: what it asks sudo and the helper to run."""

from __future__ import annotations

import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hpcdet.dispatcher.base import Submission
from hpcdet.dispatcher.pbs.backend import PbsBackend
from hpcdet.dispatcher.queue import JobUpdate
from hpcdet.dispatcher.runas import RunAs

HELPER = "/usr/local/libexec/hpcdet-runas"
SUDO = ("sudo", "-n", "-u", "user_a", "--", HELPER)
JOB_DIR = "/srv/jobs/user_a/exp-1/trial-1"


class FakeSudo:
    """A fake sudo: records argv and answers ``submit`` with qsub's recorded output."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.count = 0

    def __call__(self, argv: Sequence[str], *, timeout: float = 60,
                 stdin: bytes | None = None) -> str:
        self.calls.append(tuple(argv))
        return "8.vm\n" if "submit" in argv else ""


def backend(sudo: FakeSudo, runner: Any = None) -> PbsBackend:
    runas = RunAs(helper=HELPER, service_user="hpcdet", runner=sudo)  # type: ignore[arg-type]
    return PbsBackend(runner=runner, runas=runas)


def test_submit_as_owner_prepares_then_qsubs_through_the_helper() -> None:
    sudo = FakeSudo()
    path = f"{JOB_DIR}/job-1.sh"
    job_id = backend(sudo).submit(Submission("#!/bin/bash\n", path, ("qsub", path), "user_a"))
    assert job_id == "8.vm"
    assert sudo.calls == [(*SUDO, "prepare", JOB_DIR), (*SUDO, "submit", JOB_DIR, "job-1.sh", "--")]


def test_submit_without_owner_writes_an_owner_only_script(recorded_slurm: Any,
                                                          tmp_path: Path) -> None:
    runner = recorded_slurm({"qsub": "9.vm\n"})
    path = tmp_path / "job.sh"
    sudo = FakeSudo()
    job_id = backend(sudo, runner).submit(Submission("#!/bin/bash\n", str(path),
                                                     ("qsub", str(path))))
    assert job_id == "9.vm" and sudo.calls == []
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert runner.calls == [("qsub", str(path))]


def test_cancel_and_update_as_owner_go_through_the_helper() -> None:
    sudo = FakeSudo()
    pbs = backend(sudo)
    pbs.cancel(["3.vm", "4.vm"], owner="user_a")
    pbs.update_job("3.vm", JobUpdate(partition="debug", nice=10), owner="user_a")
    assert sudo.calls == [(*SUDO, "cancel", "3.vm", "4.vm"),
                          (*SUDO, "update", "3.vm", "nice=10"),
                          (*SUDO, "update", "3.vm", "partition=debug")]
