"""``GET /api/v1/master``, and for cluster admins the master's config and log."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from flask import Response, current_app, request

from hpcdet import __version__
from hpcdet.master import master_log
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, int_arg, settings
from hpcdet.master.errors import DomainError, Forbidden
from hpcdet.master.scheduling.health import (
    CACHE_SECONDS,
    HEADER,
    cached_health,
    header_value,
    load_health,
)
from hpcdet.master.security import authz

MASK = "********"
# Keys whose values are secrets wherever they appear (S3 keys, an Azure connection string,
# passwords, tokens).
_SECRET_KEY = re.compile(r"password|passwd|secret|token|access_key|credential|private"
                         r"|connection_string", re.IGNORECASE)
# user:password@ in a URL (the database's).
_URL_PASSWORD = re.compile(r"(?P<head>://[^/:@]*:)[^@/]*@")


# The answers ``det`` warns on when the master is degraded (the trials' and jobs' states
# they show may be stale): the master itself, experiments, trials, the queue, pools, tasks.
_HEALTH_PREFIXES = ("/api/v1/master", "/api/v1/experiments", "/api/v1/trials",
                    "/api/v1/jobs", "/api/v1/resource-pools", "/api/v1/tasks",
                    "/api/v1/commands", "/api/v1/notebooks", "/api/v1/shells",
                    "/api/v1/tensorboards")


@bp.get("/master")
def master_info() -> Any:
    """Version, cluster and database of this master, its health, and its scheduler (name,
    pending-reason legend, capabilities) for ``det`` and the pages."""
    s = settings()
    return {"version": __version__, "cluster_name": s.resource_manager.cluster_name,
            "database": s.database_kind, "resource_manager": s.resource_manager.type,
            "scheduler": s.resource_manager.scheduler.legend(),
            "url": s.master_url, "auth_mode": s.auth_mode, "health": visible_health()}


@bp.get("/master/health")
def master_health() -> Any:
    """Whether the reconciler reaches the scheduler, how long its cycle and a database
    round trip take, and when it last completed a cycle; ``status`` ok/degraded/starting.
    Like every read, for a caller the master knows (401 where it requires one)."""
    current_user()
    return load_health(db())


def visible_health() -> dict[str, Any]:
    """The health as ``GET /api/v1/master`` (which anyone may read) shows it: whole for a
    caller the master knows, only its ``status`` for anyone else (the problems name
    scheduler errors, hosts and paths of the site)."""
    health = load_health(db())
    try:
        current_user()
    except DomainError:
        return {"status": health["status"]}
    return health


def app_health() -> dict[str, Any]:
    """The master's health for headers and banners: read at most every few seconds per
    worker (``HPCDET_HEALTH_CACHE_SECONDS`` in the app's config, default 2)."""
    cache = current_app.extensions.setdefault("hpcdet_health", {})
    ttl = float(current_app.config.get("HPCDET_HEALTH_CACHE_SECONDS", CACHE_SECONDS))
    return cached_health(db(), cache, ttl)


@bp.after_request
def health_header(response: Response) -> Response:
    """``X-Hpcdet-Health: degraded; <problem>; ...`` on the GET answers ``det`` warns on."""
    if request.method != "GET" or not request.path.startswith(_HEALTH_PREFIXES) \
            or response.status_code >= 400 or request.path.startswith("/api/v1/master/logs"):
        return response
    try:
        value = header_value(app_health())
    except Exception:  # noqa: BLE001 - a health read must never break the answer itself
        return response
    if value:
        response.headers[HEADER] = value
    return response


def _require_admin(what: str) -> None:
    actor = current_user()
    if not authz.is_admin(settings(), actor):
        raise Forbidden("forbidden", f"only a cluster admin (master.yaml auth.admins) may "
                        f"read the master's {what}; {actor!r} is not one")


def masked(value: Any, key: str = "") -> Any:
    """``value`` with secrets replaced by :data:`MASK` (by key name, and URL passwords)."""
    if isinstance(value, Mapping):
        return {str(k): masked(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(v, key) for v in value]
    if value not in (None, "") and _SECRET_KEY.search(key):
        return MASK
    if isinstance(value, str):
        return _URL_PASSWORD.sub(lambda m: f"{m.group('head')}{MASK}@", value)
    return value


@bp.get("/master/config")
def master_config() -> Any:
    """The master's effective settings, secrets masked (cluster admins only)."""
    _require_admin("config")
    s = settings()
    config = masked(dataclasses.asdict(s))
    config["master_url"] = s.master_url
    return {"config": config}


@bp.get("/master/logs")
def master_logs() -> Any:
    """Lines of ``<state_dir>/master.log``: the last ``tail`` (default 100), or whole lines
    from byte ``offset`` (for following); ``offset`` in the answer is where to go on."""
    _require_admin("log")
    path = master_log.log_path(settings().state_dir)
    if request.args.get("offset") not in (None, ""):
        chunk = master_log.read_lines(path, offset=int_arg("offset", 0, hi=2**62))
    else:
        chunk = master_log.read_lines(path, tail=int_arg("tail", 100, lo=1,
                                                          hi=master_log.MAX_TAIL))
    return {"lines": chunk.lines, "offset": chunk.offset}
