"""Issue 28 finding 2: with ``jobs_run_as: owner`` checkpoints are the owner's own.

The default ``<job_storage_root>/checkpoints`` was one directory for everybody: whoever made
it first could replace user_a's checkpoint with a pickle of their own, run as user_a when she
resumed or loaded it. Now the default is ``<job_storage_root>/<owner>/checkpoints`` and any
checkpoint directory must lie in the owner's own part of a storage root, ``<root>/<owner>``,
at create, fork, continue and with a template; an experiment an older master stored with the
shared default is neither run, continued nor served any more. The test process stands in for
every user (the directories it makes count as theirs: ``owner_uid`` is patched).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from lifecycle_helpers import end_job, master_lines, session_of, trial_of
from master_helpers import CONFIG, assert_error, make_context
from sqlalchemy import select

from hpcdet.dispatcher import JobPhase
from hpcdet.master.app import create_app
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Checkpoint, Experiment
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.scheduling.submission import effective_config, parse_config
from hpcdet.master.security import storage_roots
from hpcdet.master.security.storage_roots import StorageError, confined_dir
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.hardening import HardeningSettings
from hpcdet.master.settings.runas import RunAsSettings

OWNERS_OWN = "checkpoint storage outside the owner's own directory"
UUID = "0a0a0a0a-0000-4000-8000-000000000002"


@pytest.fixture
def owner_settings(settings: MasterSettings, monkeypatch: pytest.MonkeyPatch) -> MasterSettings:
    """``jobs_run_as: owner``; every user's directories are this process's."""
    monkeypatch.setattr(storage_roots, "owner_uid", lambda owner: os.getuid(), raising=False)
    return replace(settings, runas=RunAsSettings(jobs_run_as="owner"))


@pytest.fixture
def owner_app(owner_settings: MasterSettings,
              fake: FakeSchedulerBackend) -> Iterator[Flask]:
    app = create_app(owner_settings, backend=fake)
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def owner_client(owner_app: Flask) -> FlaskClient:
    return owner_app.test_client()


@pytest.fixture
def owner_reconciler(owner_app: Flask, fake: FakeSchedulerBackend) -> Reconciler:
    return make_reconciler(owner_app.config["HPCDET_SETTINGS"],
                           make_session_factory(owner_app.config["HPCDET_ENGINE"]), fake)


def _job_root(client: FlaskClient) -> Path:
    settings: MasterSettings = client.application.config["HPCDET_SETTINGS"]
    return Path(settings.resource_manager.job_storage_root)


def _with_storage(**storage: str) -> str:
    fields = ", ".join(f"{key}: {value}" for key, value in storage.items())
    return CONFIG + f"checkpoint_storage: {{type: shared_fs, {fields}}}\n"


def _post(client: FlaskClient, path: str, user: str, **body: Any) -> Any:
    return client.post(f"/api/v1{path}", json=body, headers={"X-Hpcdet-User": user})


def _create(client: FlaskClient, user: str, config: str = CONFIG, **extra: Any) -> Any:
    return _post(client, "/experiments", user, config=config, context=make_context(), **extra)


def _refused(response: Any, user: str) -> None:
    """400 naming the field and the rule (the caller's own part of a root)."""
    assert assert_error(response, 400, "invalid_config") == OWNERS_OWN
    (line,) = response.get_json()["error"]["details"]
    assert line.startswith("<config>.checkpoint_storage.host_path: "), line
    assert f"not in {user}'s own part of a storage root" in line, line


def _stored_storage(client: FlaskClient, exp_id: int, user: str) -> dict[str, Any]:
    answer = client.get(f"/api/v1/experiments/{exp_id}", headers={"X-Hpcdet-User": user})
    storage: dict[str, Any] = answer.get_json()["experiment"]["config"]["checkpoint_storage"]
    return storage


def test_the_default_checkpoint_storage_is_the_owners_own(
        owner_client: FlaskClient, settings: MasterSettings, owner_settings: MasterSettings,
        tmp_path: Path) -> None:
    created = _create(owner_client, "user_a")
    assert created.status_code == 201, created.get_json()
    storage = _stored_storage(owner_client, created.get_json()["experiment"]["id"], "user_a")
    assert storage["host_path"] == str(_job_root(owner_client) / "user_a" / "checkpoints")
    # Jobs run as the service account: one directory, as before.
    shared = effective_config(settings, parse_config(CONFIG), owner="user_a")
    assert shared["checkpoint_storage"]["host_path"] == str(tmp_path / "jobs" / "checkpoints")
    # The cluster's shared_fs in master.yaml is a root of per-owner directories.
    site = tmp_path / "site-ckpt"
    (site / "user_a").mkdir(parents=True, mode=0o700)
    cluster = replace(owner_settings, checkpoint_storage={
        "type": "shared_fs", "host_path": str(site), "storage_path": "runs"})
    mine = effective_config(cluster, parse_config(CONFIG), owner="user_a")["checkpoint_storage"]
    assert (mine["host_path"], mine["storage_path"]) == (str(site / "user_a"), "runs")


def test_another_users_part_of_a_root_is_refused_at_create(owner_client: FlaskClient) -> None:
    root = _job_root(owner_client)
    (root / "user_a" / "checkpoints").mkdir(parents=True)
    (root / "user_b").symlink_to(root / "user_a")  # user_b's name, user_a's directory
    for config in [_with_storage(host_path=str(root / "user_a" / "checkpoints")),
                   _with_storage(host_path=str(root), storage_path="user_a/checkpoints"),
                   _with_storage(host_path=str(root / "checkpoints")),  # the old default
                   _with_storage(host_path=str(root)),
                   _with_storage(host_path=str(root / "user_b" / "checkpoints"))]:
        for dry_run in (False, True):
            _refused(_create(owner_client, "user_b", config, dry_run=dry_run), "user_b")
    listed = owner_client.get("/api/v1/experiments", headers={"X-Hpcdet-User": "user_b"})
    assert listed.get_json()["experiments"] == []
    own = _create(owner_client, "user_a", _with_storage(host_path=str(root / "user_a" / "x")))
    assert own.status_code == 201, own.get_json()


def test_templates_and_forks_are_held_to_the_same_rule(owner_client: FlaskClient) -> None:
    theirs = str(_job_root(owner_client) / "user_a" / "checkpoints")
    template = _post(owner_client, "/templates", "user_b", name="into-a",
                     config=f"checkpoint_storage: {{type: shared_fs, host_path: {theirs}}}\n")
    assert template.status_code in (200, 201), template.get_json()
    _refused(_create(owner_client, "user_b", template="into-a"), "user_b")
    source = _create(owner_client, "user_b")
    assert source.status_code == 201, source.get_json()
    fork = _post(owner_client, f"/experiments/{source.get_json()['experiment']['id']}/fork",
                 "user_b", config=_with_storage(host_path=theirs))
    _refused(fork, "user_b")


def test_continue_is_held_to_the_same_rule(owner_client: FlaskClient,
                                           owner_reconciler: Reconciler,
                                           fake: FakeSchedulerBackend) -> None:
    exp_id = _ended(owner_client, owner_reconciler, fake, "user_b")
    theirs = str(_job_root(owner_client) / "user_a" / "checkpoints")
    again = _post(owner_client, f"/experiments/{exp_id}/continue", "user_b",
                  config=f"checkpoint_storage: {{host_path: {theirs}}}")
    _refused(again, "user_b")
    fine = _post(owner_client, f"/experiments/{exp_id}/continue", "user_b", config="")
    assert fine.status_code == 200, fine.get_json()


def _ended(client: FlaskClient, reconciler: Reconciler, fake: FakeSchedulerBackend,
           user: str) -> int:
    """``user``'s experiment whose one trial ran and COMPLETED."""
    created = _create(client, user)
    assert created.status_code == 201, created.get_json()
    exp_id = int(created.get_json()["experiment"]["id"])
    reconciler.cycle()
    end_job(client.application, fake, reconciler, trial_of(client.application, exp_id).id,
            JobPhase.COMPLETED)
    reconciler.cycle()
    assert trial_of(client.application, exp_id).state == "COMPLETED"
    return exp_id


def test_an_experiment_stored_with_the_shared_default_is_not_run_served_or_continued(
        owner_client: FlaskClient, owner_reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    """As an older master stored it: its checkpoints in ``<job_storage_root>/checkpoints``,
    where an intruder may have put his own."""
    created = _create(owner_client, "user_a")
    exp_id = created.get_json()["experiment"]["id"]
    shared = _job_root(owner_client) / "checkpoints"
    (shared / UUID).mkdir(parents=True)
    (shared / UUID / "state_dict.pth").write_bytes(b"an intruder's pickle")
    with session_of(owner_client.application) as session:
        exp = session.get_one(Experiment, exp_id)
        storage = {**exp.config["checkpoint_storage"], "host_path": str(shared)}
        exp.config = {**exp.config, "checkpoint_storage": storage}
        session.commit()
    owner_reconciler.cycle()
    trial = trial_of(owner_client.application, exp_id)
    assert trial.state == "ERROR" and fake.submitted == []
    (line,) = [x for x in master_lines(owner_client.application, trial.id)
               if x.startswith("submission failed: ")]
    assert "checkpoint_storage.host_path: " in line and "user_a's own part" in line, line
    with session_of(owner_client.application) as session:
        session.add(Checkpoint(uuid=UUID, trial_id=trial.id, steps_completed=1, state="ACTIVE"))
        session.commit()
    download = owner_client.get(f"/api/v1/checkpoints/{UUID}/download",
                                headers={"X-Hpcdet-User": "user_a"})
    assert "user_a's own part" in assert_error(download, 403, "forbidden")
    owner_reconciler.cycle()
    again = _post(owner_client, f"/experiments/{exp_id}/continue", "user_a", config="")
    _refused(again, "user_a")


@pytest.fixture
def site_root(tmp_path: Path) -> Path:
    root = tmp_path / "lustre"
    root.mkdir(mode=0o755)
    return root


def _site(owner_settings: MasterSettings, root: Path) -> MasterSettings:
    roots = (str(root), owner_settings.resource_manager.job_storage_root)
    return replace(owner_settings, hardening=HardeningSettings(storage_roots=roots))


def _in(path: Path) -> dict[str, Any]:
    return {"checkpoint_storage": {"type": "shared_fs", "host_path": str(path)}}


def test_another_root_needs_the_owners_own_directory_made_by_the_owner(
        owner_settings: MasterSettings, site_root: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    site, wanted = _site(owner_settings, site_root), _in(site_root / "user_a" / "ckpt")
    with pytest.raises(StorageError, match="does not exist: user_a makes it first"):
        confined_dir(site, wanted, "user_a")
    (site_root / "user_a").mkdir(mode=0o700)
    assert confined_dir(site, wanted, "user_a") == site_root / "user_a" / "ckpt"
    with pytest.raises(StorageError, match="not in user_b's own part"):
        confined_dir(site, wanted, "user_b")
    assert confined_dir(site, wanted) == site_root / "user_a" / "ckpt"  # GC: the roots only
    monkeypatch.setattr(storage_roots, "owner_uid", lambda owner: os.getuid() + 1)
    with pytest.raises(StorageError, match="not a directory of user_a's"):
        confined_dir(site, wanted, "user_a")  # someone else made it first


@pytest.mark.parametrize(("root_mode", "part_mode", "refusal"), [
    (0o777, 0o700, "lets other users replace"),  # anyone may rename user_a's away
    (0o1777, 0o777, "not a directory of user_a's that only they may write to"),
    (0o1777, 0o700, None),  # like /tmp: sticky
])
def test_nobody_else_may_replace_or_write_the_owners_directory(
        owner_settings: MasterSettings, site_root: Path, root_mode: int, part_mode: int,
        refusal: str | None) -> None:
    (site_root / "user_a").mkdir()
    site_root.chmod(root_mode)
    (site_root / "user_a").chmod(part_mode)
    site, wanted = _site(owner_settings, site_root), _in(site_root / "user_a")
    if refusal is None:
        assert confined_dir(site, wanted, "user_a") == site_root / "user_a"
        return
    with pytest.raises(StorageError, match=refusal):
        confined_dir(site, wanted, "user_a")


def test_jobs_run_as_the_service_account_keep_the_roots_rule(settings: MasterSettings) -> None:
    theirs = _in(Path(settings.resource_manager.job_storage_root) / "user_a")
    assert confined_dir(settings, theirs, "user_b").name == "user_a"


def test_a_squatted_user_root_is_refused_before_the_helper_sees_it(
        owner_client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone made ``<job_storage_root>/user_a`` before user_a's first job."""
    (_job_root(owner_client) / "user_a").mkdir(parents=True)
    monkeypatch.setattr(storage_roots, "owner_uid", lambda owner: os.getuid() + 1)
    refused = _create(owner_client, "user_a")
    assert assert_error(refused, 400, "invalid_config") == OWNERS_OWN
    assert "not a directory of user_a's" in refused.get_json()["error"]["details"][0]
    with session_of(owner_client.application) as session:
        assert session.scalars(select(Experiment)).all() == []
