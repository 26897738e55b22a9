"""``det qsub`` through the real CLI against a fake master (a transport named as the fake
it is): what it sends, prints and exits with."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)

SCRIPT = "#!/bin/bash\n#PBS -N from-script\n#PBS -l walltime=00:01:00\necho hi\n"


def task(state: str = "QUEUED", **extra: Any) -> dict[str, Any]:
    return {"task": {"id": 5, "job_id": "1042.pbs-dev", "state": state, "name": "n", **extra}}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "job.pbs").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PBS_DPREFIX", raising=False)
    return tmp_path


def sent(fake_master: FakeMaster) -> dict[str, Any]:
    [request] = fake_master.sent("POST", "/tasks")
    body: dict[str, Any] = json.loads(request.content)
    return body


def test_the_job_id_alone_and_the_command_line_wins(det: Det, fake_master: FakeMaster,
                                                    workdir: Path) -> None:
    fake_master.add("POST", "/tasks", task(), status=201)
    result = det("qsub", "-N", "mine", "job.pbs")
    assert result.exit_code == 0, result.output
    assert result.stdout == "1042.pbs-dev\n"
    assert "det qsub: task 5 (det task logs 5 -f)" in result.stderr
    body = sent(fake_master)
    assert body["scheduler"] == "pbs" and body["options"] == [["l", "walltime=00:01:00"],
                                                              ["N", "mine"]]
    assert body["environment"]["PBS_O_WORKDIR"] == str(workdir)


def test_z_prints_nothing_and_block_waits_for_the_exit_status(
        det: Det, fake_master: FakeMaster, workdir: Path) -> None:
    fake_master.add("POST", "/tasks", task(), status=201)
    fake_master.add("GET", "/tasks/5", task("RUNNING"), task("ERROR", exit_code=3))
    result = det("qsub", "-z", "-W", "block=true", "job.pbs")
    assert result.exit_code == 3 and result.stdout == ""
    assert sent(fake_master)["options"] == [["N", "from-script"], ["l", "walltime=00:01:00"]]


@pytest.mark.parametrize(("args", "message"), [
    (["-J", "1-3", "job.pbs"], "-J: job arrays are not supported"),
    (["-I"], "-I: interactive jobs are not supported"),
    (["-Y", "job.pbs"], "command line: unknown qsub option -Y"),
    (["missing.pbs"], "cannot read the batch script missing.pbs"),
    (["job.pbs", "arg"], "qsub takes one script"),
])
def test_refusals_are_one_line_without_a_traceback(det: Det, fake_master: FakeMaster,
                                                   workdir: Path, args: list[str],
                                                   message: str) -> None:
    result = det("qsub", *args)
    assert result.exit_code == 1
    assert message in result.stderr and "Traceback" not in result.stderr
    assert fake_master.sent("POST", "/tasks") == []


def test_help_and_version_need_no_master(det: Det, fake_master: FakeMaster) -> None:
    assert "Submit a batch script to PBS" in det("qsub", "--help").stdout
    assert det("qsub", "--version").stdout.startswith("det qsub (hpcdet ")
    assert fake_master.sent("POST", "/tasks") == []
