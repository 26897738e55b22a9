"""Reports stored exactly once: report streams, rollback, stale runs, idempotent checkpoints,
and spooled reports collected from the job directory. SQLite and PostgreSQL (FOR UPDATE).
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import queued_trial
from sqlalchemy import func, select

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.transport.local import LOCAL
from hpcdet.master.app import create_app
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import (
    Checkpoint,
    Metric,
    ReportStream,
    SearcherEvent,
    Trial,
)
from hpcdet.master.reports.ingest import MetricWriter, Report, ReportBatch, Stream, StreamKey
from hpcdet.master.reports.spool_ingest import ingest_spooled_reports
from hpcdet.master.settings.core import MasterSettings

TOKEN = "tok-dedup"
CONFIG = {"searcher": {"name": "single", "metric": "loss", "smaller_is_better": True}}
# Checkpoint ids are UUIDs (they name the checkpoint directories).
STALE = "51a1e000-0000-4000-8000-000000000001"
FIRST = "00000000-0000-4000-8000-000000000001"
SECOND = "00000000-0000-4000-8000-000000000002"
SPOOLED = "5b001ed0-0000-4000-8000-000000000000"
AT_TWO = "a7700000-0000-4000-8000-000000000002"



def _trial(app: Flask, token: str = TOKEN) -> int:
    return queued_trial(app, token, CONFIG)


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _stream(run_id: int = 1, requeue: int = 0, rank: int = 0,
            resumed: int = 0) -> dict[str, Any]:
    return {"stream": {"run_id": run_id, "requeue": requeue, "rank": rank},
            "resumed_from": {"uuid": None, "steps_completed": resumed}}


def _metrics(group: str, steps: list[int], seq: int, **stream: Any) -> dict[str, Any]:
    reports = [{"steps_completed": s, "metrics": {"loss": 1.0 / s, "acc": s / 100}}
               for s in steps]
    return {"group": group, "reports": reports, "seq": seq, **_stream(**stream)}


def _post(client: FlaskClient, trial_id: int, body: dict[str, Any],
          route: str = "metrics") -> Any:
    return client.post(f"/api/v1/trials/{trial_id}/{route}", json=body, headers=AUTH)


def _rows(app: Flask, trial_id: int, *, archived: bool | None = None) -> list[tuple[Any, ...]]:
    query = select(Metric.group, Metric.steps_completed, Metric.name, Metric.run_id,
                   Metric.requeue).where(Metric.trial_id == trial_id)
    if archived is not None:
        query = query.where(Metric.archived.is_(archived))
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return sorted(tuple(r) for r in session.execute(query))


def _count(app: Flask, model: Any, trial_id: int) -> int:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return int(session.scalar(select(func.count()).select_from(model).where(
            model.trial_id == trial_id)) or 0)


def _trial_row(app: Flask, trial_id: int) -> Trial:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return session.get_one(Trial, trial_id)


def _visible_steps(client: FlaskClient, trial_id: int, group: str) -> list[int]:
    got = client.get(f"/api/v1/trials/{trial_id}/metrics?group={group}").get_json()
    return [m["steps_completed"] for m in got["metrics"]]


# ---- streams over HTTP --------------------------------------------------------------------


def test_a_resent_batch_is_stored_once(app: Flask, client: FlaskClient) -> None:
    trial_id = _trial(app)
    body = _metrics("training", [1, 2, 3], seq=0)
    first, again = _post(client, trial_id, body), _post(client, trial_id, body)
    assert first.get_json() == {"stored": 6, "duplicates": 0}
    assert again.get_json() == {"stored": 0, "duplicates": 3}
    # Overlapping: seq 2 (step 3) again, seq 3 and 4 new.
    assert _post(client, trial_id, _metrics("training", [3, 4, 5], seq=2)).get_json() == {
        "stored": 4, "duplicates": 1}
    assert [s for _, s, n, *_ in _rows(app, trial_id) if n == "loss"] == [1, 2, 3, 4, 5]
    assert _rows(app, trial_id)[0][3:] == (1, 0)  # the execution that reported it
    assert _trial_row(app, trial_id).steps_completed == 5


def test_requests_without_a_stream_are_stored_as_before(app: Flask,
                                                        client: FlaskClient) -> None:
    trial_id = _trial(app)
    body = {"group": "training", "reports": [{"steps_completed": 1, "metrics": {"loss": 1}}]}
    assert _post(client, trial_id, body).get_json() == {"stored": 1}
    assert _post(client, trial_id, body).get_json() == {"stored": 1}  # no dedup: old client
    assert _rows(app, trial_id) == [("training", 1, "loss", 0, 0)] * 2


@pytest.mark.parametrize("extra", [{"seq": 0}, _stream(), {"seq": -1, **_stream()},
                                   {"seq": 0, "stream": {"run_id": 1, "requeue": 0}},
                                   {"seq": 0, **_stream(), "resumed_from": []}])
def test_stream_and_seq_come_together_and_are_checked(app: Flask, client: FlaskClient,
                                                      extra: dict[str, Any]) -> None:
    trial_id = _trial(app)
    body = {"group": "training", "reports": [{"steps_completed": 1, "metrics": {"loss": 1}}],
            **extra}
    response = _post(client, trial_id, body)
    assert response.status_code == 400, response.get_json()
    assert _rows(app, trial_id) == []


@pytest.fixture
def second_app(settings: MasterSettings) -> Iterator[Flask]:
    """Another master process (gunicorn worker) on the same database: its own writer."""
    other = create_app(settings, backend=SlurmBackend())
    other.config["TESTING"] = True
    yield other
    other.config["HPCDET_ENGINE"].dispose()


def test_concurrent_duplicates_in_two_processes_are_stored_once(app: Flask,
                                                                second_app: Flask) -> None:
    trial_id = _trial(app)
    rounds, senders = 8, 4
    barrier = threading.Barrier(senders)
    errors: list[str] = []

    def send(which: int) -> None:
        client = (app if which % 2 else second_app).test_client()
        for round_no in range(rounds):
            body = _metrics("validation" if round_no % 3 == 2 else "training",
                            [round_no * 10 + i + 1 for i in range(5)], seq=round_no * 5)
            barrier.wait()
            response = _post(client, trial_id, body)
            if response.status_code != 200:
                errors.append(str(response.get_json()))

    threads = [threading.Thread(target=send, args=(i,)) for i in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    steps = [s for _, s, n, *_ in _rows(app, trial_id) if n == "loss"]
    assert sorted(steps) == sorted({r * 10 + i + 1 for r in range(rounds) for i in range(5)})
    validations = sum(1 for r in range(rounds) if r % 3 == 2) * 5
    assert _count(app, SearcherEvent, trial_id) == validations
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        assert session.scalars(select(ReportStream.last_seq)).all() == [rounds * 5 - 1]


def test_a_duplicate_validation_queues_one_searcher_event(app: Flask,
                                                          client: FlaskClient) -> None:
    trial_id = _trial(app)
    body = _metrics("validation", [10], seq=0)
    for _ in range(3):
        assert _post(client, trial_id, body).status_code == 200
    assert _count(app, SearcherEvent, trial_id) == 1
    trial = _trial_row(app, trial_id)
    assert trial.latest_validation == {"steps_completed": 10,
                                       "metrics": {"loss": 0.1, "acc": 0.1}}
    assert trial.best_validation == trial.latest_validation


# ---- executions: rollback and stale runs --------------------------------------------------


def _run_one_then_two(app: Flask, client: FlaskClient, trial_id: int) -> None:
    """Run 1 reports steps 1-6 (validations at 3 and 6); run 2 resumes from step 3."""
    assert _post(client, trial_id, _metrics("training", [1, 2, 3], seq=0)).status_code == 200
    assert _post(client, trial_id, _metrics("validation", [3], seq=3)).status_code == 200
    assert _post(client, trial_id, _metrics("training", [4, 5, 6], seq=4)).status_code == 200
    six = {"group": "validation", "seq": 7, **_stream(),
           "reports": [{"steps_completed": 6, "metrics": {"loss": 0.01}}]}  # the best so far
    assert _post(client, trial_id, six).status_code == 200
    assert _trial_row(app, trial_id).best_validation["steps_completed"] == 6
    assert _post(client, trial_id, _metrics("training", [4], seq=0, run_id=2,
                                            resumed=3)).status_code == 200


def test_a_new_run_archives_what_earlier_runs_reported_after_its_checkpoint(
        app: Flask, client: FlaskClient) -> None:
    trial_id = _trial(app)
    _run_one_then_two(app, client, trial_id)
    archived = {(g, s, run) for g, s, _, run, _ in _rows(app, trial_id, archived=True)}
    assert archived == {("training", 4, 1), ("training", 5, 1), ("training", 6, 1),
                        ("validation", 6, 1)}
    assert _visible_steps(client, trial_id, "training") == [1, 2, 3, 4]
    assert _visible_steps(client, trial_id, "validation") == [3]
    four = client.get(f"/api/v1/trials/{trial_id}/metrics?group=training").get_json()
    assert four["metrics"][-1]["metrics"]["loss"] == 0.25
    trial = _trial_row(app, trial_id)  # recomputed from what is left
    assert trial.latest_validation["steps_completed"] == 3
    assert trial.best_validation["steps_completed"] == 3
    # Run 2 goes on: its rows stay; a later rank of run 2 rolls back nothing more.
    assert _post(client, trial_id, _metrics("training", [5, 6], seq=1, run_id=2,
                                            resumed=3)).status_code == 200
    assert _post(client, trial_id, _metrics("profiling", [6], seq=0, run_id=2, rank=1,
                                            resumed=3)).status_code == 200
    assert _visible_steps(client, trial_id, "training") == [1, 2, 3, 4, 5, 6]
    assert len(_rows(app, trial_id, archived=True)) == 7  # as before: nothing more


def test_a_stale_run_gets_409_and_nothing_is_stored(app: Flask, client: FlaskClient) -> None:
    trial_id = _trial(app)
    _run_one_then_two(app, client, trial_id)
    before = _rows(app, trial_id)
    response = _post(client, trial_id, _metrics("training", [7], seq=8))
    assert response.status_code == 409
    assert response.get_json()["error"]["code"] == "stale_run"
    ckpt = {"uuid": STALE, "steps_completed": 7, "seq": 9, **_stream()}
    assert _post(client, trial_id, ckpt, "checkpoints").status_code == 409
    assert _rows(app, trial_id) == before
    assert _count(app, Checkpoint, trial_id) == 0


def test_a_slurm_requeue_is_a_newer_execution_of_the_same_run(app: Flask,
                                                              client: FlaskClient) -> None:
    trial_id = _trial(app)
    assert _post(client, trial_id, _metrics("training", [1, 2], seq=0)).status_code == 200
    requeued = _metrics("training", [2], seq=0, requeue=1, resumed=1)
    assert _post(client, trial_id, requeued).status_code == 200
    assert [(s, q) for _, s, n, _, q in _rows(app, trial_id, archived=True)
            if n == "loss"] == [(2, 0)]
    stale = _post(client, trial_id, _metrics("training", [3], seq=2))
    assert stale.get_json()["error"]["code"] == "stale_run"


# ---- checkpoints --------------------------------------------------------------------------


def test_registering_a_checkpoint_again_is_idempotent(app: Flask, client: FlaskClient) -> None:
    trial_id, other_id = _trial(app), _trial(app, token="tok-other")
    assert _post(client, trial_id, _metrics("validation", [4], seq=0)).status_code == 200
    body = {"uuid": FIRST, "steps_completed": 4, "metadata": {"m": 1},
            "resources": {"w": 3}}
    created = _post(client, trial_id, body, "checkpoints")
    assert created.status_code == 201
    assert created.get_json()["checkpoint"]["validation_metrics"] == {"loss": 0.25,
                                                                       "acc": 0.04}
    again = _post(client, trial_id, {**body, "metadata": {"m": 2}}, "checkpoints")
    assert again.status_code == 200
    assert again.get_json()["checkpoint"]["metadata"] == {"m": 1}  # nothing changed
    streamed = {**body, "uuid": SECOND, "seq": 1, **_stream()}
    assert _post(client, trial_id, streamed, "checkpoints").status_code == 201
    assert _post(client, trial_id, streamed, "checkpoints").status_code == 200
    assert _trial_row(app, trial_id).latest_checkpoint == SECOND
    foreign = client.post(f"/api/v1/trials/{other_id}/checkpoints", json=body,
                          headers={"Authorization": "Bearer tok-other"})
    assert foreign.status_code == 409
    assert foreign.get_json()["error"]["code"] == "conflict"
    assert _count(app, Checkpoint, trial_id) == 2
    assert _count(app, Checkpoint, other_id) == 0


# ---- spooled reports ----------------------------------------------------------------------


def _spool(job_dir: Path, lines: list[dict[str, Any]], *, run_id: int = 1, requeue: int = 0,
           rank: int = 0, resumed: int = 0, name: str | None = None) -> Path:
    """A reporter's spool directory as hpcdet/core/_spool.py writes it."""
    where = job_dir / "spool" / f"r{run_id}.q{requeue}.k{rank}"
    where.mkdir(parents=True, exist_ok=True)
    meta = {"trial_id": 0, "run_id": run_id, "requeue": requeue, "rank": rank,
            "resumed_from": {"uuid": None, "steps_completed": resumed}}
    (where / "stream.json").write_text(json.dumps(meta))
    segment = where / (name or f"seg-{lines[0]['seq']:012d}.jsonl")
    segment.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return segment


