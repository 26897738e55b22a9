"""The reporter as one stream: seq numbers, a master that goes away, the spool directory."""

from __future__ import annotations

import json
import pathlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from harness_fakes import TOKEN, FakeMaster, write_job_dir
from report_servers import RestartableFake

import hpcdet.core
from hpcdet.client import MasterClient
from hpcdet.core._context import resumed_steps, stream_identity
from hpcdet.core._reporter import (
    Backoff,
    MetricsReporter,
    StreamIdentity,
    close_timeout_from_environ,
)
from hpcdet.errors import MasterError, ValidationError
from hpcdet.job.trial_info import TrialInfo

FAST = Backoff(initial=0.01, maximum=0.05)
STREAM = StreamIdentity(run_id=3, requeue=1, rank=0, resumed_uuid="abc", resumed_steps=7)


@pytest.fixture
def outage() -> Iterator[RestartableFake]:
    """A fake master whose port can be closed (connection refused) and opened again."""
    master = FakeMaster()
    master.start()  # its own port is not used; stop() below closes it
    server = RestartableFake(master)
    try:
        yield server
    finally:
        server.down()
        master.stop()


MakeReporter = Callable[..., MetricsReporter]


@pytest.fixture
def make_reporter() -> Iterator[MakeReporter]:
    """``make_reporter(url, spool, **options)``: a reporter whose client is closed after."""
    clients: list[MasterClient] = []

    def make(url: str, spool: pathlib.Path, **options: Any) -> MetricsReporter:
        clients.append(MasterClient(url, token=TOKEN))
        settings: dict[str, Any] = {"flush_interval": 0.02, "backoff": FAST, "stream": STREAM,
                                    "spool_dir": spool, **options}
        return MetricsReporter(clients[-1], 11, **settings)

    yield make
    for client in clients:
        client.close()


def _posted_seqs(master: FakeMaster) -> list[int]:
    """The seq of every report the master accepted, in arrival order."""
    seqs = []
    for record in master.accepted:
        count = len(record.body["reports"]) if record.route == "metrics" else 1
        seqs += range(record.body["seq"], record.body["seq"] + count)
    return seqs


def _segments(spool: pathlib.Path) -> list[pathlib.Path]:
    return sorted(spool.glob("seg-*.jsonl"))


def _spooled(spool: pathlib.Path) -> list[dict[str, Any]]:
    return [json.loads(line) for segment in _segments(spool)
            for line in segment.read_text().splitlines()]


def _in_thread(action: Callable[[], None]) -> None:
    """Run ``action``; fail (instead of hanging the suite) if it never returns."""
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the call blocked"


def test_reports_are_numbered_in_one_ordered_stream(
        fake_master: FakeMaster, tmp_path: pathlib.Path, make_reporter: MakeReporter) -> None:
    reporter = make_reporter(fake_master.url, tmp_path / "spool", flush_interval=60.0)
    reporter.report("training", 1, {"loss": 1.0})
    reporter.report("training", 2, {"loss": 0.5})
    reporter.report("validation", 2, {"loss": 0.6})
    reporter.report("training", 3, {"loss": 0.4})
    reporter.register_checkpoint({"uuid": "u" * 12, "steps_completed": 3, "metadata": {},
                                  "resources": {}})
    reporter.report("training", 4, {"loss": 0.3})
    reporter.close()
    routes = [(r.route, r.body.get("group"), r.body["seq"]) for r in fake_master.accepted]
    assert routes == [("metrics", "training", 0), ("metrics", "validation", 2),
                      ("metrics", "training", 3), ("checkpoints", None, 4),
                      ("metrics", "training", 5)]
    assert _posted_seqs(fake_master) == [0, 1, 2, 3, 4, 5]
    for record in fake_master.accepted:
        assert record.body["stream"] == {"run_id": 3, "requeue": 1, "rank": 0}
        assert record.body["resumed_from"] == {"uuid": "abc", "steps_completed": 7}
    assert fake_master.checkpoints()[0]["uuid"] == "u" * 12
    assert [p.name for p in (tmp_path / "spool").iterdir()] == ["stream.json"]
    assert json.loads((tmp_path / "spool" / "stream.json").read_text()) == {
        "trial_id": 11, "run_id": 3, "requeue": 1, "rank": 0,
        "resumed_from": {"uuid": "abc", "steps_completed": 7}}


