"""``det-master backup``/``restore``/``migrate``/``checkpoints reconcile`` on both databases,
through det-master itself (a click runner) on the upgrade fixture's database."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from sqlalchemy import select
from upgrade_fixture import CHECKPOINTS, load_fixture

from hpcdet.dispatcher import JobPhase
from hpcdet.master.db import (
    HEAD_REVISION,
    known_revisions,
    make_session_factory,
    migrate,
    schema_revision,
)
from hpcdet.master.models import Experiment, Trial
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.serve import main
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings


@pytest.fixture(autouse=True)
def keep_umask() -> Iterator[None]:
    """det-master sets a private umask for its process: give the test process its own back."""
    mask = os.umask(0o022)
    os.umask(mask)
    yield
    os.umask(mask)


def make_site(db_url: str, tmp_path: Path) -> dict[str, Any]:
    """A master.yaml naming the database and a job root."""
    jobs = tmp_path / "jobs"
    config = tmp_path / "master.yaml"
    config.write_text(json.dumps({"state_dir": str(tmp_path / "state"), "db": {"url": db_url},
                                  "resource_manager": {"job_storage_root": str(jobs)}}))
    return {"url": db_url, "config": str(config), "jobs": jobs, "tmp": tmp_path}


@pytest.fixture
def site(db_url: str, tmp_path: Path) -> dict[str, Any]:
    """The upgrade fixture's database (experiments in every state, metrics, checkpoints),
    upgraded to the head."""
    load_fixture(db_url, tmp_path / "jobs")
    migrate(db_url)
    return make_site(db_url, tmp_path)


@pytest.fixture
def empty_site(migrated_db_url: str, tmp_path: Path) -> dict[str, Any]:
    """A database at the head with nothing in it (a copy of the session's template)."""
    return make_site(migrated_db_url, tmp_path)


def det_master(site: dict[str, Any], *args: str) -> Result:
    """det-master with the site's master.yaml."""
    return CliRunner().invoke(main, ["--config", site["config"], *args])


def count(url: str, table: str) -> int:
    """Rows in one table."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return int(connection.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one())
    finally:
        engine.dispose()


def execute(url: str, statement: str) -> None:
    """One statement, committed."""
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.execute(sa.text(statement))
    engine.dispose()


def test_backup_then_restore_brings_the_database_back(site: dict[str, Any]) -> None:
    backup = site["tmp"] / "backups" / "master.backup"
    result = det_master(site, "backup", str(backup), "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["schema_revision"] == HEAD_REVISION and answer["size"] > 0
    manifest = json.loads(Path(answer["manifest"]).read_text())
    assert manifest["schema_revision"] == HEAD_REVISION and manifest["database"] in (
        "sqlite", "postgresql")
    for path in (backup, Path(answer["manifest"])):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # After the backup: an experiment is deleted (its trials, metrics, checkpoints with it).
    execute(site["url"], "DELETE FROM experiments WHERE name = 'completed'")
    refused = det_master(site, "restore", str(backup))
    assert refused.exit_code == 1 and "not empty" in refused.output and "--force" in \
        refused.output and "Traceback" not in refused.output
    assert det_master(site, "backup", str(backup)).exit_code == 1  # no overwrite by default
    restored = det_master(site, "restore", "--force", str(backup), "--json")
    assert restored.exit_code == 0, restored.output
    assert count(site["url"], "experiments") == 6 and count(site["url"], "metrics") > 0
    assert schema_revision(site["url"]) == HEAD_REVISION
    assert json.loads(restored.stdout)["checkpoints"]["unknown_on_disk"] == []


def test_restore_refuses_a_backup_of_a_newer_schema(empty_site: dict[str, Any]) -> None:
    site = empty_site
    newer = f"{int(max(known_revisions())) + 1:04d}"
    execute(site["url"], f"UPDATE alembic_version SET version_num = '{newer}'")
    backup = site["tmp"] / "newer.backup"
    assert det_master(site, "backup", str(backup)).exit_code == 0
    result = det_master(site, "restore", "--force", str(backup))
    assert result.exit_code == 1
    assert f"schema revision {newer} is newer than this hpcdet" in result.output


def test_a_damaged_backup_changes_nothing(empty_site: dict[str, Any]) -> None:
    site = empty_site
    backup = site["tmp"] / "master.backup"
    assert det_master(site, "backup", str(backup)).exit_code == 0
    data = backup.read_bytes()
    backup.write_bytes(data[: len(data) // 2])
    result = det_master(site, "restore", "--force", str(backup))
    assert result.exit_code == 1 and "checksum" in result.output
    assert schema_revision(site["url"]) == HEAD_REVISION


def test_a_restore_that_fails_midway_leaves_the_old_database(site: dict[str, Any]) -> None:
    """The manifest matches (rewritten), but the copy itself is cut short: the restore fails
    in its temporary (SQLite) or its one transaction (PostgreSQL)."""
    from hpcdet.master.backups.manifest import make_manifest, write_manifest

    backup = site["tmp"] / "master.backup"
    assert det_master(site, "backup", str(backup)).exit_code == 0
    manifest = json.loads((site["tmp"] / "master.backup.manifest.json").read_text())
    execute(site["url"], "DELETE FROM experiments WHERE name = 'completed'")
    backup.write_bytes(backup.read_bytes()[: 3 * backup.stat().st_size // 4])
    write_manifest(backup, make_manifest(backup, manifest["database"], HEAD_REVISION, "x"))
    result = det_master(site, "restore", "--force", str(backup))
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert count(site["url"], "experiments") == 5  # as before the restore, whole
    assert not list(site["tmp"].glob(".*.partial"))


def test_migrate_check_says_what_an_upgrade_would_do(db_url: str, tmp_path: Path) -> None:
    site = make_site(db_url, tmp_path)
    load_fixture(db_url, tmp_path / "jobs")
    pending = det_master(site, "migrate", "--check", "--json")
    assert pending.exit_code == 1
    answer = json.loads(pending.stdout)
    assert answer["current"] == "0001" and answer["head"] == HEAD_REVISION
    assert [m["revision"] for m in answer["pending"]] == known_revisions()[1:]
    assert all(m["message"] for m in answer["pending"])
    assert schema_revision(db_url) == "0001"  # --check changes nothing
    applied = det_master(site, "migrate")
    assert applied.exit_code == 0 and f"now at {HEAD_REVISION}" in applied.stdout
    assert det_master(site, "migrate", "--check").exit_code == 0


def test_the_master_refuses_a_database_newer_than_its_code(empty_site: dict[str, Any],
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    site = empty_site
    # The master (run in this process) points its children at its metrics directory through
    # the environment: undone after the test (setenv records that it was unset, delenv starts
    # the test without it), or this process's later /metrics tests would read that directory.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "metrics"))
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")
    execute(site["url"], "UPDATE alembic_version SET version_num = '9999'")
    check = det_master(site, "migrate", "--check")
    assert check.exit_code == 2 and "NEWER" in check.stdout
    started = det_master(site)  # the master itself: it stops before it serves anything
    assert started.exit_code == 1
    lines = started.output.strip().splitlines()
    assert len(lines) == 1 and "9999" in lines[0] and HEAD_REVISION in lines[0], lines


def test_checkpoints_reconcile_reports_and_deletes_nothing(site: dict[str, Any]) -> None:
    root = site["jobs"] / "checkpoints"
    for uuid in CHECKPOINTS[:-1]:  # the last one is missing on disk
        (root / uuid).mkdir(parents=True)
    stranger = root / "11111111-2222-3333-4444-555555555555"  # written after a backup
    stranger.mkdir()
    (root / "notes").mkdir()  # not a checkpoint: not reported
    result = det_master(site, "checkpoints", "reconcile", "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["unknown_on_disk"] == [str(stranger)]
    assert [m["uuid"] for m in answer["missing_on_disk"]] == [CHECKPOINTS[-1]]
    assert answer["checkpoints_checked"] == len(CHECKPOINTS)
    assert stranger.is_dir() and (root / "notes").is_dir()
    text = det_master(site, "checkpoints", "reconcile")
    assert f"unknown to the database: {stranger}" in text.stdout


@pytest.fixture
def settings(site: dict[str, Any]) -> MasterSettings:
    """The master's settings on the site's database (for the conftest's app and reconciler)."""
    rm = replace(ResourceManagerSettings(), job_storage_root=str(site["jobs"]),
                 master_host="master.example", cluster_name="unit")
    return MasterSettings(db_url=site["url"], resource_manager=rm, state_dir=str(site["tmp"]))


def test_a_restored_trial_whose_job_the_scheduler_lost_runs_again(
        site: dict[str, Any], app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    """docs/admin/backups.md: a job the restored database knows but the scheduler does not
    (it ended and left accounting, or the restore is on another cluster) is a failed run;
    the trial runs again from its latest checkpoint while max_restarts allows."""
    sessions = make_session_factory(app.config["HPCDET_ENGINE"])
    with sessions.begin() as session:
        experiment = session.scalars(select(Experiment).where(Experiment.name == "running")).one()
        experiment.config = {**experiment.config, "max_restarts": 1}
    backup = site["tmp"] / "master.backup"
    assert det_master(site, "backup", str(backup)).exit_code == 0
    app.config["HPCDET_ENGINE"].dispose()  # the master is stopped for a restore
    assert det_master(site, "restore", "--force", str(backup)).exit_code == 0
    fake.phases.update({"1001": JobPhase.MISSING, "1002": JobPhase.PENDING})
    reconciler.cycle()  # missing once: maybe a busy controller; nothing changes yet
    reconciler.cycle()
    with sessions() as session:
        trial = session.scalars(select(Trial).where(Trial.experiment_id == experiment.id)).one()
        assert (trial.state, trial.restarts) == ("QUEUED", 1)
        assert trial.latest_checkpoint == CHECKPOINTS[0]  # where it starts again
    reconciler.cycle()
    assert len(fake.submitted) == 1  # its new job


DOCS = Path(__file__).resolve().parents[3] / "docs" / "admin"


def test_the_documented_commands_and_fields_exist() -> None:
    """Every det-master command line in backups.md and upgrades.md names a real command and
    its real options; the documented --json and manifest fields are the ones written."""
    import re

    import click

    from hpcdet.master.backups.manifest import Manifest
    from hpcdet.master.schema_check import SchemaPlan

    for page in ("backups.md", "upgrades.md"):
        text = (DOCS / page).read_text()
        for line in re.findall(r"det-master (?:--config \S+ )?([a-z][^\n`']*)", text):
            words = line.split()
            command: click.Command = main
            while isinstance(command, click.Group) and words and words[0] in command.commands:
                command = command.commands[words.pop(0)]
            assert command is not main, line
            options = {o for p in [*command.params, *main.params] for o in p.opts}
            assert {w for w in words if w.startswith("--")} <= options, (page, line)
    upgrades = (DOCS / "upgrades.md").read_text()
    for key in SchemaPlan("0001", HEAD_REVISION).as_json():
        assert f"`{key}`" in upgrades, key
    backups = (DOCS / "backups.md").read_text()
    for key in Manifest("sqlite", "0001", "0", "now", 0, "").as_json():
        assert f"`{key}`" in backups or key == "format", key
    from hpcdet.master.db import LOCK_TIMEOUT_SECONDS

    for text in (upgrades, backups):  # the bounded wait for a held table
        assert re.search(rf"waits (at most )?{LOCK_TIMEOUT_SECONDS} s", text)


def test_a_sqlite_backup_is_consistent_while_the_master_writes(tmp_path: Path) -> None:
    """The master's writers go on during the copy (WAL mode, as the master runs SQLite); the
    copy is the database at one moment: every batch whole, none half."""
    import sqlite3
    import threading

    from hpcdet.master.backups.sqlite_backup import backup_sqlite

    source = tmp_path / "master.sqlite"
    db = sqlite3.connect(source)
    db.executescript("PRAGMA journal_mode=WAL; CREATE TABLE alembic_version (version_num TEXT);"
                     "INSERT INTO alembic_version VALUES ('0019'); CREATE TABLE t (batch INT);")
    db.executemany("INSERT INTO t VALUES (0)", [()] * 20_000)
    db.commit()
    stop, batches = threading.Event(), [0]

    def writer() -> None:  # the master: batches of 100 rows, each one transaction
        connection = sqlite3.connect(source, timeout=30)
        while not stop.is_set() or batches[0] < 3:
            batches[0] += 1
            with connection:
                connection.executemany("INSERT INTO t VALUES (?)", [(batches[0],)] * 100)
        connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while batches[0] < 3:
            stop.wait(0.01)
        assert backup_sqlite(source, tmp_path / "copy.sqlite", lambda *_: None) == "0019"
    finally:
        stop.set()
        thread.join()
    copy = sqlite3.connect(tmp_path / "copy.sqlite")
    counts = copy.execute("SELECT batch, count(*) FROM t WHERE batch > 0 GROUP BY batch").fetchall()
    copy.close()
    assert counts and {n for _, n in counts} == {100}  # whole batches only
    assert [b for b, _ in counts] == list(range(1, len(counts) + 1))  # a prefix of them


@pytest.mark.postgres
def test_migrate_check_on_a_database_it_cannot_read(postgres_admin_url: str) -> None:
    url = sa.engine.make_url(postgres_admin_url).set(username="hpcdet_no_such_role",
                                                     password="s3cret")
    result = CliRunner().invoke(main, ["--db-url", url.render_as_string(hide_password=False),
                                       "migrate", "--check"])
    assert result.exit_code == 2 and "cannot read the database" in result.output
    assert "hpcdet_no_such_role" in result.output and "s3cret" not in result.output


@pytest.fixture
def table_held(postgres_url: str, monkeypatch: pytest.MonkeyPatch
               ) -> Iterator[tuple[str, Any]]:
    """A fresh PostgreSQL database and a second session on it (a master still running, for
    _hold_every_table); waits for locks cut to 1 s."""
    from hpcdet.master import db

    monkeypatch.setattr(db, "LOCK_TIMEOUT_SECONDS", 1)
    engine = sa.create_engine(postgres_url)
    connection = engine.connect()
    try:
        yield postgres_url, connection
    finally:
        connection.close()
        engine.dispose()


def _hold_every_table(connection: Any) -> None:
    tables = ", ".join(f'"{name}"' for name in sa.inspect(connection).get_table_names())
    connection.execute(sa.text("SET application_name = 'still-running-master'"))
    connection.execute(sa.text(f"LOCK TABLE {tables} IN ACCESS SHARE MODE"))


@pytest.mark.postgres
def test_a_migration_waits_for_a_held_table_a_bounded_time_and_says_who_holds_it(
        table_held: tuple[str, Any], tmp_path: Path) -> None:
    url, connection = table_held
    load_fixture(url, tmp_path / "jobs")
    _hold_every_table(connection)
    result = CliRunner().invoke(main, ["--db-url", url, "migrate"])
    assert result.exit_code == 1, result.output
    assert "the schema upgrade waited 1 s" in result.output, result.output
    assert "still-running-master" in result.output and "idle in transaction" in result.output
    connection.rollback()
    assert schema_revision(url) == "0001"  # nothing changed
    assert CliRunner().invoke(main, ["--db-url", url, "migrate"]).exit_code == 0


@pytest.mark.postgres
def test_a_restore_over_a_database_in_use_gives_up_and_changes_nothing(
        table_held: tuple[str, Any], tmp_path: Path) -> None:
    url, connection = table_held
    load_fixture(url, tmp_path / "jobs")
    migrate(url)
    site = make_site(url, tmp_path)
    backup = tmp_path / "master.backup"
    assert det_master(site, "backup", str(backup)).exit_code == 0
    execute(url, "DELETE FROM metrics")
    _hold_every_table(connection)
    result = det_master(site, "restore", "--force", str(backup))
    assert result.exit_code == 1 and "the restore waited 1 s" in result.output, result.output
    assert "still-running-master" in result.output
    connection.rollback()
    assert count(url, "metrics") == 0 and count(url, "experiments") > 0  # as it was