def _lines(group: str, steps: list[int], seq: int) -> list[dict[str, Any]]:
    return [{"seq": seq + i, "group": group, "steps_completed": s,
             "metrics": {"loss": 1.0 / s, "acc": s / 100}} for i, s in enumerate(steps)]


def _ingest(app: Flask, trial_id: int, job_dir: Path, writer: MetricWriter | None = None) -> int:
    sessions = make_session_factory(app.config["HPCDET_ENGINE"])
    return ingest_spooled_reports(sessions, writer, trial_id, str(job_dir), files=LOCAL)


def test_spooled_reports_are_applied_once(app: Flask, client: FlaskClient,
                                          tmp_path: Path) -> None:
    trial_id = _trial(app)
    job_dir = tmp_path / "job"
    ckpt = {"uuid": SPOOLED, "steps_completed": 3, "metadata": {}, "resources": {}}
    lines = _lines("training", [1, 2, 3], 0) + _lines("validation", [3], 3)
    lines += [{"seq": 4, "group": "checkpoint", "checkpoint": ckpt}]
    segment = _spool(job_dir, lines)
    copy = segment.read_text()
    assert _ingest(app, trial_id, job_dir) == 5
    assert not segment.exists()
    assert (job_dir / "spool" / "r1.q0.k0" / "stream.json").exists()
    segment.write_text(copy)  # the same files again (e.g. a master killed before removing)
    assert _ingest(app, trial_id, job_dir, app.config["HPCDET_METRIC_WRITER"]) == 0
    assert _ingest(app, trial_id, job_dir) == 0  # nothing left
    assert _visible_steps(client, trial_id, "training") == [1, 2, 3]
    assert _count(app, Metric, trial_id) == 8
    assert _count(app, SearcherEvent, trial_id) == 1
    trial = _trial_row(app, trial_id)
    assert trial.latest_checkpoint == SPOOLED
    assert trial.latest_validation["steps_completed"] == 3
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        stored = session.get_one(Checkpoint, SPOOLED)
        assert stored.validation_metrics == {"loss": pytest.approx(1 / 3), "acc": 0.03}


