"""``GET /metrics``: who may scrape it, its format, values that move, and the docs' names.

Real parts throughout: the Flask app on a migrated database (SQLite and PostgreSQL), the
dispatcher's real command runner (its executor a FAKE that runs nothing), a reconciler's
real ``run_forever`` loop for one cycle, and prometheus_client's multiprocess mode in real
forked processes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error, queued_trial
from prometheus_client.parser import text_string_to_metric_families

from hpcdet.dispatcher.commands import CommandRunner, Completed
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.errors import ConfigError, SchedulerError
from hpcdet.master.app import create_app
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.settings.core import MasterSettings, load_settings
from hpcdet.master.settings.monitoring import MetricsSettings

REPO = Path(__file__).resolve().parents[3]
ADMIN = {"X-Hpcdet-User": "alice"}
TOKEN = "s3cret-scrape-token"
# Access rules and names do not depend on the database: SQLite only. The gauges' queries
# (test_values_move) run on both.
SQLITE_ONLY = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def _app(settings: MasterSettings, metrics: MetricsSettings) -> Iterator[FlaskClient]:
    app = create_app(replace(settings, require_user=True, admins=("alice",), metrics=metrics),
                     backend=SlurmBackend())
    app.config["TESTING"] = True
    yield app.test_client()
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def admins_client(settings: MasterSettings) -> Iterator[FlaskClient]:
    """A master that tells users apart (alice is its admin); metrics for admins."""
    yield from _app(settings, MetricsSettings())


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "scrape-token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def token_client(settings: MasterSettings, token_file: Path) -> Iterator[FlaskClient]:
    """Metrics for the scrape token only."""
    yield from _app(settings, MetricsSettings(allow=("token",), token_file=str(token_file)))


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``{(sample name, sorted labels): value}`` of a text-format answer."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def scrape(client: FlaskClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics", headers=ADMIN)
    assert response.status_code == 200, response.get_data(as_text=True)
    return samples(response.get_data(as_text=True))


@SQLITE_ONLY
def test_an_admin_scrapes_the_text_format_others_are_refused(
        admins_client: FlaskClient) -> None:
    response = admins_client.get("/metrics", headers=ADMIN)
    assert response.status_code == 200
    assert response.content_type.startswith("text/plain; version=0.0.4")
    names = {family.name for family in
             text_string_to_metric_families(response.get_data(as_text=True))}
    assert {"hpcdet_experiments", "hpcdet_trials", "hpcdet_jobs", "hpcdet_queue_depth",
            "hpcdet_reconciler_cycles", "hpcdet_scheduler_commands"} <= names
    assert "bob" in assert_error(admins_client.get("/metrics", headers={"X-Hpcdet-User": "bob"}),
                                 403, "forbidden")
    assert_error(admins_client.get("/metrics"), 401, "unauthorized")


@SQLITE_ONLY
def test_the_scrape_token_and_only_it(token_client: FlaskClient, token_file: Path) -> None:
    ok = token_client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200
    wrong = token_client.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert "metrics.token_file" in assert_error(wrong, 401, "unauthorized")
    # An admin's name is not enough when only the token is allowed.
    assert_error(token_client.get("/metrics", headers=ADMIN), 401, "unauthorized")
    token_file.chmod(0o640)
    message = assert_error(token_client.get("/metrics", headers={
        "Authorization": f"Bearer {TOKEN}"}), 503, "metrics_token_file")
    assert str(token_file) in message and "chmod 600" in message


@SQLITE_ONLY
def test_metrics_switched_off_are_not_found(settings: MasterSettings) -> None:
    for client in _app(settings, MetricsSettings(enabled=False)):
        assert "metrics.enabled" in assert_error(client.get("/metrics", headers=ADMIN), 404,
                                                 "not_found")


@pytest.mark.parametrize("section, error", [
    ({"allow": ["token"]}, "metrics.token_file: required with allow: token"),
    ({"allow": ["everyone"]}, "metrics.allow: each must be one of admins, token"),
    ({"token_file": "relative"}, "metrics.token_file: must be an absolute path"),
    ({"public": True}, "metrics.public: unknown key"),
])
def test_bad_metrics_settings_are_refused(tmp_path: Path, section: dict[str, Any],
                                          error: str) -> None:
    path = tmp_path / "master.yaml"
    path.write_text(json.dumps({"metrics": section}))
    with pytest.raises(ConfigError) as raised:
        load_settings(path, environ={})
    assert any(error in line for line in raised.value.errors), raised.value.errors


def _value(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
           **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


class _OneCycle:
    """A stop event that lets ``run_forever`` run exactly one cycle."""

    def __init__(self) -> None:
        self.checks = 0

    def is_set(self) -> bool:
        self.checks += 1
        return self.checks > 1

    def wait(self, timeout: float | None = None) -> bool:
        return True


def _waiting_job(app: Flask, trial_id: int) -> None:
    """A job the reconciler recorded its intent to submit (no scheduler id yet)."""
    from hpcdet.master.db import make_session_factory
    from hpcdet.master.models import Job

    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        session.add(Job(trial_id=trial_id, run_id=1, name="t"))
        session.commit()


def test_values_move(admins_client: FlaskClient, app: Flask, reconciler: Reconciler,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    before = scrape(admins_client)
    trial_id = queued_trial(app, "tok")
    _waiting_job(app, trial_id)

    def failing_cycle() -> None:
        raise SchedulerError(("squeue",), 1, "", "slurm_load_jobs error")

    # run_forever's own loop for one cycle, its scheduler work replaced by a failure.
    monkeypatch.setattr(reconciler.cluster_view, "maybe_refresh", lambda: None)
    monkeypatch.setattr(reconciler, "cycle", failing_cycle)
    reconciler.run_forever(_OneCycle())  # type: ignore[arg-type]
    runner = CommandRunner(executor=lambda argv, timeout, stdin: Completed(
        0 if argv[0].endswith("sbatch") else 1, "", ""))
    runner(["/usr/bin/sbatch", "--parsable"])
    with pytest.raises(SchedulerError):
        runner(["squeue"])
    reported = admins_client.post(f"/api/v1/trials/{trial_id}/metrics", headers={
        "Authorization": "Bearer tok"}, json={"group": "training", "reports": [
            {"steps_completed": 1, "metrics": {"loss": 1.0, "acc": 0.5}}]})
    assert reported.status_code == 200, reported.get_json()
    after = scrape(admins_client)

    def moved(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert moved("hpcdet_experiments", state="ACTIVE") == 1
    assert moved("hpcdet_trials", state="QUEUED") == 1
    assert moved("hpcdet_jobs", state="SUBMITTING", pool="default") == 1
    assert moved("hpcdet_reconciler_cycles_total") == 1
    assert moved("hpcdet_reconciler_cycle_failures_total", reason="scheduler") == 1
    assert moved("hpcdet_reconciler_cycle_duration_seconds_count") == 1
    assert moved("hpcdet_scheduler_commands_total", command="sbatch", outcome="ok") == 1
    assert moved("hpcdet_scheduler_commands_total", command="squeue", outcome="error") == 1
    assert moved("hpcdet_ingest_metric_rows_total") == 2
    assert moved("hpcdet_ingest_batches_total", outcome="ok") == 1
    assert moved("hpcdet_queue_depth", pool="default") == 1
    assert _value(after, "hpcdet_queue_oldest_wait_seconds", pool="default") >= 0
    assert _value(after, "hpcdet_db_pool_connections_open") >= 1


_FORKED = """
import os, sys
from hpcdet.master.monitoring import instruments, multiproc
from hpcdet.master.monitoring.exposition import _process_registry
from prometheus_client import generate_latest
instruments.observe_cycle(0.5, None)
pid = os.fork()
if pid == 0:
    instruments.observe_cycle(0.5, "scheduler")
    instruments.DB_IN_USE.inc()
    os._exit(0)
