"""checkpoint.store_path / restore_path: atomic directories, registration with the master."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator

import pytest
from harness_fakes import FakeMaster

import hpcdet.core
from hpcdet.core import CheckpointNotFoundError, DistributedContext
from hpcdet.core import _context as core_context_module
from hpcdet.core._reporter import Backoff


@pytest.fixture
def core(in_job: pathlib.Path) -> Iterator[hpcdet.core.Context]:
    with hpcdet.core.init() as context:
        yield context


def _entries(directory: pathlib.Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_store_path_writes_renames_and_registers(
    core: hpcdet.core.Context, in_job: pathlib.Path, fake_master: FakeMaster
) -> None:
    with core.checkpoint.store_path({"steps_completed": 40, "note": "hi"}) as (path, uuid):
        assert path.name == uuid + ".partial"
        (path / "model.pt").write_bytes(b"x" * 10)
        (path / "sub").mkdir()
        (path / "sub" / "opt.pt").write_bytes(b"y" * 3)
    final = in_job / "checkpoints" / uuid
    assert _entries(in_job / "checkpoints") == [uuid]
    metadata = json.loads((final / "metadata.json").read_text())
    assert metadata["steps_completed"] == 40
    assert (metadata["trial_id"], metadata["experiment_id"]) == (11, 7)
    assert metadata["hparams"] == {"lr": 0.1}
    assert metadata["note"] == "hi"
    assert metadata["framework"].startswith("torch-")
    [registered] = fake_master.checkpoints()
    assert registered["uuid"] == uuid
    assert registered["steps_completed"] == 40
    assert registered["metadata"] == metadata
    assert registered["resources"] == {
        "metadata.json": (final / "metadata.json").stat().st_size,
        "model.pt": 10,
        "sub/opt.pt": 3,
    }


def test_an_exception_inside_leaves_nothing_behind(
    core: hpcdet.core.Context, in_job: pathlib.Path, fake_master: FakeMaster
) -> None:
    with pytest.raises(RuntimeError, match="disk full"):
        with core.checkpoint.store_path({"steps_completed": 1}) as (path, _uuid):
            (path / "model.pt").write_bytes(b"half")
            raise RuntimeError("disk full")
    assert _entries(in_job / "checkpoints") == []
    assert fake_master.checkpoints() == []


def test_validation_metrics_reach_the_master_before_the_checkpoint(
    core: hpcdet.core.Context, fake_master: FakeMaster
) -> None:
    core.train.report_validation_metrics(5, {"accuracy": 0.8})
    with core.checkpoint.store_path({"steps_completed": 5}) as (path, _uuid):
        (path / "w").write_text("w")
    assert [r.route for r in fake_master.accepted] == ["metrics", "checkpoints"]
    assert fake_master.checkpoints()[0]["metadata"]["validation_metrics"] == {"accuracy": 0.8}


def test_steps_completed_defaults_to_the_last_reported(
    core: hpcdet.core.Context, fake_master: FakeMaster
) -> None:
    core.train.report_training_metrics(17, {"loss": 1.0})
    with core.checkpoint.store_path() as (path, _uuid):
        (path / "w").write_text("w")
    assert fake_master.checkpoints()[0]["steps_completed"] == 17


def test_bad_steps_completed_fails_before_writing(
    core: hpcdet.core.Context, in_job: pathlib.Path
) -> None:
    with pytest.raises(ValueError, match="steps_completed"):
        with core.checkpoint.store_path({"steps_completed": "ten"}):
            pass
    assert _entries(in_job / "checkpoints") == []


def test_registration_is_retried_after_503(
    core: hpcdet.core.Context, fake_master: FakeMaster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core_context_module, "_REGISTER_BACKOFF", Backoff(0.01, 0.01, attempts=5))
    fake_master.fail_next = [503]
    with core.checkpoint.store_path({"steps_completed": 2}) as (path, _uuid):
        (path / "w").write_text("w")
    assert len(fake_master.checkpoints()) == 1


def test_restore_path(core: hpcdet.core.Context, in_job: pathlib.Path) -> None:
    with core.checkpoint.store_path({"steps_completed": 3}) as (path, uuid):
        (path / "w").write_text("weights")
    with core.checkpoint.restore_path(uuid) as restored:
        assert restored == in_job / "checkpoints" / uuid
        assert (restored / "w").read_text() == "weights"


@pytest.mark.parametrize("storage_id", ["missing-uuid", "../trial.json", "x.partial", ""])
def test_restore_path_refuses_what_is_not_a_checkpoint(
    core: hpcdet.core.Context, storage_id: str
) -> None:
    with pytest.raises(CheckpointNotFoundError):
        with core.checkpoint.restore_path(storage_id):
            pass


@pytest.mark.usefixtures("off_cluster")
def test_store_path_is_chief_only(tmp_path: pathlib.Path) -> None:
    worker = DistributedContext(
        rank=1,
        size=2,
        local_rank=1,
        local_size=2,
        cross_rank=0,
        cross_size=1,
        collectives=object(),  # type: ignore[arg-type]  # never used here
    )
    with hpcdet.core.init(distributed=worker, checkpoint_storage=tmp_path) as core:
        with pytest.raises(RuntimeError, match="chief-only, called on rank 1"):
            with core.checkpoint.store_path({"steps_completed": 1}):
                pass
    assert _entries(tmp_path) == []


@pytest.mark.usefixtures("off_cluster")
def test_dummy_checkpoints_go_to_a_local_directory(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with hpcdet.core.init() as core:
        with core.checkpoint.store_path({"steps_completed": 1}) as (path, uuid):
            (path / "w").write_text("w")
    metadata = json.loads((tmp_path / "checkpoints" / uuid / "metadata.json").read_text())
    assert (metadata["trial_id"], metadata["steps_completed"]) == (None, 1)


def test_checkpoint_storage_is_ignored_in_a_job(
    in_job: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with hpcdet.core.init(checkpoint_storage=tmp_path / "elsewhere") as core:
        assert core.checkpoint.checkpoint_dir == in_job / "checkpoints"
    assert "ignored in a job" in capsys.readouterr().err
