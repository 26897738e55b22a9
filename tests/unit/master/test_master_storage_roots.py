"""Issue 14 finding 3: checkpoint_storage confined to security.storage_roots.

The two attacks from hostile testing: an experiment naming another user's directory (then
downloading and garbage-collecting it), and one naming another experiment's checkpoint
directory (GC deleted its state_dict.pth while the checkpoint stayed ACTIVE).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error, create
from sqlalchemy import select, update

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Checkpoint, Experiment, Trial
from hpcdet.master.reports.checkpoint_gc import CheckpointCollector
from hpcdet.master.security.storage_roots import StorageError, confined_dir
from hpcdet.master.security.tokens import hash_token
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.hardening import HardeningSettings

CONFIG = """\
name: ckpts
entrypoint: python3 train.py
hyperparameters: {{lr: 0.1}}
searcher: {{name: single, metric: loss, max_length: {{batches: 10}}}}
checkpoint_storage: {{type: shared_fs, host_path: {host}, storage_path: {path},
                     save_experiment_best: 0, save_trial_best: 0, save_trial_latest: 0}}
"""
VICTIM_UUID = "0a0a0a0a-0000-4000-8000-000000000001"


@pytest.fixture
def other_users_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory outside every storage root (another user's home)."""
    home = tmp_path_factory.mktemp("home-of-user_b")
    (home / VICTIM_UUID).mkdir()
    (home / VICTIM_UUID / "private.key").write_text("secret")
    return home


def test_another_users_directory_is_refused_at_create(client: FlaskClient, app: Flask,
                                                      other_users_home: Path) -> None:
    for dry_run in (True, False):
        message = assert_error(create(client, CONFIG.format(host=other_users_home, path="."),
                                      dry_run=dry_run), 400, "invalid_config")
        assert message == "checkpoint storage outside the allowed roots"
    via_link = Path(app.config["HPCDET_SETTINGS"].state_dir, "innocent-link")
    via_link.symlink_to(other_users_home)  # inside a root, resolving outside it
    assert_error(create(client, CONFIG.format(host=via_link, path=".")), 400, "invalid_config")


def test_an_experiment_stored_before_the_roots_can_neither_download_nor_gc_outside(
        client: FlaskClient, app: Flask, tmp_path: Path, other_users_home: Path) -> None:
    response = create(client, CONFIG.format(host=tmp_path / "shared", path="store"))
    assert response.status_code == 201, response.get_json()
    exp_id = response.get_json()["experiment"]["id"]
    sessions = make_session_factory(app.config["HPCDET_ENGINE"])
    make_reconciler(app.config["HPCDET_SETTINGS"], sessions, SlurmBackend()).search()
    with sessions.begin() as session:
        exp = session.get_one(Experiment, exp_id)
        storage = {**exp.config["checkpoint_storage"], "host_path": str(other_users_home),
                   "storage_path": None}
        exp.config = {**exp.config, "checkpoint_storage": storage}  # as an old master stored
        trial = session.scalars(select(Trial).where(Trial.experiment_id == exp_id)).one()
        session.add(Checkpoint(uuid=VICTIM_UUID, trial_id=trial.id, steps_completed=1,
                               state="ACTIVE"))
        session.execute(update(Trial).where(Trial.id == trial.id).values(state="COMPLETED"))
    download = client.get(f"/api/v1/checkpoints/{VICTIM_UUID}/download",
                          headers={"X-Hpcdet-User": "alice"})
    assert_error(download, 403, "forbidden")
    CheckpointCollector(sessions, app.config["HPCDET_SETTINGS"]).collect_experiment(exp_id)
    assert (other_users_home / VICTIM_UUID / "private.key").read_text() == "secret"


def test_another_experiments_checkpoint_directory_is_refused(client: FlaskClient, app: Flask,
                                                             tmp_path: Path) -> None:
    victim = tmp_path / "shared" / VICTIM_UUID
    victim.mkdir(parents=True)
    (victim / "state_dict.pth").write_bytes(b"weights")
    config = CONFIG.format(host=tmp_path / "shared", path=VICTIM_UUID)
    message = assert_error(create(client, config), 400, "invalid_config")
    assert message == "checkpoint storage outside the allowed roots"
    ok = create(client, CONFIG.format(host=tmp_path / "shared", path="mine"))
    trial_token = _trial_token(app, ok.get_json()["experiment"]["id"])
    register = client.post(f"/api/v1/trials/{trial_token[0]}/checkpoints",
                           headers={"Authorization": f"Bearer {trial_token[1]}"},
                           json={"uuid": "state_dict.pth", "steps_completed": 1})
    assert_error(register, 400, "bad_request")
    assert (victim / "state_dict.pth").read_bytes() == b"weights"


def test_configured_roots_replace_the_defaults(settings: MasterSettings, tmp_path: Path) -> None:
    config = {"checkpoint_storage": {"type": "shared_fs", "host_path": str(tmp_path / "x")}}
    assert confined_dir(settings, config) == tmp_path / "x"
    site = replace(settings, hardening=HardeningSettings(storage_roots=("/srv/ckpt",)))
    with pytest.raises(StorageError, match="not under an allowed storage root"):
        confined_dir(site, config)


def _trial_token(app: Flask, exp_id: int) -> tuple[int, str]:
    sessions = make_session_factory(app.config["HPCDET_ENGINE"])
    make_reconciler(app.config["HPCDET_SETTINGS"], sessions, SlurmBackend()).search()
    with sessions() as session:
        trial = session.scalars(select(Trial).where(Trial.experiment_id == exp_id)).one()
        trial.token = hash_token("the-trials-token")  # the database keeps only the hash
        session.commit()
        return trial.id, "the-trials-token"