def test_a_master_down_for_a_while_then_back_gets_everything_once_in_order(
        outage: RestartableFake, tmp_path: pathlib.Path, make_reporter: MakeReporter) -> None:
    outage.up()
    reporter = make_reporter(outage.url, tmp_path / "spool", batch_size=4)
    for step in range(10):
        reporter.report("training", step, {"loss": 1.0})
    reporter.flush()
    outage.down()
    for step in range(10, 40):
        reporter.report("validation" if step % 10 == 0 else "training", step, {"loss": 1.0})
    reporter.flush()  # the master cannot be reached: it does not wait
    outage.up()
    reporter.close()
    assert _posted_seqs(outage.master) == list(range(40))
    steps = [r["steps_completed"] for record in outage.master.accepted
             for r in record.body["reports"]]
    assert steps == list(range(40))


def test_past_max_pending_reports_spill_to_disk_and_report_never_blocks(
        outage: RestartableFake, tmp_path: pathlib.Path, make_reporter: MakeReporter) -> None:
    spool = tmp_path / "spool"
    reporter = make_reporter(outage.url, spool, max_pending=5, batch_size=3)

    def train() -> None:
        for step in range(50):
            reporter.report("training", step, {"loss": float(step)})

    _in_thread(train)  # the master was never up
    on_disk = _spooled(spool)
    assert [r["seq"] for r in on_disk] == list(range(5, 50))  # 5 wait in memory
    assert len(_segments(spool)) == 9  # max_pending reports per segment
    outage.up()
    reporter.close()
    assert _posted_seqs(outage.master) == list(range(50))
    assert [r["metrics"]["loss"] for r in outage.master.reports("training")] == [
        float(s) for s in range(50)]
    assert _segments(spool) == []  # delivered segments are removed


def test_close_with_the_master_down_leaves_every_report_in_the_spool(
        outage: RestartableFake, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str],
        make_reporter: MakeReporter) -> None:
    spool = tmp_path / "spool"
    reporter = make_reporter(outage.url, spool, max_pending=8, close_timeout=0.2)
    outage.up()
    for step in range(6):
        reporter.report("training", step, {"loss": 1.0})
    reporter.flush()
    outage.down()

    def train() -> None:
        for step in range(6, 26):
            reporter.report("training", step, {"loss": 1.0})
        reporter.register_checkpoint({"uuid": "c" * 12, "steps_completed": 25})
        reporter.report("validation", 25, {"loss": 0.5})

    _in_thread(train)
    reporter.close()  # nothing raised: the reports are safe on disk
    left = sorted(_spooled(spool), key=lambda r: r["seq"])
    assert [r["seq"] for r in left] == list(range(6, 28))
    assert left[20] == {"seq": 26, "group": "checkpoint",
                        "checkpoint": {"uuid": "c" * 12, "steps_completed": 25}}
    assert left[21]["group"] == "validation"
    assert _posted_seqs(outage.master) == list(range(6))
    err = capsys.readouterr().err
    assert f"the master did not take 22 report(s) in time; left them in {spool}" in err
    assert not list(spool.glob(".*.tmp"))


class StaleMaster(FakeMaster):
    """Answers report POSTs with 409 stale_run (a newer execution of the trial started)."""

    def answer(self, path: str, auth: str | None, body: dict[str, Any]) -> tuple[int, Any]:
        self.attempts += 1
        return 409, {"error": {"code": "stale_run", "message": "run 3 is stale; run 4 has "
                               "started since", "details": []}}


@pytest.fixture
def stale_master() -> Iterator[StaleMaster]:
    master = StaleMaster()
    master.start()
    yield master
    master.stop()


def test_a_stale_run_is_a_permanent_error_and_nothing_is_dropped(
        stale_master: StaleMaster, tmp_path: pathlib.Path, make_reporter: MakeReporter) -> None:
    spool = tmp_path / "spool"
    reporter = make_reporter(stale_master.url, spool)
    reporter.report("training", 1, {"loss": 1.0})
    with pytest.raises(MasterError, match="run 3 is stale"):
        reporter.flush()
    with pytest.raises(MasterError, match="stale"):
        reporter.report("training", 2, {"loss": 1.0})
    with pytest.raises(MasterError, match="stale"):
        reporter.close()
    assert stale_master.attempts == 1  # not retried
    assert [r["seq"] for r in _spooled(spool)] == [0]


