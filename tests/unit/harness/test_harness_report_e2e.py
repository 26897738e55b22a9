"""End to end: the real Core API of a managed trial reporting to the real master app, whose
server goes away and comes back. Every report ends up stored exactly once.

SQLite and PostgreSQL; the master is served by werkzeug on a fixed port (report_servers.py),
so stopping it refuses connections as a killed master does.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
from harness_fakes import TOKEN, write_job_dir
from report_servers import LiveMaster
from sqlalchemy import func, select

import hpcdet.core
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.transport.local import LOCAL
from hpcdet.errors import MasterError
from hpcdet.master.app import create_app
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Checkpoint, Experiment, Metric, SearcherEvent, Trial
from hpcdet.master.reports.spool_ingest import ingest_spooled_reports
from hpcdet.master.security.tokens import hash_token
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings
from hpcdet.master.transitions import transition
from hpcdet.states import State


@dataclass
class Setup:
    master: LiveMaster
    trial_id: int
    job_dir: pathlib.Path

    @property
    def sessions(self) -> Any:
        return make_session_factory(self.master.app.config["HPCDET_ENGINE"])

    def visible(self, group: str) -> list[tuple[int, dict[str, float]]]:
        """(steps, metrics) of ``group`` as GET /trials/<id>/metrics answers."""
        client = self.master.app.test_client()
        got = client.get(f"/api/v1/trials/{self.trial_id}/metrics?group={group}").get_json()
        return [(m["steps_completed"], m["metrics"]) for m in got["metrics"]]

    def count(self, model: Any, **where: Any) -> int:
        query = select(func.count()).select_from(model).where(model.trial_id == self.trial_id)
        for name, value in where.items():
            query = query.where(getattr(model, name) == value)
        with self.sessions() as session:
            return int(session.scalar(query) or 0)

    def trial(self) -> Trial:
        with self.sessions() as session:
            return session.get_one(Trial, self.trial_id)


@pytest.fixture
def setup(migrated_db_url: str, tmp_path: pathlib.Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    rm = replace(ResourceManagerSettings(), job_storage_root=str(tmp_path / "jobs"),
                 master_host="127.0.0.1", cluster_name="unit")
    app = create_app(MasterSettings(db_url=migrated_db_url, resource_manager=rm,
                                    state_dir=str(tmp_path)), backend=SlurmBackend())
    master = LiveMaster(app)
    trial_id, exp_id = _trial(app)
    job_dir = write_job_dir(tmp_path / "job", master.url, trial_id=trial_id,
                            experiment_id=exp_id)
    monkeypatch.setenv("DET_TRIAL_INFO", str(job_dir / "trial.json"))
    monkeypatch.setenv("DET_JOB_DIR", str(job_dir))
    monkeypatch.setenv("HPCDET_PREEMPT_POLL_SECONDS", "3600")
    for name in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "MASTER_ADDR", "MASTER_PORT",
                 "SLURM_RESTART_COUNT", "HPCDET_REPORT_CLOSE_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    master.up()
    try:
        yield Setup(master, trial_id, job_dir)
    finally:
        master.down()
        app.config["HPCDET_ENGINE"].dispose()


def _trial(app: Any) -> tuple[int, int]:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        exp = Experiment(name="e2e", owner="o", original_config="", context=b"",
                         config={"searcher": {"name": "single", "metric": "loss"}},
                         searcher_name="single")
        session.add(exp)
        transition(session, exp, State.ACTIVE, cause="test")
        trial = Trial(experiment_id=exp.id, hparams={}, seed=0, token=hash_token(TOKEN))
        session.add(trial)
        transition(session, trial, State.QUEUED, cause="test")
        transition(session, trial, State.RUNNING, cause="test")
        session.commit()
        return trial.id, exp.id


def _train(core: hpcdet.core.Context, steps: range, *, tag: float = 0.0) -> None:
    """Report every step; validate and checkpoint every 5th."""
    for step in steps:
        core.train.report_training_metrics(step, {"loss": 1.0 / step + tag})
        if step % 5 == 0:
            core.train.report_validation_metrics(step, {"loss": 2.0 / step + tag})
            with core.checkpoint.store_path({"steps_completed": step}) as (path, _uuid):
                (path / "w").write_text(str(step))


def test_a_master_that_restarts_mid_way_gets_every_report_once(setup: Setup) -> None:
    with hpcdet.core.init() as core:
        _train(core, range(1, 8))
        setup.master.down()  # killed: connections refused
        _train(core, range(8, 16))  # checkpoints at 10 and 15 wait in the stream
        setup.master.lose_answers = 2  # back, but the first two answers get lost
        setup.master.up()
        _train(core, range(16, 21))
    training = setup.visible("training")
    assert [s for s, _ in training] == list(range(1, 21))
    assert [m["loss"] for _, m in training] == [pytest.approx(1.0 / s) for s in range(1, 21)]
    assert [s for s, _ in setup.visible("validation")] == [5, 10, 15, 20]
    assert setup.count(Metric) == 24
    assert setup.count(SearcherEvent) == 4
    assert setup.count(Checkpoint) == 4
    trial = setup.trial()
    assert trial.steps_completed == 20
    assert trial.latest_validation["steps_completed"] == 20
    with setup.sessions() as session:
        latest = session.get_one(Checkpoint, trial.latest_checkpoint)
        assert (latest.steps_completed, latest.validation_metrics) == (20, {"loss": 0.1})
    assert setup.master.lose_answers == 0


def test_reports_left_when_the_master_stays_down_are_collected_from_the_spool(
        setup: Setup, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HPCDET_REPORT_CLOSE_TIMEOUT", "0.5")
    with hpcdet.core.init() as core:
        _train(core, range(1, 4))
        core.train.flush()
        setup.master.down()
        _train(core, range(4, 11))
    assert "for the master to collect" in capsys.readouterr().err
    spool = setup.job_dir / "spool" / "r1.q0.k0"
    assert list(spool.glob("seg-*.jsonl"))
    assert setup.count(Metric) == 3  # the rest never reached it
    applied = ingest_spooled_reports(setup.sessions, None, setup.trial_id, str(setup.job_dir),
                                     files=LOCAL)
    assert applied == 7 + 2 + 2  # training 4-10, validations and checkpoints at 5 and 10
    assert ingest_spooled_reports(setup.sessions, None, setup.trial_id,
                                  str(setup.job_dir), files=LOCAL) == 0
    assert [s for s, _ in setup.visible("training")] == list(range(1, 11))
    assert setup.count(SearcherEvent) == 2
    assert setup.count(Checkpoint) == 2
    assert list(spool.iterdir()) == [spool / "stream.json"]


def test_a_requeued_execution_rolls_back_and_the_old_one_is_stale(
        setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    with hpcdet.core.init() as core:
        _train(core, range(1, 9))  # checkpoint at 5; steps 6-8 will be redone
    uuid = setup.trial().latest_checkpoint
    info = json.loads((setup.job_dir / "trial.json").read_text())
    (setup.job_dir / "trial.json").write_text(json.dumps({**info, "latest_checkpoint": uuid}))
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")  # Slurm requeued the job
    with hpcdet.core.init() as core:
        assert core.info.latest_checkpoint == uuid
        _train(core, range(6, 11), tag=100.0)
    training = setup.visible("training")
    assert [s for s, _ in training] == list(range(1, 11))
    assert all(m["loss"] > 100 for s, m in training if s > 5)  # the requeue's values
    assert [s for s, _ in setup.visible("validation")] == [5, 10]
    assert setup.count(Metric, archived=True) == 3  # steps 6-8 of requeue 0
    monkeypatch.setenv("SLURM_RESTART_COUNT", "0")  # the old execution, still running
    with pytest.raises(MasterError, match="stale"):
        with hpcdet.core.init() as core:
            core.train.report_training_metrics(9, {"loss": 9.0})
    assert setup.count(Metric, archived=False) == 10 + 2
