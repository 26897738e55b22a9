"""Determined's daily ``det`` commands against a real app (in process, httpx.WSGITransport),
the scripted scheduler and a real database: what a user types, what they see.
"""

from __future__ import annotations

import csv
import io
import json
import tarfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from lifecycle_helpers import end_job, session_of, start, trial_of
from master_helpers import CONFIG, assert_error, create, job_token
from sqlalchemy import select

from hpcdet.cli.main import CliState, cli
from hpcdet.dispatcher import JobPhase
from hpcdet.master.app import create_app
from hpcdet.master.models import Checkpoint, Experiment, Trial
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.settings.core import MasterSettings

Det = Callable[..., Result]


def _runner(app: Flask) -> Det:
    transport = httpx.WSGITransport(app=app)

    def invoke(*args: str, user: str = "alice", stdin: str | None = None) -> Result:
        state = CliState(transport=transport, poll_interval=0)
        return CliRunner().invoke(cli, ["-m", "http://localhost:8080", "-u", user, *args],
                                  obj=state, prog_name="det", input=stdin)

    return invoke


@pytest.fixture
def det(app: Flask) -> Det:
    return _runner(app)


def _ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return result.stdout


def _checkpoint(client: Any, app: Flask, trial_id: int, steps: int, loss: float) -> str:
    """A checkpoint directory, registered (with a validation) as the harness would."""
    import uuid as uuidlib

    with session_of(app) as session:
        trial = session.get_one(Trial, trial_id)
        root = Path(session.get_one(Experiment, trial.experiment_id)
                    .config["checkpoint_storage"]["host_path"])
        auth = {"Authorization": f"Bearer {job_token(trial)}"}
    client.post(f"/api/v1/trials/{trial_id}/metrics", headers=auth, json={
        "group": "validation",
        "reports": [{"steps_completed": steps, "metrics": {"validation_loss": loss}}]})
    uuid = str(uuidlib.uuid4())
    (root / uuid).mkdir(parents=True)
    (root / uuid / "model.pt").write_bytes(b"weights")
    response = client.post(f"/api/v1/trials/{trial_id}/checkpoints", headers=auth,
                           json={"uuid": uuid, "steps_completed": steps})
    assert response.status_code == 201
    return uuid


def _completed(client: Any, reconciler: Reconciler, fake: FakeSchedulerBackend,
               checkpoints: int = 1) -> tuple[int, int, list[str]]:
    exp_id, trial_id = start(client, reconciler, fake)
    uuids = [_checkpoint(client, client.application, trial_id, 10 * (i + 1), 1.0 / (i + 1))
             for i in range(checkpoints)]
    end_job(client.application, fake, reconciler, trial_id, JobPhase.COMPLETED)
    reconciler.cycle()
    return exp_id, trial_id, uuids


def test_set_and_label_show_in_list_csv_and_json(det: Det, client: Any) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    assert _ok(det("e", "set", "description", str(exp_id), "first try")) == \
        f"Set `description` of experiment {exp_id} to first try\n"
    _ok(det("e", "set", "name", str(exp_id), "mnist-cnn"))
    _ok(det("e", "set", "priority", str(exp_id), "5"))
    assert "not acted on" in det("e", "set", "max-slots", str(exp_id), "none").stderr
    _ok(det("e", "set", "weight", str(exp_id), "0.5"))
    assert _ok(det("e", "label", "add", str(exp_id), "baseline")) == \
        f"Added label 'baseline' to experiment {exp_id}\n"
    assert "already has" in _ok(det("e", "label", "add", str(exp_id), "baseline"))
    _ok(det("e", "label", "add", str(exp_id), "cnn"))
    _ok(det("e", "label", "remove", str(exp_id), "cnn"))
    rows = list(csv.DictReader(io.StringIO(_ok(det("e", "list", "--csv")))))
    assert rows[0]["ID"] == str(exp_id) and rows[0]["Name"] == "mnist-cnn"
    assert rows[0]["Parent ID"] == "" and rows[0]["State"] == "ACTIVE"
    listed = json.loads(_ok(det("e", "list", "--json")))["experiments"][0]
    assert (listed["description"], listed["labels"]) == ("first try", ["baseline"])
    config = json.loads(_ok(det("e", "describe", str(exp_id), "--json")))["experiment"]["config"]
    assert config["resources"]["priority"] == 5 and config["resources"]["weight"] == 0.5
    assert config["resources"]["max_slots"] is None


def test_bad_input_is_one_clear_line(det: Det, client: Any) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    for args, says in [
            (("e", "set", "priority", str(exp_id), "0"), "1<=x<=99"),
            (("e", "set", "max-slots", str(exp_id), "lots"), "not an integer"),
            (("e", "label", "add", "999", "x"), "experiment 999 not found"),
            (("e", "label", "add", str(exp_id), "a\tb"), "control character"),
            (("e", "delete", str(exp_id), "--yes"), "only an ended experiment"),
            (("e", "continue", str(exp_id)), "only an ended experiment"),
            (("e", "fork"), "name an EXPERIMENT_ID or --trial"),
            (("e", "fork", str(exp_id), "--config", "nokey"), "expected KEY=VALUE"),
            (("trial", "kill", "999"), "trial 999 not found"),
            (("checkpoint", "delete", "nope", "--yes"), "checkpoint nope not found"),
            (("e", "list", "--csv", "--json"), "cannot be used together")]:
        result = det(*args)
        assert result.exit_code in (1, 2), (args, result.output)
        assert says in result.output, (args, result.output)
        assert "Traceback" not in result.output and "None" not in result.output


