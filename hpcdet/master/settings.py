"""The master's configuration: ``master.yaml`` plus environment overrides.

Every key is checked at start; an error names the key and the reason, e.g.
``<master.yaml>.resource_manager.container_run_type: must be one of apptainer, ...``.
Environment variables win over the file: ``HPCDET_DB_URL`` (database URL),
``HPCDET_MASTER_PORT``, ``HPCDET_JOB_STORAGE_ROOT``.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hpcdet.errors import ConfigError
from hpcdet.yaml_errors import yaml_error_line

CONTAINER_RUN_TYPES = ("apptainer", "singularity", "enroot", "podman", "none")
SLOT_TYPES = ("cpu", "cuda", "rocm")
ROOT = "<master.yaml>"


@dataclass(frozen=True)
class ResourceManagerSettings:
    """``resource_manager:`` — how trials become scheduler jobs."""

    type: str = "slurm"
    cluster_name: str = "hpcdet"
    master_host: str = field(default_factory=socket.gethostname)
    master_port: int | None = None  # defaults to the port the master listens on
    job_storage_root: str = str(Path.home() / ".hpcdet" / "jobs")
    container_run_type: str = "none"
    apptainer_image_root: str | None = None
    slot_type: str = "cpu"
    default_compute_resource_pool: str | None = None
    template_dir: str | None = None  # a site's own job-script templates, searched first
    # Seconds before a job's time limit at which Slurm sends SIGUSR2 (--signal=USR2@N), for
    # the trial to checkpoint and exit; must be well below the shortest partition MaxTime.
    walltime_signal_seconds: int = 120


@dataclass(frozen=True)
class MasterSettings:
    """Everything the master reads at start."""

    host: str = "0.0.0.0"
    port: int = 8080
    db_url: str = ""
    require_user: bool = False
    reconcile_interval: float = 5.0
    workers: int = 2
    threads: int = 8
    checkpoint_storage: Mapping[str, Any] = field(default_factory=dict)
    resource_manager: ResourceManagerSettings = field(default_factory=ResourceManagerSettings)
    state_dir: str = str(Path.home() / ".hpcdet")

    @property
    def master_url(self) -> str:
        """The address compute nodes and users reach the master at."""
        rm = self.resource_manager
        return f"http://{rm.master_host}:{rm.master_port or self.port}"

    @property
    def database_kind(self) -> str:
        return self.db_url.split(":", 1)[0].split("+", 1)[0]


def load_settings(path: str | os.PathLike[str] | None = None,
                  environ: Mapping[str, str] | None = None) -> MasterSettings:
    """Read ``path`` (optional), apply environment overrides and defaults, validate."""
    environ = os.environ if environ is None else environ
    doc = _read_yaml(Path(path)) if path else {}
    errors: list[str] = []
    settings = _build(doc, environ, errors)
    if errors:
        raise ConfigError(sorted(errors), title=f"invalid master configuration{_where(path)}")
    return settings


def _where(path: str | os.PathLike[str] | None) -> str:
    return f" ({path})" if path else ""


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror}"]) from exc
    except yaml.YAMLError as exc:
        raise ConfigError([yaml_error_line(exc, str(path))]) from exc
    if not isinstance(doc, dict):
        raise ConfigError([f"{ROOT}: must be a mapping"])
    return doc


_TOP_KEYS = {"host", "port", "db", "auth", "reconciler", "webserver", "checkpoint_storage",
             "resource_manager", "state_dir"}
_RM_KEYS = {"type", "cluster_name", "master_host", "master_port", "job_storage_root",
            "container_run_type", "apptainer_image_root", "singularity_image_root", "slot_type",
            "default_compute_resource_pool", "template_dir", "walltime_signal_seconds"}


def _build(doc: Mapping[str, Any], environ: Mapping[str, str], errors: list[str]) -> MasterSettings:
    _unknown(doc, _TOP_KEYS, ROOT, errors)
    get = _Getter(doc, ROOT, errors)
    state_dir = get.text("state_dir", MasterSettings.state_dir)
    port = int(environ.get("HPCDET_MASTER_PORT") or get.integer("port", 8080, lo=1, hi=65535))
    db = get.section("db")
    db_url = environ.get("HPCDET_DB_URL") or _Getter(db, f"{ROOT}.db", errors).text(
        "url", f"sqlite:///{Path(state_dir).expanduser() / 'hpcdet.sqlite'}")
    return MasterSettings(
        host=get.text("host", "0.0.0.0"),
        port=port,
        db_url=db_url,
        require_user=_Getter(get.section("auth"), f"{ROOT}.auth", errors).flag(
            "require_user", False),
        reconcile_interval=_Getter(get.section("reconciler"), f"{ROOT}.reconciler", errors).number(
            "interval_seconds", 5.0, lo=0.1),
        workers=_Getter(get.section("webserver"), f"{ROOT}.webserver", errors).integer(
            "workers", 2, lo=1, hi=64),
        threads=_Getter(get.section("webserver"), f"{ROOT}.webserver", errors).integer(
            "threads", 8, lo=1, hi=256),
        checkpoint_storage=get.section("checkpoint_storage"),
        resource_manager=_build_rm(get.section("resource_manager"), environ, errors),
        state_dir=state_dir,
    )


def _build_rm(doc: Mapping[str, Any], environ: Mapping[str, str],
              errors: list[str]) -> ResourceManagerSettings:
    where = f"{ROOT}.resource_manager"
    _unknown(doc, _RM_KEYS, where, errors)
    get = _Getter(doc, where, errors)
    default = ResourceManagerSettings()
    return ResourceManagerSettings(
        type=get.choice("type", "slurm", ("slurm",)),
        cluster_name=get.text("cluster_name", default.cluster_name),
        master_host=get.text("master_host", default.master_host),
        master_port=get.opt_integer("master_port", lo=1, hi=65535),
        job_storage_root=environ.get("HPCDET_JOB_STORAGE_ROOT")
        or get.text("job_storage_root", default.job_storage_root),
        container_run_type=get.choice("container_run_type", "none", CONTAINER_RUN_TYPES),
        apptainer_image_root=get.opt_text("apptainer_image_root")
        or get.opt_text("singularity_image_root"),
        slot_type=get.choice("slot_type", "cpu", SLOT_TYPES),
        default_compute_resource_pool=get.opt_text("default_compute_resource_pool"),
        template_dir=get.opt_text("template_dir"),
        walltime_signal_seconds=get.integer("walltime_signal_seconds",
                                            default.walltime_signal_seconds, lo=1, hi=65535),
    )


def _unknown(doc: Mapping[str, Any], known: set[str], where: str, errors: list[str]) -> None:
    for key in sorted(set(doc) - known):
        errors.append(f"{where}.{key}: unknown key (known: {', '.join(sorted(known))})")


class _Getter:
    """Typed reads from one mapping; each bad value adds one error naming its key."""

    def __init__(self, doc: Mapping[str, Any], where: str, errors: list[str]) -> None:
        self.doc, self.where, self.errors = doc, where, errors

    def _get(self, key: str, default: Any, ok: Callable[[Any], bool], want: str) -> Any:
        value = self.doc.get(key)
        if value is None:
            return default
        if not ok(value):
            self.errors.append(f"{self.where}.{key}: must be {want}, got {value!r}")
            return default
        return value

    def section(self, key: str) -> dict[str, Any]:
        return dict(self._get(key, {}, lambda v: isinstance(v, dict), "a mapping"))

    def text(self, key: str, default: str) -> str:
        return str(self._get(key, default, lambda v: isinstance(v, str) and v != "",
                             "a non-empty string"))

    def opt_text(self, key: str) -> str | None:
        value = self._get(key, None, lambda v: isinstance(v, str), "a string")
        return str(value) if value else None

    def flag(self, key: str, default: bool) -> bool:
        return bool(self._get(key, default, lambda v: isinstance(v, bool), "true or false"))

    def integer(self, key: str, default: int, *, lo: int, hi: int) -> int:
        return int(self._get(key, default, lambda v: _is_int(v) and lo <= v <= hi,
                             f"an integer from {lo} to {hi}"))

    def opt_integer(self, key: str, *, lo: int, hi: int) -> int | None:
        value = self._get(key, None, lambda v: _is_int(v) and lo <= v <= hi,
                          f"an integer from {lo} to {hi}")
        return None if value is None else int(value)

    def number(self, key: str, default: float, *, lo: float) -> float:
        return float(self._get(key, default,
                               lambda v: isinstance(v, int | float) and not isinstance(v, bool)
                               and v >= lo, f"a number >= {lo}"))

    def choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        return str(self._get(key, default, lambda v: v in choices,
                             f"one of {', '.join(choices)}"))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
