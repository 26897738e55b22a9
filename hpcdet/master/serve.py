"""``det-master``: migrate the database, start the reconciler, serve the API with gunicorn."""

from __future__ import annotations

import logging
import multiprocessing
import signal
import sys
import threading
from typing import Any

import click

from hpcdet.errors import ConfigError
from hpcdet.master.settings import MasterSettings, load_settings

log = logging.getLogger("hpcdet.master")


@click.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              envvar="HPCDET_MASTER_CONFIG", help="master.yaml (env: HPCDET_MASTER_CONFIG).")
@click.option("--host", default=None, help="Address to listen on (default 0.0.0.0).")
@click.option("--port", type=int, default=None, help="Port to listen on (default 8080).")
@click.option("--db-url", default=None, envvar="HPCDET_DB_URL",
              help="SQLAlchemy URL, e.g. postgresql+psycopg2://user@host/db (env: HPCDET_DB_URL).")
def main(config_path: str | None, host: str | None, port: int | None,
         db_url: str | None) -> None:
    """Run the hpcdet master: REST API under /api/v1, status page at /, reconciler loop."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        settings = _with_overrides(load_settings(config_path), host, port, db_url)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    from hpcdet.master.db import migrate

    migrate(settings.db_url)
    reconciler = _start_reconciler(settings)
    log.info("hpcdet master on %s (listening on %s:%s, database %s)", settings.master_url,
             settings.host, settings.port, settings.database_kind)
    try:
        _serve(settings)
    finally:
        reconciler.terminate()
        reconciler.join(10)


def _with_overrides(settings: MasterSettings, host: str | None, port: int | None,
                    db_url: str | None) -> MasterSettings:
    from dataclasses import replace

    return replace(settings, host=host or settings.host, port=port or settings.port,
                   db_url=db_url or settings.db_url)


def _start_reconciler(settings: MasterSettings) -> multiprocessing.process.BaseProcess:
    # A separate process: exactly one reconciler however many web workers serve requests.
    process = multiprocessing.get_context("spawn").Process(
        target=run_reconciler, args=(settings,), name="hpcdet-reconciler", daemon=True)
    process.start()
    return process


def run_reconciler(settings: MasterSettings) -> None:
    """Entry point of the reconciler process."""
    from hpcdet.dispatcher import get_backend
    from hpcdet.master.db import make_engine, make_session_factory
    from hpcdet.master.reconciler import Reconciler

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    backend = get_backend(settings.resource_manager.type,
                          template_dir=settings.resource_manager.template_dir)
    sessions = make_session_factory(make_engine(settings.db_url))
    Reconciler(settings, sessions, backend).run_forever(stop)


def _serve(settings: MasterSettings) -> None:
    from gunicorn.app.base import BaseApplication

    from hpcdet.master.app import create_app

    class _Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            options: dict[str, Any] = {
                "bind": f"{settings.host}:{settings.port}", "workers": settings.workers,
                "threads": settings.threads, "worker_class": "gthread", "timeout": 120,
                "accesslog": None, "errorlog": "-", "loglevel": "warning",
            }
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            return create_app(settings)

    _Server().run()


if __name__ == "__main__":
    sys.exit(main())
