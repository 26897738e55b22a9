"""The master's configuration: ``master.yaml`` plus environment overrides.

Every key is checked at start; an error names the key and the reason, e.g.
``<master.yaml>.resource_manager.container_run_type: must be one of apptainer, ...``.
Environment variables win over the file: ``HPCDET_DB_URL`` (database URL),
``HPCDET_MASTER_PORT``, ``HPCDET_JOB_STORAGE_ROOT``.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hpcdet.dispatcher import registry
from hpcdet.dispatcher.batch_args import check_rest_args
from hpcdet.dispatcher.plugin import SchedulerPlugin
from hpcdet.dispatcher.transport.settings import RestSettings, SshSettings
from hpcdet.errors import ConfigError
from hpcdet.master.settings.capability_checks import refuse_unsupported
from hpcdet.master.settings.hardening import HardeningSettings, build_hardening
from hpcdet.master.settings.monitoring import MetricsSettings, build_metrics
from hpcdet.master.settings.pools import (
    SLOT_TYPES,
    CustomPool,
    FairShareSettings,
    PartitionOverride,
    PriorityPolicy,
    SlurmDefaults,
    build_fair_share,
    build_partition_overrides,
    build_priority,
    build_resource_pools,
    build_slurm_defaults,
)
from hpcdet.master.settings.read import Getter, unknown_keys
from hpcdet.master.settings.retention import MetricsRetention, build_retention
from hpcdet.master.settings.runas import RunAsSettings, build_runas
from hpcdet.master.settings.tls import TlsSettings, build_tls
from hpcdet.master.settings.transport import build_transport
from hpcdet.master.settings.webserver import build_trusted_proxies
from hpcdet.yaml_errors import yaml_error_line

CONTAINER_RUN_TYPES = ("apptainer", "singularity", "enroot", "podman", "charliecloud", "none")

ROOT = "<master.yaml>"


@dataclass(frozen=True)
class ResourceManagerSettings:
    """``resource_manager:`` — how trials become scheduler jobs."""

    type: str = "slurm"

    @property
    def scheduler(self) -> SchedulerPlugin:
        """The plug-in of ``type``: everything the master knows of its scheduler."""
        return registry.scheduler(self.type)
    cluster_name: str = "hpcdet"
    master_host: str = field(default_factory=socket.gethostname)
    master_port: int | None = None  # defaults to the port the master listens on
    job_storage_root: str = str(Path.home() / ".hpcdet" / "jobs")
    container_run_type: str = "none"
    apptainer_image_root: str | None = None
    # Where apptainer/singularity keep the images they pull (APPTAINER_CACHEDIR in the job);
    # None: the runtime's default, ~/.apptainer/cache of the job's user.
    image_cache_dir: str | None = None
    # Check bind mounts' host paths and image paths on the master's own file system at
    # submission (hpcdet.master.scheduling.container_checks); false where the master does not
    # see the cluster's file systems.
    container_path_checks: bool = True
    # None: per partition, cuda where its nodes have GPUs and cpu elsewhere (Determined's rule).
    slot_type: str | None = None
    tres_supported: bool = True
    gres_supported: bool = True
    default_compute_resource_pool: str | None = None
    default_aux_resource_pool: str | None = None
    job_project_source: str = "project"  # project | workspace | label[:prefix] -> --wckey
    # How often pools and the queue are read from Slurm (the API serves the cached copy).
    pool_refresh_seconds: float = 15.0
    # Submit the trials of one experiment queued together as one job array where the
    # scheduler takes arrays (Slurm, PBS); false: one job per trial (docs/job-arrays.md).
    job_arrays: bool = True
    slurm_defaults: SlurmDefaults = field(default_factory=SlurmDefaults)
    partition_overrides: Mapping[str, PartitionOverride] = field(default_factory=dict)
    resource_pools: tuple[CustomPool, ...] = ()
    priority: PriorityPolicy = field(default_factory=PriorityPolicy)
    fair_share: FairShareSettings | None = None
    template_dir: str | None = None  # a site's own job-script templates, searched first
    # Seconds before a job's time limit at which Slurm sends SIGUSR2 (--signal=USR2@N), for
    # the trial to checkpoint and exit; must be well below the shortest partition MaxTime.
    walltime_signal_seconds: int = 120
    # resource_manager.transport: None is the local transport; else a login node over SSH,
    # or slurmrestd (Slurm only; job files on the master's own filesystem).
    transport: SshSettings | RestSettings | None = None
    # How the Slurm backend reads its jobs' statuses each cycle: cli (squeue, sacct) or
    # pyslurm (the controller's job table through pyslurm's C API; local transport only,
    # pyslurm built for this Slurm by scripts/build-pyslurm; docs/admin/slurm.md).
    slurm_api: str = "cli"
    # Ask for the scheduler's expedited requeue where the cluster allows it (Slurm 25.11's
    # --requeue=expedite, SlurmctldParameters=enable_expedited_requeue): a trial's job that
    # lost its node runs again at once, at the top of the queue. false: a plain requeue.
    expedited_requeue: bool = True


@dataclass(frozen=True)
class MasterSettings:
    """Everything the master reads at start."""

    host: str = "0.0.0.0"
    port: int = 8080
    db_url: str = ""
    require_user: bool = False
    # open: callers name themselves (X-Hpcdet-User); munge: a MUNGE-proven token only.
    auth_mode: str = "open"
    session_hours: float = 24.0
    # Users who may change (pause, kill, archive...) any experiment, not only their own.
    admins: tuple[str, ...] = ()
    reconcile_interval: float = 5.0
    workers: int = 2
    threads: int = 8
    # webserver.trusted_proxies: whose X-Forwarded-For/-Proto the master believes (a site's
    # reverse proxy; none by default: hpcdet.master.settings.webserver).
    trusted_proxies: tuple[str, ...] = ()
    checkpoint_storage: Mapping[str, Any] = field(default_factory=dict)
    resource_manager: ResourceManagerSettings = field(default_factory=ResourceManagerSettings)
    state_dir: str = str(Path.home() / ".hpcdet")
    # security.jobs_run_as / security.runas_helper (hpcdet.master.settings.runas).
    runas: RunAsSettings = field(default_factory=RunAsSettings)
    # security.storage_roots and security.max_body_mb (hpcdet.master.settings.hardening).
    hardening: HardeningSettings = field(default_factory=HardeningSettings)
    # security.tls: serve HTTPS with this certificate and key (None: plain HTTP).
    tls: TlsSettings | None = None
    # metrics_retention: training metrics thinned by det-master vacuum-metrics.
    metrics_retention: MetricsRetention = field(default_factory=MetricsRetention)
    # metrics: who may scrape GET /metrics (hpcdet.master.settings.monitoring).
    metrics: MetricsSettings = field(default_factory=MetricsSettings)

    @property
    def master_url(self) -> str:
        """The address compute nodes and users reach the master at (https with TLS)."""
        rm = self.resource_manager
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{rm.master_host}:{rm.master_port or self.port}"

    @property
    def identifies_users(self) -> bool:
        """Whether the master tells users apart (munge mode, or open with ``require_user``)."""
        return self.auth_mode == "munge" or self.require_user

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
             "resource_manager", "state_dir", "security", "metrics_retention",
             "metrics"}
_RM_KEYS = {"type", "cluster_name", "master_host", "master_port", "job_storage_root",
            "container_run_type", "apptainer_image_root", "singularity_image_root", "slot_type",
            "image_cache_dir", "container_path_checks",
            "default_compute_resource_pool", "template_dir", "walltime_signal_seconds",
            "tres_supported", "gres_supported", "default_aux_resource_pool",
            "job_project_source", "pool_refresh_seconds", "task_container_defaults", "job_arrays",
            "partition_overrides", "resource_pools", "priority", "fair_share", "transport",
            "slurm_api", "expedited_requeue"}


def _build(doc: Mapping[str, Any], environ: Mapping[str, str], errors: list[str]) -> MasterSettings:
    unknown_keys(doc, _TOP_KEYS, ROOT, errors)
    get = Getter(doc, ROOT, errors)
    state_dir = get.text("state_dir", MasterSettings.state_dir)
    port = int(environ.get("HPCDET_MASTER_PORT") or get.integer("port", 8080, lo=1, hi=65535))
    db = get.section("db")
    db_url = environ.get("HPCDET_DB_URL") or Getter(db, f"{ROOT}.db", errors).text(
        "url", f"sqlite:///{Path(state_dir).expanduser() / 'hpcdet.sqlite'}")
    auth = _auth_getter(get.section("auth"), errors)
    security = _security(get.section("security"), errors)
    settings = MasterSettings(
        host=get.text("host", "0.0.0.0"),
        port=port,
        db_url=db_url,
        require_user=auth.flag("require_user", False),
        auth_mode=auth.choice("mode", "munge", AUTH_MODES),
        session_hours=auth.number("session_hours", 24.0, lo=0.01),
        admins=auth.names("admins"),
        reconcile_interval=Getter(get.section("reconciler"), f"{ROOT}.reconciler", errors).number(
            "interval_seconds", 5.0, lo=0.1),
        workers=Getter(get.section("webserver"), f"{ROOT}.webserver", errors).integer(
            "workers", 2, lo=1, hi=64),
        threads=Getter(get.section("webserver"), f"{ROOT}.webserver", errors).integer(
            "threads", 8, lo=1, hi=256),
        trusted_proxies=build_trusted_proxies(get.section("webserver"), f"{ROOT}.webserver",
                                              errors),
        checkpoint_storage=get.section("checkpoint_storage"),
        resource_manager=_build_rm(get.section("resource_manager"), environ, errors),
        state_dir=state_dir,
        runas=build_runas(security, f"{ROOT}.security", errors),
        hardening=build_hardening(security, f"{ROOT}.security", errors),
        tls=build_tls(security, f"{ROOT}.security", errors),
        metrics_retention=build_retention(get.section("metrics_retention"),
                                          f"{ROOT}.metrics_retention", errors),
        metrics=build_metrics(get.section("metrics"), f"{ROOT}.metrics", errors),
    )
    if settings.runas.owner_mode and settings.auth_mode != "munge":
        # Jobs run as the caller's name: on an open master anyone could name anyone.
        errors.append(f"{ROOT}.security.jobs_run_as: owner needs auth.mode: munge (jobs run "
                      "as the user MUNGE proves; an open master believes any name)")
    transport = settings.resource_manager.transport
    if (settings.runas.owner_mode and isinstance(transport, RestSettings)
            and transport.token_source.type != "scontrol"):
        # Acting as the owner through slurmrestd needs the owner's token, which the run-as
        # helper mints as the owner with the scontrol source's lifespan_seconds; a token
        # file holds one user's (docs/admin/slurmrestd.md).
        errors.append(f"{ROOT}.resource_manager.transport.token_source.type: "
                      "security.jobs_run_as: owner needs type scontrol (a token file holds "
                      "one user's token)")
    return settings


_AUTH_KEYS = {"mode", "require_user", "admins", "session_hours", "pam"}
AUTH_MODES = ("munge", "open")


# Each part of the security settings parses its own keys: build_tls (tls), build_runas
# (jobs_run_as, runas_helper), build_hardening (storage_roots, max_body_mb).
_SECURITY_KEYS = {"tls", "jobs_run_as", "runas_helper", "storage_roots", "max_body_mb"}


def _security(doc: Mapping[str, Any], errors: list[str]) -> Mapping[str, Any]:
    unknown_keys(doc, _SECURITY_KEYS, f"{ROOT}.security", errors)
    return doc


def _auth_getter(doc: Mapping[str, Any], errors: list[str]) -> Getter:
    unknown_keys(doc, _AUTH_KEYS, f"{ROOT}.auth", errors)
    get = Getter(doc, f"{ROOT}.auth", errors)
    if get.flag("pam", False):
        errors.append(f"{ROOT}.auth.pam: PAM sign-in is not available in this version; "
                      "use det user web-login")
    return get


def _build_rm(doc: Mapping[str, Any], environ: Mapping[str, str],
              errors: list[str]) -> ResourceManagerSettings:
    where = f"{ROOT}.resource_manager"
    unknown_keys(doc, _RM_KEYS, where, errors)
    get = Getter(doc, where, errors)
    default = ResourceManagerSettings()
    transport = build_transport(get.section("transport"), f"{where}.transport", errors)
    root = environ.get("HPCDET_JOB_STORAGE_ROOT") or doc.get("job_storage_root")
    if isinstance(transport, SshSettings) and not (isinstance(root, str)
                                                   and root.startswith("/")):
        errors.append(f"{where}.job_storage_root: with transport type ssh, give an absolute "
                      f"path on the login node (the default would be the master's home), "
                      f"got {root!r}")
    scheduler = get.choice("type", registry.names()[0], registry.names())
    rm = ResourceManagerSettings(
        type=scheduler,
        cluster_name=get.text("cluster_name", default.cluster_name),
        master_host=get.text("master_host", default.master_host),
        master_port=get.opt_integer("master_port", lo=1, hi=65535),
        job_storage_root=environ.get("HPCDET_JOB_STORAGE_ROOT")
        or get.text("job_storage_root", default.job_storage_root),
        container_run_type=get.choice("container_run_type", "none", CONTAINER_RUN_TYPES),
        apptainer_image_root=get.opt_text("apptainer_image_root")
        or get.opt_text("singularity_image_root"),
        image_cache_dir=get.opt_text("image_cache_dir"),
        container_path_checks=get.flag("container_path_checks", True),
        slot_type=get.opt_choice("slot_type", SLOT_TYPES),
        tres_supported=get.flag("tres_supported", True),
        gres_supported=get.flag("gres_supported", True),
        default_compute_resource_pool=get.opt_text("default_compute_resource_pool"),
        default_aux_resource_pool=get.opt_text("default_aux_resource_pool"),
        job_project_source=_project_source(get),
        pool_refresh_seconds=get.number("pool_refresh_seconds", default.pool_refresh_seconds,
                                        lo=1.0),
        job_arrays=get.flag("job_arrays", True),
        template_dir=get.opt_text("template_dir"),
        walltime_signal_seconds=get.integer("walltime_signal_seconds",
                                            default.walltime_signal_seconds, lo=1, hi=65535),
        slurm_defaults=build_slurm_defaults(get.section("task_container_defaults"),
                                            f"{where}.task_container_defaults", errors),
        partition_overrides=build_partition_overrides(
            get.section("partition_overrides"), f"{where}.partition_overrides", errors),
        resource_pools=build_resource_pools(doc.get("resource_pools"),
                                            f"{where}.resource_pools", errors),
        priority=build_priority(get.section("priority"), f"{where}.priority", errors),
        fair_share=build_fair_share(doc.get("fair_share"), f"{where}.fair_share", errors),
        transport=transport,
        slurm_api=_slurm_api(get, scheduler, transport),
        expedited_requeue=get.flag("expedited_requeue", True),
    )
    refuse_unsupported(rm.scheduler, where, priority=rm.priority,
                       overrides=rm.partition_overrides, pools=rm.resource_pools,
                       fair_share=rm.fair_share, errors=errors)
    if isinstance(transport, RestSettings):
        if "rest_backend" not in rm.scheduler.modules:
            errors.append(f"{where}.transport.type: rest drives slurmrestd, for Slurm only "
                          f"(resource_manager.type is {rm.type})")
        else:
            _check_rest_args(rm, where, errors)
    return rm


def _slurm_api(get: Getter, scheduler: str,
               transport: SshSettings | RestSettings | None) -> str:
    """``cli`` or, for Slurm on the master's own host, ``pyslurm`` (whether pyslurm is there
    and matches this Slurm is checked when the master starts: scheduling/backend.py)."""
    value = get.text("slurm_api", "cli")
    apis = registry.scheduler(scheduler).status_apis
    if value not in apis:
        get.errors.append(f"{get.where}.slurm_api: must be one of {', '.join(apis)} with "
                          f"{get.where}.type: {scheduler}, got {value!r}")
        return apis[0]
    if value != apis[0] and transport is not None:
        kind = "rest" if isinstance(transport, RestSettings) else "ssh"
        get.errors.append(f"{get.where}.slurm_api: {value} talks to the slurmctld of the "
                          f"master's own slurm.conf, not through {get.where}.transport "
                          f"(type {kind}): use slurm_api: {apis[0]} with that transport")
    return value


def _check_rest_args(rm: ResourceManagerSettings, where: str, errors: list[str]) -> None:
    """The site's own sbatch_args (defaults, partitions, pools), as slurmrestd can be sent
    them: refused at start rather than at each job's submission."""
    found = [(f"{where}.task_container_defaults.slurm.sbatch_args", rm.slurm_defaults),
             *((f"{where}.partition_overrides.{name}.task_container_defaults.slurm.sbatch_args",
                override.slurm)
               for name, override in rm.partition_overrides.items()),
             *((f"{where}.resource_pools[{index}].task_container_defaults.slurm.sbatch_args",
                pool.slurm)
               for index, pool in enumerate(rm.resource_pools))]
    for path, defaults in found:
        if defaults.sbatch_args:
            try:
                check_rest_args(rm.type, defaults.sbatch_args, path)
            except ConfigError as exc:
                errors.extend(exc.errors)


def _project_source(get: Getter) -> str:
    """``project``, ``workspace`` or ``label[:prefix]``: what becomes the job's ``--wckey``."""
    value = get.text("job_project_source", "project")
    if value in ("project", "workspace") or value == "label" or value.startswith("label:"):
        return value
    get.errors.append(f"{get.where}.job_project_source: must be project, workspace or "
                      f"label[:prefix], got {value!r}")
    return "project"