def test_a_report_both_delivered_and_spooled_is_stored_once(app: Flask, client: FlaskClient,
                                                            tmp_path: Path) -> None:
    trial_id = _trial(app)
    assert _post(client, trial_id, _metrics("training", [1, 2], seq=0)).status_code == 200
    assert _post(client, trial_id, _metrics("validation", [2], seq=2)).status_code == 200
    # close() spooled from seq 2 on (the validation's answer was lost), then went on.
    _spool(tmp_path, _lines("validation", [2], 2) + _lines("training", [3, 4], 3))
    # A torn last line (the node died mid-write) is skipped, the rest applied.
    segment = _spool(tmp_path, _lines("training", [5], 5), name="seg-000000000005.jsonl")
    segment.write_text(segment.read_text() + '{"seq": 6, "group": "train')
    assert _ingest(app, trial_id, tmp_path) == 3
    assert _visible_steps(client, trial_id, "training") == [1, 2, 3, 4, 5]
    assert _visible_steps(client, trial_id, "validation") == [2]
    assert _count(app, SearcherEvent, trial_id) == 1


def test_spooled_streams_apply_oldest_execution_first(app: Flask, client: FlaskClient,
                                                      tmp_path: Path) -> None:
    """Both executions spooled everything: the newer one's rollback comes after the older."""
    trial_id = _trial(app)
    _spool(tmp_path, _lines("training", [1, 2, 3, 4], 0))
    _spool(tmp_path, _lines("training", [3, 4, 5], 0), requeue=1, resumed=2)
    assert _ingest(app, trial_id, tmp_path) == 7
    assert _visible_steps(client, trial_id, "training") == [1, 2, 3, 4, 5]
    assert {(s, q) for _, s, _, _, q in _rows(app, trial_id, archived=True)} == {(3, 0), (4, 0)}