os.waitpid(pid, 0)
instruments.DB_IN_USE.inc()
sys.stdout.write(generate_latest(_process_registry()).decode())
multiproc.process_exited(pid)
sys.stdout.write("----\\n" + generate_latest(_process_registry()).decode())
"""


def test_processes_counts_are_summed(tmp_path: Path) -> None:
    """Two processes count; one answer sums them; an ended process's connections drop out."""
    from hpcdet.master.monitoring import multiproc

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(multiproc.ENV, None)
    ended = subprocess.Popen(["true"])
    ended.wait()
    base = tmp_path / multiproc.DIR_NAME
    stale = base / str(ended.pid) / "counter_1.db"  # a master that ended
    running = base / str(os.getpid()) / "counter_2.db"  # one still running
    for path in (stale, running):
        path.parent.mkdir(parents=True)
        path.write_bytes(b"counts")
    code = f"from hpcdet.master.monitoring import multiproc; multiproc.prepare({str(tmp_path)!r})\n"
    out = subprocess.run([sys.executable, "-c", code + _FORKED], env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    assert not stale.parent.exists() and running.exists()
    both, after = (samples(part) for part in out.split("----\n"))
    assert _value(both, "hpcdet_reconciler_cycles_total") == 2
    assert _value(both, "hpcdet_reconciler_cycle_failures_total", reason="scheduler") == 1
    assert _value(both, "hpcdet_db_pool_connections_in_use") == 2
    assert _value(after, "hpcdet_db_pool_connections_in_use") == 1
    assert _value(after, "hpcdet_reconciler_cycles_total") == 2
    assert oct(base.stat().st_mode & 0o777) == "0o700"


_NAME = re.compile(r"\bhpcdet_[a-z0-9_]+")
_SUFFIXES = ("_bucket", "_sum", "_count", "_created")


@SQLITE_ONLY
def test_every_metric_the_docs_and_dashboard_name_exists(admins_client: FlaskClient) -> None:
    text = admins_client.get("/metrics", headers=ADMIN).get_data(as_text=True)
    exposed = set(re.findall(r"^# (?:HELP|TYPE) (\S+)", text, re.M))
    exposed |= {name for name, _ in samples(text)}
    doc = (REPO / "docs/admin/metrics.md").read_text()
    dashboard = json.loads((REPO / "docs/admin/grafana-dashboard.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", ())]
    used = set(_NAME.findall(doc)) | {n for expr in exprs for n in _NAME.findall(expr)}
    assert len(exprs) >= 8
    missing = {name for name in used if name not in exposed
               and not any(name.endswith(s) and name[:-len(s)] in exposed for s in _SUFFIXES)}
    assert not missing, f"named in docs/admin but not in a real /metrics answer: {missing}"
    # ... and every family the master exposes is documented.
    families = {name.removesuffix("_total") for name in
                re.findall(r"^# TYPE (hpcdet_\S+)", text, re.M)}
    assert families <= {name.removesuffix("_total") for name in _NAME.findall(doc)}