def test_someone_elses_experiment_is_not_found(settings: MasterSettings) -> None:
    app = create_app(replace(settings, require_user=True))
    try:
        exp_id = create(app.test_client()).get_json()["experiment"]["id"]
        det = _runner(app)
        for args in (("e", "set", "name", str(exp_id), "x"), ("e", "delete", str(exp_id),
                                                              "--yes"),
                     ("e", "download-model-def", str(exp_id)), ("e", "fork", str(exp_id))):
            result = det(*args, user="mallory")
            assert result.exit_code == 1
            assert f"experiment {exp_id} not found" in result.output
    finally:
        app.config["HPCDET_ENGINE"].dispose()


def test_checkpoints_gc_policy_and_delete(det: Det, client: Any, reconciler: Reconciler,
                                         fake: FakeSchedulerBackend) -> None:
    exp_id, _, uuids = _completed(client, reconciler, fake, checkpoints=3)
    listed = _ok(det("checkpoint", "list", str(exp_id), "--csv"))
    assert listed.splitlines()[0] == "UUID,Trial,Steps,State,validation_loss,Reported"
    assert [r["UUID"] for r in csv.DictReader(io.StringIO(listed))] == [uuids[2]]
    assert _ok(det("e", "lc", str(exp_id), "--best", "1", "--csv")).splitlines()[1] \
        .startswith(uuids[2])
    keep_all = det("e", "set", "gc-policy", str(exp_id), "--save-experiment-best", "0",
                   "--save-trial-best", "0", "--save-trial-latest", "0", stdin="n\n")
    assert keep_all.exit_code == 1 and uuids[2] in keep_all.stdout
    assert "This policy will delete 1 checkpoint(s)." in keep_all.stdout
    applied = _ok(det("e", "set", "gc-policy", str(exp_id), "--save-experiment-best", "0",
                      "--save-trial-best", "0", "--save-trial-latest", "0", "--yes"))
    assert "Deleted 1 checkpoint(s)" in applied
    assert _ok(det("checkpoint", "list", str(exp_id))).count("\n") == 2  # header, rule