def test_a_superseded_execution_s_spool_is_archived_past_the_newer_start(
        app: Flask, client: FlaskClient, tmp_path: Path) -> None:
    trial_id = _trial(app)
    # Requeue 1 resumed from step 2 and reported over HTTP; requeue 0's end was spooled.
    assert _post(client, trial_id, _metrics("training", [3], seq=0, requeue=1,
                                            resumed=2)).status_code == 200
    _spool(tmp_path, [], requeue=1, resumed=2, name="seg-000000000000.jsonl")
    ckpt = {"uuid": AT_TWO, "steps_completed": 2}
    _spool(tmp_path, _lines("training", [1, 2], 0) + _lines("validation", [2], 2)
           + [{"seq": 3, "group": "checkpoint", "checkpoint": ckpt}]
           + _lines("validation", [3], 4))
    assert _ingest(app, trial_id, tmp_path) == 5
    assert _visible_steps(client, trial_id, "training") == [1, 2, 3]
    assert _visible_steps(client, trial_id, "validation") == [2]
    assert [(s, q) for _, s, n, _, q in _rows(app, trial_id, archived=True)
            if n == "loss"] == [(3, 0)]
    assert _count(app, SearcherEvent, trial_id) == 1  # the archived validation queued none
    trial = _trial_row(app, trial_id)
    assert trial.latest_checkpoint == AT_TWO
    assert trial.latest_validation is None  # a stale execution does not move it


def test_the_writer_applies_a_batch_in_this_thread(app: Flask) -> None:
    trial_id = _trial(app)
    writer = MetricWriter(app.config["HPCDET_ENGINE"])
    stream = Stream(StreamKey(trial_id, 1, 0, 0))
    batch = ReportBatch(trial_id, [Report("training", 1, {"loss": 1.0}, seq=0),
                                   Report("training", 2, {"loss": 0.5}, seq=1)], stream)
    applied = writer.apply_now(batch)
    assert (len(applied.stored), applied.duplicates, applied.rows) == (2, 0, 2)
    again = writer.apply_now(batch)
    assert (again.stored, again.duplicates, again.rows) == ([], 2, 0)


def test_ingest_without_a_spool_directory_does_nothing(app: Flask, tmp_path: Path) -> None:
    trial_id = _trial(app)
    assert _ingest(app, trial_id, tmp_path / "nowhere") == 0
    shutil.rmtree(tmp_path, ignore_errors=True)
