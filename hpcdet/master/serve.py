"""``det-master``: migrate the database, start the reconciler, serve the API with gunicorn."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hpcdet.errors import ConfigError
from hpcdet.master import backup_cli, master_log
from hpcdet.master.doctor import doctor_command
from hpcdet.master.init_cli import init_command
from hpcdet.master.settings.core import MasterSettings, load_settings

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger(__name__)
# Commands that run before there is a loadable master.yaml (they read --config themselves).
NO_CONFIG_COMMANDS = ("init", "doctor")


@click.group(invoke_without_command=True)
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              envvar="HPCDET_MASTER_CONFIG", help="master.yaml (env: HPCDET_MASTER_CONFIG).")
@click.option("--host", default=None, help="Address to listen on (default 0.0.0.0).")
@click.option("--port", type=int, default=None, help="Port to listen on (default 8080).")
@click.option("--db-url", default=None, envvar="HPCDET_DB_URL",
              help="SQLAlchemy URL, e.g. postgresql+psycopg2://user@host/db (env: HPCDET_DB_URL).")
@click.pass_context
def main(ctx: click.Context, config_path: str | None, host: str | None, port: int | None,
         db_url: str | None) -> None:
    """Run the hpcdet master: REST API under /api/v1, status page at /, reconciler loop.

    With a command (init, doctor, sync-accounts, vacuum-metrics, backup, restore, migrate,
    checkpoints) it runs that instead of the master; init and doctor need no loadable
    config (doctor reports one that does not load).
    """
    # Nothing the master creates (database, job directories, scripts) is for other users.
    os.umask(0o077)
    # A command's output is what it prints; the master's is its log.
    level = logging.INFO if ctx.invoked_subcommand is None else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if ctx.invoked_subcommand in NO_CONFIG_COMMANDS:
        ctx.obj = config_path  # init needs no settings; doctor reports a bad config itself
        return
    try:
        settings = _with_overrides(load_settings(config_path), host, port, db_url)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    ctx.obj = settings
    if ctx.invoked_subcommand is None:
        _run_master(settings)


def _run_master(settings: MasterSettings) -> None:
    from hpcdet.master.db import DatabaseBusyError, SchemaTooNewError, migrate
    from hpcdet.master.monitoring import multiproc

    refuse_root_owner_mode(settings)
    # Before anything imports prometheus_client: every process counts into files there.
    multiproc.prepare(private_state_dir(settings.state_dir))
    refuse_unusable_backend(settings)
    master_log.install(settings.state_dir)  # for det master logs
    try:
        migrate(settings.db_url)
    except (SchemaTooNewError, DatabaseBusyError) as exc:
        raise click.ClickException(str(exc)) from None
    supervisor = ReconcilerSupervisor(settings)
    supervisor.start()
    log.info("hpcdet master on %s (listening on %s:%s, database %s)", settings.master_url,
             settings.host, settings.port, settings.database_kind)
    warn_if_open(settings)
    refuse_port_in_use(settings.host, settings.port)
    try:
        _serve(settings)
    finally:
        supervisor.stop()


def warn_if_open(settings: MasterSettings) -> None:
    """Say loudly that an open master believes whatever name a caller claims."""
    if settings.auth_mode == "open":
        log.warning("auth.mode is open: ANYONE who can reach this master can claim ANY user "
                    "name (X-Hpcdet-User); use auth.mode: munge on a shared cluster "
                    "(docs/admin/security.md)")


def refuse_root_owner_mode(settings: MasterSettings, euid: int | None = None) -> None:
    """Jobs as their owners need the master to run as its service account: the run-as
    helper (and sudo's rule) refuse root; say so at start rather than at every submission."""
    euid = os.geteuid() if euid is None else euid
    if euid == 0 and settings.runas.owner_mode:
        raise click.ClickException(
            "security.jobs_run_as: owner: run the master as its service account, not root "
            "(runuser -u hpcdet -- det-master ...; docs/admin/security.md)")
    if euid == 0:
        log.warning("the master runs as root: every job runs as root too; on a shared "
                    "cluster run it as a service account (docs/admin/security.md)")


def refuse_unusable_backend(settings: MasterSettings) -> None:
    """Refuse to start, in one line, with a scheduler backend that cannot work on this host
    (``resource_manager.slurm_api: pyslurm`` without a pyslurm built for this Slurm)."""
    from hpcdet.master.scheduling.backend import startup_problem

    problem = startup_problem(settings)
    if problem is not None:
        raise click.ClickException(problem)


def private_state_dir(state_dir: str) -> Path:
    """Create the master's state dir, or take group and other permissions off it (0700)."""
    path = Path(state_dir).expanduser()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


@main.command("sync-accounts")
@click.option("--dry-run", is_flag=True,
              help="Only print the sacctmgr commands; change nothing.")
@click.pass_obj
def sync_accounts_command(settings: MasterSettings, dry_run: bool) -> None:
    """Bring Slurm's fair-share accounts in line with master.yaml and the database.

    Prints the exact sacctmgr commands. They are run only when the master may (fair_share
    manage_accounts true, or auto and this user is a Slurm operator or root) and not with
    --dry-run; otherwise they are printed for a Slurm administrator to run.
    """
    from hpcdet.dispatcher.commands import CommandRunner
    from hpcdet.errors import HpcdetError
    from hpcdet.master.db import make_engine, make_session_factory, migrate, session_scope
    from hpcdet.master.queue.fair_share import describe, sync_accounts

    try:
        migrate(settings.db_url)
        with session_scope(make_session_factory(make_engine(settings.db_url))) as session:
            result = sync_accounts(session, CommandRunner(), settings, dry_run=dry_run)
    except HpcdetError as exc:
        raise click.ClickException(str(exc)) from None
    for line in describe(result):
        click.echo(line)


@main.command("vacuum-metrics")
@click.option("--dry-run", is_flag=True, help="Only count the rows it would delete.")
@click.option("--experiment", "experiment_ids", type=click.IntRange(min=1), multiple=True,
              help="Only this experiment (repeatable); default: every experiment.")
@click.option("--batch-size", type=click.IntRange(100, 1_000_000), default=5_000,
              show_default=True, help="Rows deleted per transaction.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_obj
def vacuum_metrics_command(settings: MasterSettings, dry_run: bool,
                           experiment_ids: tuple[int, ...], batch_size: int,
                           as_json: bool) -> None:
    """Thin old training metrics as metrics_retention says (master.yaml, and each
    experiment's own metrics_retention). Validations are never touched.

    Safe while the master runs (short transactions) and idempotent; --dry-run prints what
    it would delete.
    """
    from hpcdet.master.retention_cli import run_vacuum

    run_vacuum(settings, dry_run=dry_run, experiment_ids=experiment_ids,
               batch_size=batch_size, as_json=as_json)


def _with_overrides(settings: MasterSettings, host: str | None, port: int | None,
                    db_url: str | None) -> MasterSettings:
    from dataclasses import replace

    return replace(settings, host=host or settings.host, port=port or settings.port,
                   db_url=db_url or settings.db_url)


class ReconcilerSupervisor:
    """Runs the reconciler in its own process and restarts it if it ever dies.

    A separate process: exactly one reconciler however many web workers serve requests.
    """

    CHECK_SECONDS = 5.0

    def __init__(self, settings: MasterSettings) -> None:
        self.settings = settings
        self.process: multiprocessing.process.BaseProcess | None = None
        self._stopping = threading.Event()
        self._owner = os.getpid()
        self._watchdog = threading.Thread(target=self._watch, name="hpcdet-reconciler-watchdog",
                                          daemon=True)

    def start(self) -> None:
        self._spawn()
        self._watchdog.start()

    def _spawn(self) -> None:
        if self.process is not None and self.process.pid is not None:
            from hpcdet.master.monitoring.multiproc import process_exited

            process_exited(self.process.pid)  # its gauges: connections it no longer holds
        self.process = multiprocessing.get_context("spawn").Process(
            target=run_reconciler, args=(self.settings,), name="hpcdet-reconciler", daemon=True)
        self.process.start()

    def _watch(self) -> None:
        while not self._stopping.wait(self.CHECK_SECONDS):
            if self.process is not None and not _alive(self.process):
                log.error("the reconciler exited (code %s); starting it again",
                          self.process.exitcode)
                self._spawn()

    def stop(self) -> None:
        # gunicorn forks its workers from this process: a worker leaving ``main`` passes
        # through the same ``finally`` but owns no reconciler.
        if os.getpid() != self._owner:
            return
        self._stopping.set()
        if self.process is not None:
            self.process.terminate()
            self.process.join(10)


def _alive(process: multiprocessing.process.BaseProcess) -> bool:
    # gunicorn's arbiter reaps every child on SIGCHLD, ours too, after which
    # ``is_alive()`` can no longer tell; ask the kernel whether the pid still exists.
    if process.pid is None or not process.is_alive():
        return False
    try:
        os.kill(process.pid, 0)
    except ProcessLookupError:
        return False
    return True


def run_reconciler(settings: MasterSettings) -> None:
    """Entry point of the reconciler process."""
    from hpcdet.master.composition import make_reconciler

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    master_log.install(settings.state_dir)  # a spawned process: its own handler
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    _stop_when_orphaned(stop)
    from hpcdet.master.scheduling.backend import make_backend

    backend = make_backend(settings)
    sessions = _instrumented_sessions(settings)
    make_reconciler(settings, sessions, backend).run_forever(stop)


def _instrumented_sessions(settings: MasterSettings) -> sessionmaker[Session]:
    """The reconciler's sessions, its pool and scheduler commands counted for /metrics."""
    from hpcdet.master.db import make_engine, make_session_factory
    from hpcdet.master.monitoring import instruments

    engine = make_engine(settings.db_url)
    instruments.watch_pool(engine)
    instruments.install_command_observer()
    return make_session_factory(engine)


def _stop_when_orphaned(stop: threading.Event, interval: float = 1.0) -> None:
    """Set ``stop`` once the master process that started this one is gone.

    A master killed with SIGKILL cannot stop its reconciler; left running, it would go on
    beside the one a restarted master starts (two reconcilers submitting for the same
    trials). Checked once a second: the cycle in progress finishes, then it exits.
    """
    parent = os.getppid()

    def watch() -> None:
        while not stop.wait(interval):
            if os.getppid() != parent:
                log.warning("the master process %s is gone; the reconciler stops", parent)
                stop.set()

    threading.Thread(target=watch, name="hpcdet-orphan-watch", daemon=True).start()


# An asyncio worker (uvicorn): the proxy holds each WebSocket as a coroutine, not a thread;
# the Flask views run in each worker's pool of webserver.threads threads (proxy/asgi.py).
WORKER_CLASS = "uvicorn_worker.UvicornWorker"


def gunicorn_options(settings: MasterSettings) -> dict[str, Any]:
    """gunicorn's settings for the master (TLS's too, when configured).

    ``reuse_port``: each worker listens on a socket of its own (SO_REUSEPORT) and the kernel
    spreads new connections over them. On one shared socket an asyncio worker accepts every
    connection waiting at once: 64 reporters connecting together all went to one of the two
    workers, and stayed there (keep-alive), leaving the other idle (docs/performance.md).

    ``forwarded_allow_ips``: whose ``X-Forwarded-For``/``-Proto`` the workers believe
    (uvicorn's proxy headers): only ``webserver.trusted_proxies``, none by default. Left to
    gunicorn's default (``127.0.0.1``) a caller on the master's host, or anything relaying
    from it, could claim another client address and make HTTPS look like HTTP, and the
    session cookie would lose ``Secure`` (issue 28, finding 5).
    """
    options: dict[str, Any] = {
        "bind": f"{settings.host}:{settings.port}", "workers": settings.workers,
        "worker_class": WORKER_CLASS, "timeout": 120, "reuse_port": True,
        "accesslog": None, "errorlog": "-", "loglevel": "warning",
        "forwarded_allow_ips": ",".join(settings.trusted_proxies),
        "child_exit": _worker_exited,
    }
    if settings.tls is not None:
        options.update(settings.tls.gunicorn_options())
    return options


def _worker_exited(_server: Any, worker: Any) -> None:
    """gunicorn's hook: a worker ended; its live gauges no longer count (/metrics)."""
    from hpcdet.master.monitoring.multiproc import process_exited

    process_exited(worker.pid)


def refuse_port_in_use(host: str, port: int) -> None:
    """Fail at start if something listens on the port already: with ``reuse_port`` a second
    master of the same user would otherwise share it silently with the first."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror}") \
                from None


def _serve(settings: MasterSettings) -> None:
    from gunicorn.app.base import BaseApplication

    from hpcdet.master.app import create_app
    from hpcdet.master.proxy.asgi import create_asgi_app

    class _Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            options = gunicorn_options(settings)
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            return create_asgi_app(create_app(settings), settings.threads)

    _Server().run()


main.add_command(init_command)
main.add_command(doctor_command)
backup_cli.register(main)  # backup, restore, migrate, checkpoints (hpcdet/master/backup_cli.py)

if __name__ == "__main__":
    sys.exit(main())
