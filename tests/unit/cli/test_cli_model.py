"""``det model`` end to end against a real in-process master (WSGI) that identifies its
users: tables, --json, versions from checkpoints, download, and the one-line refusals."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from hpcdet.cli.main import CliState, cli

UUID = "aaaaaaaa-0000-4000-8000-00000000000a"


@dataclass
class Master:
    transport: httpx.WSGITransport
    app: Any
    store: Path


@pytest.fixture
def master(migrated_db_url: str, tmp_path: Path) -> Iterator[Master]:
    from hpcdet.dispatcher.slurm.backend import SlurmBackend
    from hpcdet.master.app import create_app
    from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

    rm = replace(ResourceManagerSettings(), job_storage_root=str(tmp_path / "jobs"),
                 master_host="master.example", cluster_name="unit")
    settings = MasterSettings(db_url=migrated_db_url, resource_manager=rm, state_dir=str(tmp_path),
                              require_user=True)
    app = create_app(settings, backend=SlurmBackend())
    yield Master(httpx.WSGITransport(app=app), app, tmp_path / "store")
    app.config["HPCDET_ENGINE"].dispose()


def seed_checkpoint(master: Master, owner: str = "alice") -> None:
    """``owner``'s finished experiment with checkpoint UUID and its files on disk."""
    from hpcdet.master.db import session_scope
    from hpcdet.master.models import Checkpoint, Experiment, Trial

    (master.store / UUID).mkdir(parents=True)
    (master.store / UUID / "state_dict.pth").write_bytes(b"weights")
    config = {"checkpoint_storage": {"type": "shared_fs", "host_path": str(master.store)},
              "searcher": {"name": "single", "metric": "loss"}}
    with session_scope(master.app.config["HPCDET_SESSION_FACTORY"]) as session:
        exp = Experiment(name="e", owner=owner, state="COMPLETED", config=config,
                         original_config="", context=b"", searcher_name="single")
        session.add(exp)
        session.flush()
        trial = Trial(experiment_id=exp.id, state="COMPLETED", hparams={}, seed=1, token="x")
        session.add(trial)
        session.flush()
        session.add(Checkpoint(uuid=UUID, trial_id=trial.id, steps_completed=40,
                               validation_metrics={"validation_loss": 0.25}))


def run(master: Master, user: str, *args: str, stdin: str | None = None) -> Result:
    state = CliState(transport=master.transport, poll_interval=0)
    return CliRunner().invoke(cli, ["-u", user, *args], obj=state, prog_name="det",
                              input=stdin)


def ok(master: Master, user: str, *args: str) -> str:
    result = run(master, user, *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def refused(master: Master, user: str, *args: str) -> str:
    result = run(master, user, *args)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "None" not in result.output
    return result.output


def test_create_register_describe_list_download_delete(master: Master, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    seed_checkpoint(master)
    out = ok(master, "alice", "model", "create", "digits", "--description", "an MLP")
    assert "Model digits" in out and "an MLP" in out
    out = ok(master, "alice", "m", "register-version", "digits", UUID, "--name", "best",
             "--comment", "from ASHA")
    assert f"Registered checkpoint {UUID} as version 1 of model digits" in out
    assert "validation_loss=0.25" in out
    out = ok(master, "alice", "m", "describe", "digits")
    assert "Versions:" in out and UUID in out
    data = json.loads(ok(master, "alice", "m", "describe", "digits", "--version", "1",
                         "--json"))
    assert data["model_version"]["checkpoint_uuid"] == UUID
    assert data["model"]["num_versions"] == 1
    listed = ok(master, "alice", "m", "ls")
    assert listed.splitlines()[0].split()[:3] == ["ID", "Name", "Workspace"]
    assert "digits" in listed.splitlines()[2]
    versions = json.loads(ok(master, "alice", "m", "versions", "digits", "--json"))
    assert [v["version"] for v in versions["model_versions"]] == [1]
    monkeypatch.chdir(tmp_path)
    out = ok(master, "alice", "m", "download", "digits", "-o", "got")
    assert (tmp_path / "got" / "state_dict.pth").read_bytes() == b"weights"
    assert f"Downloaded checkpoint {UUID}" in out
    assert "Aborted" in run(master, "alice", "m", "delete", "digits", stdin="n\n").output
    ok(master, "alice", "m", "delete", "digits", "--yes")
    assert "model 'digits' not found" in refused(master, "alice", "m", "describe", "digits")


def test_refusals_are_one_line(master: Master) -> None:
    seed_checkpoint(master)
    ok(master, "alice", "m", "create", "digits")
    assert "already exists" in refused(master, "bob", "m", "create", "digits")
    assert "cannot be only numbers" in refused(master, "alice", "m", "create", "42")
    assert "checkpoint nope not found" in refused(master, "alice", "m", "register-version",
                                                  "digits", "nope")
    # bob may not see alice's checkpoint, nor her model
    assert "not found" in refused(master, "bob", "m", "register-version", "digits", UUID)
    assert "has no version 3" in refused(master, "alice", "m", "describe", "digits",
                                         "--version", "3")
    assert "has no versions yet" in refused(master, "alice", "m", "download", "digits")
    assert "workspace 'nowhere' not found" in refused(master, "alice", "m", "move", "digits",
                                                      "-w", "nowhere")
    ok(master, "alice", "m", "archive", "digits")
    assert "archived" in refused(master, "alice", "m", "register-version", "digits", UUID)
    assert ok(master, "alice", "m", "ls", "--archived", "--json").count('"digits"') == 1
    ok(master, "alice", "m", "unarchive", "digits")


def test_move_shares_it_with_a_workspace(master: Master) -> None:
    ok(master, "alice", "workspace", "create", "team")
    ok(master, "alice", "workspace", "add-member", "team", "vic")
    ok(master, "alice", "m", "create", "digits")
    assert "not found" in refused(master, "vic", "m", "describe", "digits")
    assert "Moved model digits to workspace team" in ok(master, "alice", "m", "move", "digits",
                                                        "-w", "team")
    assert "team" in ok(master, "vic", "m", "describe", "digits")
    assert "may read but not change" in refused(master, "vic", "m", "delete", "digits", "-y")
    names = [m["name"] for m in json.loads(ok(master, "vic", "m", "ls", "-w", "team",
                                              "--json"))["models"]]
    assert names == ["digits"]
