"""metrics_retention and ``det-master vacuum-metrics`` (SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from sqlalchemy import insert, select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.errors import ConfigError
from hpcdet.expconf import validate
from hpcdet.master.db import make_engine, make_session_factory, session_scope
from hpcdet.master.models import Experiment, Metric, Trial
from hpcdet.master.reports.metrics_retention import vacuum_metrics
from hpcdet.master.serve import main
from hpcdet.master.settings.core import load_settings
from hpcdet.master.settings.retention import MetricsRetention

NOW = dt.datetime(2026, 11, 26, tzinfo=dt.timezone.utc)
OLD = NOW - dt.timedelta(days=40)
STEPS = 30  # old steps 1..30, then two recent steps 31 and 32
POLICY = MetricsRetention(training_days=30, action="downsample", keep_every=10)


@pytest.fixture
def factory(migrated_db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(migrated_db_url)
    yield make_session_factory(engine)
    engine.dispose()


def add_experiment(factory: sessionmaker[Session], override: dict[str, Any] | None = None,
                   latest_old: bool = False) -> int:
    """One experiment, one trial: old training steps 1..STEPS of loss and batches, an old
    validation every 10 steps, a profiling row, and (unless ``latest_old``) two recent steps."""
    config: dict[str, Any] = {"searcher": {"metric": "validation_loss"}}
    if override is not None:
        config["metrics_retention"] = override
    with session_scope(factory) as session:
        exp = Experiment(name="e", owner="u", state="COMPLETED", config=config,
                         original_config="", context=b"", searcher_name="random")
        session.add(exp)
        session.flush()
        trial = Trial(experiment_id=exp.id, state="COMPLETED", hparams={}, seed=1, token="t")
        session.add(trial)
        session.flush()
        rows = [{"trial_id": trial.id, "group": "training", "steps_completed": step,
                 "name": name, "value": float(step), "reported_at": OLD}
                for step in range(1, STEPS + 1) for name in ("loss", "batches")]
        rows += [{"trial_id": trial.id, "group": "validation", "steps_completed": step,
                  "name": "validation_loss", "value": 1.0, "reported_at": OLD}
                 for step in range(5, STEPS + 1, 5)]
        rows.append({"trial_id": trial.id, "group": "profiling", "steps_completed": 3,
                     "name": "gpu", "value": 1.0, "reported_at": OLD})
        if not latest_old:
            rows += [{"trial_id": trial.id, "group": "training", "steps_completed": step,
                      "name": "loss", "value": 1.0, "reported_at": NOW}
                     for step in (STEPS + 1, STEPS + 2)]
        session.execute(insert(Metric), rows)
        return exp.id


def left(factory: sessionmaker[Session], exp_id: int, group: str = "training") -> set[int]:
    with session_scope(factory) as session:
        return set(session.scalars(
            select(Metric.steps_completed).join(Trial, Trial.id == Metric.trial_id)
            .where(Trial.experiment_id == exp_id, Metric.group == group)))


def test_downsampling_keeps_every_kth_old_step_recent_steps_and_other_groups(
        factory: sessionmaker[Session]) -> None:
    exp_id = add_experiment(factory)
    validations, profiling = left(factory, exp_id, "validation"), left(factory, exp_id,
                                                                        "profiling")
    dry = vacuum_metrics(factory, POLICY, NOW, dry_run=True)
    assert [(r.experiment_id, r.rows) for r in dry] == [(exp_id, 2 * 27)]
    assert len(left(factory, exp_id)) == STEPS + 2  # a dry run deletes nothing

    (done,) = vacuum_metrics(factory, POLICY, NOW, dry_run=False, batch_size=7)
    assert done.rows == 2 * 27 and done.trials == 1
    assert left(factory, exp_id) == {10, 20, 30, STEPS + 1, STEPS + 2}
    assert left(factory, exp_id, "validation") == validations
    assert left(factory, exp_id, "profiling") == profiling
    # Idempotent: a second run finds nothing more.
    assert vacuum_metrics(factory, POLICY, NOW, dry_run=False)[0].rows == 0


def test_drop_keeps_the_latest_training_step_even_when_old(
        factory: sessionmaker[Session]) -> None:
    exp_id = add_experiment(factory, latest_old=True)
    drop = MetricsRetention(training_days=30, action="drop")
    (done,) = vacuum_metrics(factory, drop, NOW, dry_run=False)
    assert done.rows == 2 * (STEPS - 1)
    assert left(factory, exp_id) == {STEPS}
    assert len(left(factory, exp_id, "validation")) == STEPS // 5


def test_an_experiments_override_wins_over_the_master(factory: sessionmaker[Session]) -> None:
    kept = add_experiment(factory, {"action": "keep"})
    sparser = add_experiment(factory, {"keep_every": 15})
    younger = add_experiment(factory, {"training_days": 60})
    results = {r.experiment_id: r for r in vacuum_metrics(factory, POLICY, NOW,
                                                          dry_run=False)}
    assert results[kept].rows == 0 and len(left(factory, kept)) == STEPS + 2
    assert left(factory, sparser) == {15, 30, STEPS + 1, STEPS + 2}
    assert results[younger].rows == 0
    assert results[sparser].policy.describe() == "every 15th step after 30 days"


def test_without_training_days_nothing_is_thinned(factory: sessionmaker[Session]) -> None:
    exp_id = add_experiment(factory)
    assert vacuum_metrics(factory, MetricsRetention(), NOW, dry_run=False)[0].rows == 0
    assert len(left(factory, exp_id)) == STEPS + 2


def test_master_yaml_section_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text(yaml.safe_dump({"metrics_retention": {
        "training_days": 90, "action": "drop", "keep_every": 5}}))
    assert load_settings(path, environ={}).metrics_retention == MetricsRetention(90, "drop", 5)
    assert load_settings(None, environ={}).metrics_retention.thins is False
    path.write_text(yaml.safe_dump({"metrics_retention": {
        "training_days": -1, "action": "shred", "every": 3}}))
    with pytest.raises(ConfigError) as raised:
        load_settings(path, environ={})
    text = str(raised.value)
    for key in ("metrics_retention.training_days", "metrics_retention.action",
                "metrics_retention.every: unknown key"):
        assert key in text


def test_the_experiment_config_field_is_validated() -> None:
    assert validate({"metrics_retention": {"training_days": 7, "action": "drop"}}) == []
    errors = validate({"metrics_retention": {"action": "shred", "keep_every": 0}})
    assert any("metrics_retention.action" in e for e in errors)
    assert any("metrics_retention.keep_every" in e for e in errors)


def test_det_master_vacuum_metrics(factory: sessionmaker[Session], db_url: str,
                                   tmp_path: Path) -> None:
    exp_id = add_experiment(factory)
    other = add_experiment(factory)
    path = tmp_path / "master.yaml"
    # Rows are 40 days old (dated from NOW, which may be in the past: they are older).
    age = (dt.datetime.now(dt.timezone.utc) - OLD).days
    path.write_text(yaml.safe_dump({"db": {"url": db_url}, "metrics_retention": {
        "training_days": age - 10, "keep_every": 10}}))
    dry = CliRunner().invoke(main, ["--config", str(path), "vacuum-metrics", "--dry-run",
                                    "--experiment", str(exp_id), "--json"])
    assert dry.exit_code == 0, dry.output
    answer = json.loads(dry.stdout)
    assert answer["dry_run"] is True and answer["rows"] == 2 * 27
    assert len(left(factory, exp_id)) == STEPS + 2

    run = CliRunner().invoke(main, ["--config", str(path), "vacuum-metrics"])
    assert run.exit_code == 0, run.output
    assert "108 training rows deleted" in run.stdout
    assert f"experiment {exp_id}: deleted 54 training rows" in run.stderr
    assert left(factory, exp_id) == left(factory, other) == {10, 20, 30, STEPS + 1, STEPS + 2}

    missing = CliRunner().invoke(main, ["--config", str(path), "vacuum-metrics",
                                        "--experiment", "999"])
    assert missing.exit_code != 0 and "no such experiment: 999" in missing.output
