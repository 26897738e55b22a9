"""Fair-share accounts from master.yaml and the database; det-master sync-accounts."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from fake_scheduler import FakeSlurm
from sqlalchemy.orm import Session

from hpcdet.dispatcher import commands
from hpcdet.errors import SchedulerError
from hpcdet.master.db import make_engine, make_session_factory
from hpcdet.master.models import CommandTask, Experiment
from hpcdet.master.queue import fair_share
from hpcdet.master.queue.fair_share import (
    AccountSync,
    SyncResult,
    account_name,
    describe,
    desired_accounts,
    ensure_account,
    sync_accounts,
)
from hpcdet.master.serve import main
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.pools import FairShareSettings


def _with_fair_share(settings: MasterSettings, **overrides: Any) -> MasterSettings:
    values: dict[str, Any] = {"parent_account": "hpcdet", "weights": {"team-a": 3, "Team B": 2}}
    values.update(overrides)
    return replace(settings, resource_manager=replace(
        settings.resource_manager, fair_share=FairShareSettings(**values)))


@pytest.fixture
def session(settings: MasterSettings) -> Iterator[Session]:
    engine = make_engine(settings.db_url)
    with make_session_factory(engine)() as session:
        yield session
    engine.dispose()


def _experiment(session: Session, owner: str, workspace: str | None) -> None:
    config = {"workspace": workspace} if workspace else {}
    session.add(Experiment(name="e", owner=owner, state="ACTIVE", config=config,
                           original_config="", context=b"", searcher_name="single"))
    session.flush()


def _command_task(session: Session, owner: str) -> None:
    session.add(CommandTask(owner=owner, name="t", state="QUEUED", job_dir="/j", cwd="/",
                            workdir="/", output_pattern="slurm-%j.out"))
    session.flush()


def test_workspaces_in_use_and_configured_weights_are_the_accounts(
        settings: MasterSettings, session: Session) -> None:
    settings = _with_fair_share(settings)
    _experiment(session, "alice", "Team-A")
    _experiment(session, "bob", "vision")
    _experiment(session, "carol", None)
    assert desired_accounts(session, settings) == {
        # "Team-A" and the configured "team-a" are one account: the heavier weight wins
        "det-team-a": 3.0, "det-team_b": 2.0, "det-vision": 1.0, "det-uncategorized": 1.0}


def test_users_as_accounts_include_command_task_owners(settings: MasterSettings,
                                                       session: Session) -> None:
    settings = _with_fair_share(settings, account_source="user", weights={"alice": 4},
                                account_prefix="u-", default_weight=2)
    _experiment(session, "alice", "Team-A")
    _command_task(session, "Dave.Smith")
    assert desired_accounts(session, settings) == {"u-alice": 4.0, "u-dave.smith": 2.0}


def test_no_fair_share_means_no_accounts_and_nothing_to_sync(settings: MasterSettings,
                                                             session: Session) -> None:
    slurm = FakeSlurm()
    assert desired_accounts(session, settings) == {}
    result = sync_accounts(session, slurm, settings, dry_run=False)
    assert result == SyncResult(reason="resource_manager.fair_share is not configured")
    assert slurm.calls == []
    assert account_name(settings, "Team A") == "det-team_a"


def test_a_dry_run_plans_the_exact_commands_and_runs_none(settings: MasterSettings,
                                                          session: Session) -> None:
    settings = _with_fair_share(settings, manage_accounts="true")
    slurm = FakeSlurm()
    result = sync_accounts(session, slurm, settings, dry_run=True, user="svc")
    assert result.reason == "dry run" and result.applied == []
    assert result.commands == [
        ["sacctmgr", "-i", "add", "account", "det-team_b", "parent=hpcdet", "fairshare=2",
         "cluster=hpcdet-dev"],
        ["sacctmgr", "-i", "add", "user", "svc", "account=det-team_b", "cluster=hpcdet-dev"],
        ["sacctmgr", "-i", "add", "account", "det-uncategorized", "parent=hpcdet", "fairshare=1",
         "cluster=hpcdet-dev"],
        ["sacctmgr", "-i", "add", "user", "svc", "account=det-uncategorized",
         "cluster=hpcdet-dev"]]
    assert slurm.writes() == []
    assert [call[0] for call in slurm.calls] == ["scontrol", "sacctmgr"]


@pytest.mark.parametrize(("manage", "admin_level", "applies"), [
    ("true", "None", True), ("auto", "Operator", True), ("auto", "None", False),
    ("false", "Administrator", False)])
def test_commands_run_only_when_the_master_may(settings: MasterSettings, session: Session,
                                               monkeypatch: pytest.MonkeyPatch, manage: str,
                                               admin_level: str, applies: bool) -> None:
    settings = _with_fair_share(settings, manage_accounts=manage)
    slurm = FakeSlurm(admin_level=admin_level)
    monkeypatch.setattr("os.geteuid", lambda: 1000)  # not root
    result = sync_accounts(session, slurm, settings, dry_run=False, user="svc")
    assert len(result.commands) == 4
    assert (result.applied == result.commands) is applies
    assert len(slurm.writes()) == (4 if applies else 0)
    if not applies:
        assert result.reason is not None and manage in result.reason


def test_describe_prints_shell_lines_with_comments() -> None:
    command = ["sacctmgr", "-i", "add", "account", "det-a", "fairshare=1", "cluster=c"]
    assert describe(SyncResult([command], [command])) == [
        "# Ran these sacctmgr commands:", "sacctmgr -i add account det-a fairshare=1 cluster=c"]
    lines = describe(SyncResult([command], reason="the master's Slurm user 'svc' is not ..."))
    assert lines[0].startswith("# The master does not run these itself (the master's")
    assert lines[1] == "sacctmgr -i add account det-a fairshare=1 cluster=c"
    assert describe(SyncResult())[0].startswith("# Nothing to do: Slurm's accounts already")


def test_the_automatic_sync_reads_once_and_reports_a_plan_once(
        settings: MasterSettings, session: Session, caplog: pytest.LogCaptureFixture) -> None:
    settings = _with_fair_share(settings, manage_accounts="false",
                                weights={"team-a": 3})
    slurm = FakeSlurm()
    sync = AccountSync(settings, slurm, user="svc")
    with caplog.at_level(logging.WARNING, logger="hpcdet.master.queue.fair_share"):
        first = sync.refresh(session)
        second = sync.refresh(session)
    assert first is not None and second is not None and first.commands == second.commands
    assert [call[0] for call in slurm.calls] == ["scontrol", "sacctmgr", "sacctmgr"]
    assert len([r for r in caplog.records if "administrator should run" in r.message]) == 1
    # det-team-a exists (it is in the recorded associations); det-uncategorized does not yet
    sync.ensure(session, "det-team-a")
    assert len(slurm.calls) == 3
    sync.ensure(session, "det-uncategorized")
    assert len(slurm.calls) == 4


def test_the_automatic_sync_survives_a_scheduler_failure(settings: MasterSettings,
                                                         session: Session) -> None:
    def failing(argv: Sequence[str], *, timeout: float = 60) -> str:
        raise SchedulerError(argv, 1, "", "slurmdbd is down")

    sync = AccountSync(_with_fair_share(settings), failing, user="svc")
    assert sync.refresh(session) is None


def test_det_master_sync_accounts_dry_run(settings: MasterSettings, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    config = {"db": {"url": settings.db_url},
              "resource_manager": {"fair_share": {"parent_account": "hpcdet",
                                                  "weights": {"team-a": 3}}}}
    (tmp_path / "master.yaml").write_text(yaml.safe_dump(config))
    slurm = FakeSlurm()
    monkeypatch.setattr(commands, "CommandRunner", lambda: slurm)
    monkeypatch.setattr(fair_share, "slurm_user", lambda: "svc")
    result = CliRunner().invoke(main, ["--config", str(tmp_path / "master.yaml"),
                                       "sync-accounts", "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("# Dry run:")
    assert lines[1:] == [
        "sacctmgr -i add account det-uncategorized parent=hpcdet fairshare=1 cluster=hpcdet-dev",
        "sacctmgr -i add user svc account=det-uncategorized cluster=hpcdet-dev"]


def test_det_master_sync_accounts_names_a_scheduler_failure(settings: MasterSettings,
                                                            tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    config = {"db": {"url": settings.db_url}, "resource_manager": {"fair_share": {}}}
    (tmp_path / "master.yaml").write_text(yaml.safe_dump(config))

    def failing(argv: Sequence[str], *, timeout: float = 60) -> str:
        raise SchedulerError(argv, 1, "", "sacctmgr: error: Problem talking to the database")

    monkeypatch.setattr(commands, "CommandRunner", lambda: failing)
    result = CliRunner().invoke(main, ["--config", str(tmp_path / "master.yaml"),
                                       "sync-accounts"])
    assert result.exit_code == 1
    assert "Problem talking to the database" in result.output
    assert "Traceback" not in result.output


def test_ensure_account_syncs_only_for_a_missing_account(settings: MasterSettings,
                                                         session: Session,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _with_fair_share(settings, manage_accounts="true")
    monkeypatch.setattr(fair_share, "slurm_user", lambda: "svc")
    slurm = FakeSlurm()
    assert ensure_account(session, slurm, settings, "det-team-a") is None
    assert ensure_account(session, slurm, settings, None) is None
    assert slurm.writes() == []
    result = ensure_account(session, slurm, settings, "det-uncategorized")
    assert result is not None and result.applied == result.commands
    assert ("sacctmgr", "-i", "add", "user", "svc", "account=det-uncategorized",
            "cluster=hpcdet-dev") in slurm.writes()