def test_checkpoint_delete_by_uuid(det: Det, client: Any, reconciler: Reconciler,
                                   fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    first = _checkpoint(client, client.application, trial_id, 10, 0.5)
    latest = _checkpoint(client, client.application, trial_id, 20, 0.4)
    refused = det("checkpoint", "delete", latest, "--yes")
    assert refused.exit_code == 1 and "may resume from it" in refused.output
    assert _ok(det("checkpoint", "delete", first, "--yes")) == \
        f"Deleted 1 checkpoint(s): {first}\n"
    with session_of(client.application) as session:
        assert session.get_one(Checkpoint, first).state == "DELETED"


def test_trial_kill(det: Det, client: Any, reconciler: Reconciler,
                    fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    assert _ok(det("trial", "kill", str(trial_id))) == \
        f"Killed trial {trial_id} (STOPPING_KILLED)\n"
    reconciler.cycle()
    end_job(client.application, fake, reconciler, trial_id, JobPhase.CANCELLED)
    assert trial_of(client.application, exp_id).state == "CANCELED"


def test_download_model_def_fork_continue_delete(det: Det, client: Any, tmp_path: Path,
                                                 reconciler: Reconciler,
                                                 fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id, uuids = _completed(client, reconciler, fake, checkpoints=1)
    path = _ok(det("e", "download-model-def", str(exp_id), "--output-dir",
                   str(tmp_path / "out"))).strip()
    assert path == str(tmp_path / "out" / f"experiment_{exp_id}_model_def.tgz")
    with tarfile.open(path, mode="r:gz") as tar:
        assert tar.getnames() == ["train.py"]
    forked = det("e", "fork", str(exp_id), "--config", "hyperparameters.lr=0.3")
    fork_id = int(_ok(forked).split()[-1])
    described = json.loads(_ok(det("e", "describe", str(fork_id), "--json")))["experiment"]
    assert described["parent_id"] == exp_id
    # constants made explicit, as Determined stores them (expconf shims)
    assert described["config"]["hyperparameters"]["lr"] == {"type": "const", "val": 0.3}
    by_trial = int(_ok(det("e", "fork", "--trial", str(trial_id))).split()[-1])
    config = json.loads(_ok(det("e", "describe", str(by_trial), "--json")))["experiment"][
        "config"]
    with session_of(client.application) as session:
        hparams = session.get_one(Trial, trial_id).hparams
    assert config["searcher"]["name"] == "single"
    assert {k: v["val"] for k, v in config["hyperparameters"].items()} == hparams
    assert _ok(det("e", "continue", str(exp_id), "--config",
                   "searcher.max_length.batches=40")) == f"Continued experiment {exp_id}\n"
    reconciler.cycle()
    assert trial_of(client.application, exp_id).state == "QUEUED"
    end_job(client.application, fake, reconciler, trial_id, JobPhase.COMPLETED)
    reconciler.cycle()
    deleted = _ok(det("e", "delete", str(exp_id), "--yes"))
    assert deleted == f"Deleted experiment {exp_id} (1 checkpoint(s))\n"
    with session_of(client.application) as session:
        assert session.scalars(select(Trial).where(Trial.experiment_id == exp_id)).all() == []
    assert "not found" in det("e", "describe", str(exp_id)).output


def test_master_config_logs_and_version(det: Det, app: Flask) -> None:
    shown = _ok(det("master", "config"))
    assert "auth_mode: open" in shown and "None" not in shown
    (Path(app.config["HPCDET_SETTINGS"].state_dir) / "master.log").write_text("a\nb\nc\n")
    assert _ok(det("master", "logs", "--tail", "2")) == "b\nc\n"
    version = _ok(det("version"))
    assert version.startswith("client: ") and "master: " in version


def test_set_labels_move_and_list_all(det: Det, client: Any) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    assert _ok(det("e", "set", "labels", str(exp_id), "a", "b")) == \
        f"Set labels of experiment {exp_id} to a, b\n"
    assert _ok(det("e", "set", "labels", str(exp_id))) == \
        f"Set labels of experiment {exp_id} to none\n"
    _ok(det("workspace", "create", "team"))
    _ok(det("project", "create", "-w", "team", "vision"))
    assert _ok(det("e", "move", str(exp_id), "team", "vision")) == \
        f'Moved experiment {exp_id} to project "vision"\n'
    unknown = det("e", "move", str(exp_id), "team", "nope")
    assert unknown.exit_code == 1 and "project 'nope' of workspace 'team' not found" in \
        unknown.output
    _ok(det("e", "kill", str(exp_id)))
    mine = create(client).get_json()["experiment"]["id"]
    every = _ok(det("e", "list", "--all"))
    assert every.splitlines()[0].split()[-1] == "Archived"
    assert {line.split()[0] for line in every.splitlines()[2:]} == {str(exp_id), str(mine)}


def test_continue_with_a_config_file_and_delete_asks(
        det: Det, client: Any, tmp_path: Path, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id, _ = _completed(client, reconciler, fake, checkpoints=1)
    refused = det("e", "delete", str(exp_id), stdin="n\n")
    assert refused.exit_code == 1 and "aborted; nothing was deleted" in refused.output
    overrides = tmp_path / "more.yaml"
    overrides.write_text("searcher:\n  max_length: {batches: 30}\nmax_restarts: 2\n")
    result = det("e", "continue", str(exp_id), "--config-file", str(overrides), "--config",
                 "max_restarts=3")
    assert _ok(result) == f"Continued experiment {exp_id}\n"
    assert f"Trial {trial_id} resumes from " in result.stderr
    config = json.loads(_ok(det("e", "describe", str(exp_id), "--json")))["experiment"][
        "config"]
    assert config["searcher"]["max_length"] == {"batches": 30}
    assert config["max_restarts"] == 3
    again = det("e", "continue", str(exp_id))
    assert again.exit_code == 1 and "only an ended experiment" in again.output


def test_checkpoint_delete_takes_a_comma_list(det: Det, client: Any, reconciler: Reconciler,
                                              fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    one = _checkpoint(client, client.application, trial_id, 10, 0.5)
    two = _checkpoint(client, client.application, trial_id, 20, 0.4)
    _checkpoint(client, client.application, trial_id, 30, 0.3)
    assert _ok(det("checkpoint", "delete", f"{one},{two}", "--yes")) == \
        f"Deleted 2 checkpoint(s): {one}, {two}\n"
    assert det("checkpoint", "delete", one, stdin="n\n").exit_code == 1


def test_version_json(det: Det) -> None:
    answer = json.loads(_ok(det("version", "--json")))
    assert answer["client"]["version"] == answer["master"]["version"]
    assert answer["master"]["error"] is None


def test_create_paused_then_unpause(det: Det, client: Any, reconciler: Reconciler,
                                    tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(CONFIG)
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "train.py").write_text("print('hi')\n")
    out = _ok(det("e", "create", "--paused", str(tmp_path / "c.yaml"), str(tmp_path / "code")))
    exp_id = int(out.split()[-1])
    reconciler.cycle()
    with session_of(client.application) as session:
        assert session.get_one(Experiment, exp_id).state == "PAUSED"
        assert not session.scalars(select(Trial).where(Trial.experiment_id == exp_id)).all()
    assert _ok(det("e", "unpause", str(exp_id))) == f"Experiment {exp_id}: ACTIVE\n"
    reconciler.cycle()
    assert trial_of(client.application, exp_id).state == "QUEUED"


def test_activate_must_be_a_boolean(client: Any) -> None:
    response = create(client, activate="no")
    assert "activate: must be true or false" in assert_error(response, 400, "bad_request")
