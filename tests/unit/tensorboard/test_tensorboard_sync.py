"""The TensorBoard syncer (hpcdet.tensorboard) against a fake metrics source.

The fake stands in for the master's API; the event files are real (tensorboard's writer)
and read back with TensorBoard's own reader, as the served TensorBoard reads them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tensorboard_fakes import FakeMetrics

from hpcdet.errors import HpcdetError
from hpcdet.tensorboard.events import RunWriter
from hpcdet.tensorboard.serve import parse_ids, task_id_from, tensorboard_argv
from hpcdet.tensorboard.source import Report, epoch_seconds, numeric
from hpcdet.tensorboard.sync import Syncer, run_dir

pytestmark = pytest.mark.interactive


def scalars(logdir: Path, trial_id: int, tag: str) -> list[tuple[int, float]]:
    """The points of ``tag`` in the trial's run, as TensorBoard reads them."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(run_dir(logdir, trial_id)))
    accumulator.Reload()
    return [(event.step, event.value) for event in accumulator.Scalars(tag)]


def test_each_point_is_written_once_and_new_ones_appear(tmp_path: Path) -> None:
    fake = FakeMetrics()
    fake.experiments[1] = [10]
    fake.report(10, "training", 50, loss=0.9)
    fake.report(10, "validation", 100, validation_loss=0.8, accuracy=0.5)
    syncer = Syncer(fake, tmp_path, experiment_ids=[1], open_writer=RunWriter)
    assert syncer.sync() == 3
    assert scalars(tmp_path, 10, "validation/validation_loss") == [(100, pytest.approx(0.8))]

    # The trial trains on, and the searcher adds a trial: only what is new is asked for.
    fake.report(10, "training", 100, loss=0.7)
    fake.report(10, "validation", 200, validation_loss=0.6, accuracy=0.7)
    fake.experiments[1].append(11)
    fake.report(11, "validation", 100, validation_loss=1.5)
    fake.asked.clear()
    assert syncer.sync() == 4
    assert (10, "validation", 100) in fake.asked and (10, "training", 50) in fake.asked
    assert (11, "validation", None) in fake.asked
    assert syncer.sync() == 0  # nothing new: nothing written
    syncer.close()

    assert scalars(tmp_path, 10, "validation/validation_loss") == [
        (100, pytest.approx(0.8)), (200, pytest.approx(0.6))]
    assert scalars(tmp_path, 10, "training/loss") == [
        (50, pytest.approx(0.9)), (100, pytest.approx(0.7))]
    assert scalars(tmp_path, 11, "validation/validation_loss") == [(100, pytest.approx(1.5))]


def test_named_trials_and_rolled_back_steps(tmp_path: Path) -> None:
    fake = FakeMetrics()
    fake.report(7, "validation", 100, validation_loss=0.5)
    syncer = Syncer(fake, tmp_path, trial_ids=[7], open_writer=RunWriter)
    assert syncer.trials() == [7]
    assert syncer.sync() == 1
    # A source that answers old steps again (a re-run from an earlier checkpoint) adds
    # nothing below the mark.
    fake.asked.clear()
    fake.stored[(7, "validation")].insert(0, Report(50, {"validation_loss": 0.4}))
    fake.report(7, "validation", 150, validation_loss=0.3)
    assert syncer.sync() == 1
    syncer.close()
    assert [step for step, _ in scalars(tmp_path, 7, "validation/validation_loss")] == [100, 150]


def test_only_numbers_are_scalars_and_times_are_read() -> None:
    assert numeric({"loss": 1, "acc": 0.5, "ok": True, "note": "x", "none": None}) == {
        "loss": 1.0, "acc": 0.5}
    assert epoch_seconds("1970-01-01T00:01:00+00:00") == 60.0
    assert epoch_seconds("1970-01-01T00:01:00") == 60.0
    assert epoch_seconds("yesterday") is None and epoch_seconds(None) is None


def test_ids_and_the_command_line(tmp_path: Path) -> None:
    assert parse_ids(["1,2", "3"]) == [1, 2, 3]
    with pytest.raises(HpcdetError, match="whole numbers"):
        parse_ids(["1;rm"])
    assert task_id_from({"DET_TASK_ID": "12"}, tmp_path) == "12"
    assert task_id_from({}, tmp_path / "task-34") == "34"
    with pytest.raises(HpcdetError, match="no task id"):
        task_id_from({}, tmp_path)
    argv = tensorboard_argv(tmp_path, "/proxy/34", 6123, tmp_path / "service_token")
    assert argv[1:3] == ["-m", "hpcdet.tensorboard.guard"]  # behind the task's secret
    assert " ".join(argv[3:]).startswith(
        f"--logdir {tmp_path} --path_prefix /proxy/34 --host 0.0.0.0 --port 6123 "
        "--reload_interval 5")
    assert argv[-2:] == ["--token-file", str(tmp_path / "service_token")]


def test_the_package_never_imports_the_master() -> None:
    """It runs in the job and talks to the master over HTTP only (docs/architecture.md)."""
    import ast

    import hpcdet.tensorboard

    imported: set[str] = set()
    for path in Path(hpcdet.tensorboard.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
    assert not [name for name in imported if name.startswith(("hpcdet.master", "flask",
                                                               "sqlalchemy", "torch"))]
