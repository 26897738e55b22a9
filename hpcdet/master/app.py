"""The Flask application factory."""

from __future__ import annotations

from typing import Any

from flask import Flask, g
from werkzeug.routing import IntegerConverter, Map

from hpcdet.dispatcher import Backend
from hpcdet.master.api import body_limits, nul_guard
from hpcdet.master.db import MAX_DB_INT, make_engine, make_session_factory
from hpcdet.master.monitoring import instruments
from hpcdet.master.reports.ingest import MetricWriter
from hpcdet.master.scheduling.backend import make_backend
from hpcdet.master.settings.core import MasterSettings, load_settings


def create_app(settings: MasterSettings | None = None, *, backend: Backend | None = None) -> Flask:
    """Build the master's WSGI app: the ``/api/v1`` blueprint, the web page, one error shape.

    ``settings`` defaults to :func:`load_settings` (``master.yaml`` from
    ``$HPCDET_MASTER_CONFIG`` and the environment). The database must already be migrated
    (``det-master`` migrates on start).
    """
    import os

    settings = settings or load_settings(os.environ.get("HPCDET_MASTER_CONFIG"))
    app = Flask(__name__)
    # Ids in paths are database integers: a larger one is no such route (404), not an
    # OverflowError deep in the database driver.
    app.url_map.converters["int"] = DatabaseIntConverter
    app.config["HPCDET_SETTINGS"] = settings
    engine = make_engine(settings.db_url)
    app.config["HPCDET_ENGINE"] = engine
    instruments.watch_pool(engine)
    instruments.install_command_observer()
    app.config["HPCDET_SESSION_FACTORY"] = make_session_factory(engine)
    app.config["HPCDET_METRIC_WRITER"] = MetricWriter(engine)
    # The largest body any route takes; each route has its own (api.body_limits).
    app.config["MAX_CONTENT_LENGTH"] = body_limits.EXPERIMENT_CREATE_BYTES
    app.config["HPCDET_BACKEND"] = backend or make_backend(settings)
    _register(app)
    return app


class DatabaseIntConverter(IntegerConverter):
    """``<int:...>`` path parts: 0 to 2**63-1, what a database BIGINT holds."""

    def __init__(self, url_map: Map, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max", MAX_DB_INT)
        super().__init__(url_map, *args, **kwargs)


def _register(app: Flask) -> None:
    from hpcdet.master.api import bp as api_bp
    from hpcdet.master.api.errors import ErrorPages, register_error_handlers
    from hpcdet.master.api.prometheus import bp as prometheus_bp
    from hpcdet.master.security import headers
    from hpcdet.master.transfer import install as install_transfer
    from hpcdet.master.web import bp as web_bp
    from hpcdet.master.web import errors as web_errors

    app.register_blueprint(api_bp)
    app.register_blueprint(web_bp)
    app.register_blueprint(prometheus_bp)
    register_error_handlers(app, ErrorPages(web_errors.wants_page, web_errors.error_page))
    nul_guard.install(app)
    body_limits.install(app)
    headers.install(app)
    install_transfer(app)
    app.teardown_appcontext(_close_session)


def _close_session(exc: BaseException | None) -> None:
    session: Any = g.pop("db_session", None)
    if session is not None:
        if exc is not None:
            session.rollback()
        session.close()