def test_a_409_conflict_is_retried(fake_master: FakeMaster, tmp_path: pathlib.Path,
                                   make_reporter: MakeReporter) -> None:
    fake_master.fail_next = [409]
    reporter = make_reporter(fake_master.url, tmp_path / "spool")
    reporter.report("training", 1, {"loss": 1.0})
    reporter.close()
    assert fake_master.attempts == 2
    assert _posted_seqs(fake_master) == [0]


def test_a_second_reporter_of_the_same_stream_continues_the_numbering(
        fake_master: FakeMaster, tmp_path: pathlib.Path, make_reporter: MakeReporter) -> None:
    stream = StreamIdentity(run_id=9, requeue=0, rank=2)
    for _ in range(2):
        reporter = make_reporter(fake_master.url, tmp_path / "spool", stream=stream)
        reporter.report("profiling", 1, {"x": 1.0})
        reporter.close()
    assert _posted_seqs(fake_master) == [0, 1]


@pytest.mark.parametrize(("raw", "seconds"), [(None, 30.0), ("2.5", 2.5), ("0", 0.0)])
def test_the_close_timeout_comes_from_the_environment(raw: str | None, seconds: float) -> None:
    environ = {} if raw is None else {"HPCDET_REPORT_CLOSE_TIMEOUT": raw}
    assert close_timeout_from_environ(environ) == seconds


@pytest.mark.parametrize("raw", ["soon", "-1", "nan"])
def test_a_bad_close_timeout_is_refused(raw: str) -> None:
    with pytest.raises(ValidationError, match="HPCDET_REPORT_CLOSE_TIMEOUT"):
        close_timeout_from_environ({"HPCDET_REPORT_CLOSE_TIMEOUT": raw})


def _trial_info(tmp_path: pathlib.Path, latest: str | None) -> TrialInfo:
    return TrialInfo(master_url="http://m", experiment_id=1, trial_id=2, trial_seed=0,
                     hparams={}, experiment_config={}, checkpoint_dir=str(tmp_path), run_id=4,
                     latest_checkpoint=latest, job_dir=str(tmp_path))


def test_the_stream_names_its_execution_and_where_it_resumed(tmp_path: pathlib.Path) -> None:
    (tmp_path / "ckpt-1").mkdir()
    (tmp_path / "ckpt-1" / "metadata.json").write_text(json.dumps({"steps_completed": 120}))
    stream = stream_identity(_trial_info(tmp_path, "ckpt-1"), 3, {"SLURM_RESTART_COUNT": "2"})
    assert stream == StreamIdentity(run_id=4, requeue=2, rank=3, resumed_uuid="ckpt-1",
                                    resumed_steps=120)
    fresh = stream_identity(_trial_info(tmp_path, None), 0, {})
    assert (fresh.requeue, fresh.resumed_uuid, fresh.resumed_steps) == (0, None, 0)


@pytest.mark.parametrize("content", [None, "not json", "[]", '{"steps_completed": "ten"}',
                                     '{"steps_completed": -3}'])
def test_an_unreadable_checkpoint_resumes_from_step_0(tmp_path: pathlib.Path,
                                                      content: str | None) -> None:
    (tmp_path / "ckpt-2").mkdir()
    if content is not None:
        (tmp_path / "ckpt-2" / "metadata.json").write_text(content)
    assert resumed_steps(tmp_path, "ckpt-2") == 0


def test_core_in_a_job_reports_as_a_stream_with_a_spool_directory(
        fake_master: FakeMaster, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = write_job_dir(tmp_path / "job", fake_master.url, run_id=2)
    monkeypatch.setenv("DET_TRIAL_INFO", str(job / "trial.json"))
    monkeypatch.setenv("DET_JOB_DIR", str(job))
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    for name in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with hpcdet.core.init() as core:
        core.train.report_training_metrics(1, {"loss": 2.0})
        core.train.report_validation_metrics(1, {"loss": 2.5})
        with core.checkpoint.store_path({"steps_completed": 1}) as (path, _uuid):
            (path / "w").write_text("w")
    bodies = [r.body for r in fake_master.accepted]
    assert [b["stream"] for b in bodies] == [{"run_id": 2, "requeue": 1, "rank": 0}] * 3
    assert [b["seq"] for b in bodies] == [0, 1, 2]
    meta = json.loads((job / "spool" / "r2.q1.k0" / "stream.json").read_text())
    assert meta["resumed_from"] == {"uuid": None, "steps_completed": 0}
