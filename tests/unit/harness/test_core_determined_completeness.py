"""The Core API names Determined 0.38 has that hpcdet added for issue 29: checkpoint
upload/download/get_metadata/delete and sharded store_path, set_status, PreemptMode and
acknowledge_preemption_signal, init(preempt_mode=, tensorboard_mode=)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from hang_guard import HANG_GUARD_S

import hpcdet.core as core
from hpcdet.core import DummyDistributedContext
from hpcdet.core._checkpoint_files import merge_metadata
from hpcdet.core._preempt import _reset_for_tests, signal_preemption


@pytest.fixture
def ctx(tmp_path: Path, off_cluster: None) -> Any:
    with core.init(checkpoint_storage=tmp_path / "ckpts") as context:
        yield context


@pytest.fixture
def off_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DET_TRIAL_INFO", raising=False)


def test_upload_download_metadata_delete(ctx: Any, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "model.pt").write_text("m")
    (src / "sub" / "extra.txt").write_text("x")
    storage_id = ctx.checkpoint.upload(src, {"steps_completed": 3, "note": "hi"},
                                       selector=lambda path: path.endswith(".pt"))
    assert ctx.checkpoint.get_metadata(storage_id)["note"] == "hi"
    ctx.checkpoint.download(storage_id, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["metadata.json", "model.pt"]
    ctx.checkpoint.delete(storage_id)
    with pytest.raises(core.CheckpointNotFoundError):
        ctx.checkpoint.get_metadata(storage_id)


def test_upload_refuses_nothing(ctx: Any) -> None:
    with pytest.raises(RuntimeError, match="store nothing"):
        ctx.checkpoint.upload(None)


def test_restore_path_takes_determined_arguments(ctx: Any) -> None:
    with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, storage_id):
        (path / "w").write_text("1")
    with ctx.checkpoint.restore_path(storage_id, core.DownloadMode.NoSharedDownload,
                                     selector=lambda _: True) as path:
        assert (path / "w").read_text() == "1"


def test_merge_metadata_follows_determined() -> None:
    merged, conflicts = merge_metadata([{"a": {"c": 1}, "s": 1}, {"a": {"d": 2}, "s": 1}])
    assert merged == {"a": {"c": 1, "d": 2}, "s": 1} and conflicts == {}
    _, conflicts = merge_metadata([{"a": [1]}, {"a": [2]}])
    assert conflicts == {"/a": [0, 1]}


class ThreadDist(DummyDistributedContext):
    """Ranks as threads sharing a barrier: enough for the sharded checkpoint's collectives."""

    def __init__(self, rank: int, size: int, shared: dict[str, Any]) -> None:
        super().__init__()
        self.rank, self.size, self._shared = rank, size, shared

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    def allgather(self, obj: Any) -> list[Any]:
        slots = self._shared.setdefault("slots", [None] * self.size)
        barrier: threading.Barrier = self._shared["barrier"]
        barrier.wait()
        slots[self.rank] = obj
        barrier.wait()
        out = list(slots)
        barrier.wait()
        return out

    def broadcast(self, obj: Any) -> Any:
        return self.allgather(obj)[0]


def _sharded_run(tmp_path: Path, metadata: list[dict[str, Any]]) -> list[Any]:
    shared: dict[str, Any] = {"barrier": threading.Barrier(2)}
    results: list[Any] = [None, None]

    def rank(r: int) -> None:
        dist = ThreadDist(r, 2, shared)
        context = core.init(distributed=dist, checkpoint_storage=tmp_path / "ckpts")
        try:
            with context.checkpoint.store_path(metadata[r], shard=True) as (path, sid):
                (path / f"rank{r}.pt").write_text(str(r))
            results[r] = sid
        except RuntimeError as exc:
            results[r] = exc

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=HANG_GUARD_S)
    return results


@pytest.mark.usefixtures("off_cluster")
def test_sharded_store_path_merges_files_and_metadata(tmp_path: Path) -> None:
    results = _sharded_run(tmp_path, [{"steps_completed": 5, "a": {"x": 1}}, {"a": {"y": 2}}])
    assert results[0] == results[1] and isinstance(results[0], str), results
    stored = tmp_path / "ckpts" / results[0]
    assert {p.name for p in stored.iterdir()} == {"rank0.pt", "rank1.pt", "metadata.json"}
    metadata = core.init(checkpoint_storage=tmp_path / "ckpts").checkpoint.get_metadata(
        results[0])
    assert metadata["a"] == {"x": 1, "y": 2} and metadata["steps_completed"] == 5


@pytest.mark.usefixtures("off_cluster")
def test_sharded_store_path_refuses_conflicting_metadata(tmp_path: Path) -> None:
    results = _sharded_run(tmp_path, [{"steps_completed": 5}, {"steps_completed": 6}])
    assert all(isinstance(r, RuntimeError) and "conflicts" in str(r) for r in results), results
    assert not any((tmp_path / "ckpts").iterdir())


def test_set_status_prints_on_the_chief(ctx: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ctx.train.set_status("loading data")
    assert "status: loading data" in capsys.readouterr().err


@pytest.mark.usefixtures("off_cluster")
def test_preempt_modes_and_acknowledge(tmp_path: Path) -> None:
    context = core.init(checkpoint_storage=tmp_path, preempt_mode=core.PreemptMode.ChiefOnly,
                        tensorboard_mode=core.TensorboardMode.MANUAL)
    assert isinstance(context.preempt, core.DummyPreemptContext)
    try:
        assert context.preempt.should_preempt() is False
        signal_preemption()
        assert context.preempt.should_preempt(auto_ack=False) is True
        context.preempt.acknowledge_preemption_signal()
    finally:
        _reset_for_tests()
    worker = core.DummyPreemptContext(ThreadDist(1, 2, {}), core.PreemptMode.ChiefOnly)
    with pytest.raises(RuntimeError, match="ChiefOnly"):
        worker.should_preempt()
    with pytest.raises(ValueError):
        core.init(checkpoint_storage=tmp_path, preempt_mode="nonsense")  # type: ignore[arg-type]
