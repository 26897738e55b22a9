"""The integration tests' stand-in trial (tests/integration/standin/standin.py) keeps the
digits trial's shape: validations per epoch with ``epochs``, a checkpoint per epoch, and a
resumption that continues exactly where an uninterrupted run would be. Two real harness
ranks, no torch, against the fake master."""

from __future__ import annotations

import pathlib
import time

from hang_guard import HANG_GUARD_S
from harness_fakes import (
    REPO_ROOT,
    FakeMaster,
    RankResult,
    one_node_step,
    start_harness,
    wait_harness,
    write_job_dir,
)

STANDIN = REPO_ROOT / "tests" / "integration" / "standin" / "standin.py"
CONFIG = {"entrypoint": "python3 standin.py", "scheduling_unit": 2,
          "searcher": {"name": "single", "metric": "validation_loss",
                       "max_length": {"epochs": 3}}}


def _run(root: pathlib.Path, master: FakeMaster, latest: str | None = None,
         gate: pathlib.Path | None = None, ask_to_stop_at_the_gate: bool = False,
         ) -> list[RankResult]:
    job = write_job_dir(root, master.url, experiment_config=CONFIG, latest_checkpoint=latest,
                        checkpoint_dir=str(root.parent / "checkpoints"))
    (job / "context" / "standin.py").write_text(STANDIN.read_text())
    extra = {"STANDIN_BATCHES_PER_EPOCH": "4", "HPCDET_PREEMPT_POLL_SECONDS": "0.2"}
    if gate is not None:
        extra["STANDIN_GATE"] = str(gate)
    ranks = start_harness(job, [{**env, **extra} for env in one_node_step(job)])
    if ask_to_stop_at_the_gate:  # once the first epoch's checkpoint is in
        deadline = time.monotonic() + HANG_GUARD_S
        while not master.checkpoints() and time.monotonic() < deadline:
            time.sleep(0.05)
        master.preempt = True
    results = wait_harness(job, ranks, 120)
    for rank in results:
        assert rank.returncode == 0, rank.stderr
        assert "the entrypoint imported torch" not in rank.stderr  # it never loads torch
    return results


def test_epochs_validations_and_checkpoints(tmp_path: pathlib.Path,
                                            fake_master: FakeMaster) -> None:
    _run(tmp_path / "job", fake_master)
    validations = fake_master.reports("validation")
    assert [(v["steps_completed"], v["metrics"]["epochs"]) for v in validations] == [
        (4, 1), (8, 2), (12, 3)]
    assert [r["steps_completed"] for r in fake_master.reports("training")] == [2, 4, 6, 8, 10, 12]
    assert [c["metadata"]["steps_completed"] for c in fake_master.checkpoints()] == [4, 8, 12]


def test_a_resumed_run_reports_what_an_uninterrupted_one_does(tmp_path: pathlib.Path) -> None:
    whole, resumed = FakeMaster(), FakeMaster()
    for master in (whole, resumed):
        master.start()
    try:
        _run(tmp_path / "whole" / "job", whole)
        first_epoch = whole.checkpoints()[0]
        (tmp_path / "resumed").mkdir()
        (tmp_path / "resumed" / "checkpoints").symlink_to(tmp_path / "whole" / "checkpoints")
        _run(tmp_path / "resumed" / "job", resumed, latest=first_epoch["uuid"])
    finally:
        for master in (whole, resumed):
            master.stop()
    assert resumed.reports("validation") == whole.reports("validation")[1:]
    assert resumed.reports("training") == whole.reports("training")[2:]


def test_an_open_gate_lets_both_ranks_train_on(tmp_path: pathlib.Path,
                                                fake_master: FakeMaster) -> None:
    gate = tmp_path / "gate"
    gate.touch()
    _run(tmp_path / "job", fake_master, gate=gate)
    assert [v["steps_completed"] for v in fake_master.reports("validation")] == [4, 8, 12]


def test_a_trial_held_at_the_gate_stops_when_asked(tmp_path: pathlib.Path,
                                                   fake_master: FakeMaster) -> None:
    # The gate never opens: without the stop request both ranks would wait there (the
    # harness would time out); asked, they stop after the first epoch's checkpoint.
    ranks = _run(tmp_path / "job", fake_master, gate=tmp_path / "never",
                 ask_to_stop_at_the_gate=True)
    assert [v["steps_completed"] for v in fake_master.reports("validation")] == [4]
    assert [c["metadata"]["steps_completed"] for c in fake_master.checkpoints()] == [4]
    assert "standin: asked to stop after batch 4" in ranks[0].stdout

