"""The files ``det-master init`` writes: ``master.yaml``, the systemd units, the sudoers
rule and the commands to run as root. Pure functions of a :class:`SiteChoices`; every value
is checked before it is written (no newline, NUL or control character; paths absolute; names
plain) and quoted for where it goes (YAML: JSON strings; shell: :func:`shlex.quote`;
systemd: checked to need no quoting).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from hpcdet.dispatcher.runas import sudoers_line
from hpcdet.dispatcher.safety import check_safe
from hpcdet.errors import ValidationError

_USER = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")
# What a path may hold to go unquoted into a unit file and a shell line alike.
_UNIT_PATH = re.compile(r"^/[A-Za-z0-9._+/@:=,-]*$")
UNIT = "hpcdet-master.service"
VACUUM_SERVICE = "hpcdet-vacuum-metrics.service"
VACUUM_TIMER = "hpcdet-vacuum-metrics.timer"
SUDOERS = "sudoers-hpcdet-runas"
ROOT_SCRIPT = "install-as-root.sh"
CONFIG = "master.yaml"


@dataclass(frozen=True)
class Detected:
    """What init found on this host (nothing here was asked of the admin)."""

    scheduler: str  # resource_manager.type
    display_name: str
    version: str
    partitions: tuple[str, ...]
    default_partition: str | None
    munge_socket: str | None  # None: no MUNGE socket found
    host: str
    # What the master's unit needs to find the scheduler as init did: PATH (when its
    # commands are outside systemd's default PATH) and the scheduler's config variable.
    environment: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SiteChoices:
    """Where things go on this site: init's flags, with defaults for a shared master."""

    service_user: str = "hpcdet"
    config_dir: str = "/etc/hpcdet"
    state_dir: str = "/var/lib/hpcdet"
    job_root: str = "/srv/hpcdet/jobs"
    db_url: str | None = None
    port: int = 8080
    tls_cert: str | None = None
    tls_key: str | None = None
    admins: tuple[str, ...] = ()
    helper: str = "/usr/local/libexec/hpcdet-runas"
    det_master: str = "/opt/hpcdet/venv/bin/det-master"
    installer: str = "scripts/install-runas-helper"

    def check(self) -> None:
        """Raise :class:`ValidationError` naming the first value that cannot be written."""
        for name in ("config_dir", "state_dir", "job_root", "helper", "det_master"):
            unit_path(getattr(self, name), f"--{name.replace('_', '-')}")
        for name in ("tls_cert", "tls_key"):
            if getattr(self, name) is not None:
                unit_path(getattr(self, name), f"--{name.replace('_', '-')}")
        check_safe(self.installer, "--installer")
        plain_user(self.service_user, "--service-user")
        for admin in self.admins:
            plain_user(admin, "--admin")
        if self.db_url is not None:
            check_safe(self.db_url, "--db-url")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValidationError("--tls-cert and --tls-key go together: give both or neither")

    @property
    def config_path(self) -> str:
        return f"{self.config_dir}/{CONFIG}"


def plain_user(name: str, where: str) -> str:
    """``name`` if it is a plain Unix user name other than root."""
    if not _USER.match(name) or name == "root":
        raise ValidationError(f"{where}: {name!r} is not a plain Unix user name (nor root)")
    return name


def unit_path(path: str, where: str) -> str:
    """``path`` if it is absolute and safe unquoted in a unit file and a shell line."""
    if not _UNIT_PATH.match(path) or "/../" in f"{path}/":
        raise ValidationError(f"{where}: {path!r} must be an absolute path of letters, digits "
                              "and ._+/@:=,- only")
    return path


def _q(value: str) -> str:
    """A YAML scalar: a JSON string is valid YAML and escapes everything."""
    return json.dumps(value)


def master_yaml(site: SiteChoices, found: Detected) -> str:
    """The commented ``master.yaml`` of a shared master (loads with ``load_settings``)."""
    lines = [
        "# master.yaml of a shared hpcdet master, written by `det-master init`.",
        f"# Detected on {found.host}: {found.display_name} ({found.version}); pools "
        f"({len(found.partitions)}): {', '.join(found.partitions) or 'none'}.",
        f"# Check the installation with: det-master doctor --config {site.config_path}",
        "host: 0.0.0.0",
        f"port: {site.port}",
        "# The master's own files (its log; the database too if SQLite). Mode 0700.",
        f"state_dir: {_q(site.state_dir)}",
        *_db_lines(site),
        "auth:",
        "  # Users prove who they are with MUNGE (det login); nobody can claim a name.",
        f"  mode: munge{_munge_note(found)}",
        f"  admins: [{', '.join(_q(a) for a in site.admins)}]",
        "security:",
        "  # Jobs run as their owners through the root-installed helper and one sudo rule",
        "  # (install-as-root.sh; docs/admin/security.md).",
        "  jobs_run_as: owner",
        f"  runas_helper: {_q(site.helper)}",
        *_tls_lines(site),
        "resource_manager:",
        f"  type: {found.scheduler}",
        f"  master_host: {_q(found.host)}",
        "  # Job directories (and, in owner mode, each owner's checkpoints) under",
        "  # <job_storage_root>/<owner>: a shared filesystem with POSIX ACLs.",
        f"  job_storage_root: {_q(site.job_root)}",
        *_pool_lines(found),
    ]
    return "\n".join(lines) + "\n"


def _db_lines(site: SiteChoices) -> list[str]:
    if site.db_url is None:
        return ["# No --db-url: SQLite in state_dir (one host, light use). A shared site uses",
                "# PostgreSQL: db: {url: postgresql+psycopg2://hpcdet@dbhost/hpcdet}"]
    return ["db:", f"  url: {_q(site.db_url)}"]


def _munge_note(found: Detected) -> str:
    if found.munge_socket is None:
        return "  # NO MUNGE socket was found on this host: install and start munge"
    return f"  # munged's socket: {found.munge_socket}"


def _tls_lines(site: SiteChoices) -> list[str]:
    if site.tls_cert is None or site.tls_key is None:
        return ["  # HTTPS: give init --tls-cert and --tls-key, or uncomment (the files must",
                "  # exist, readable by the service account; the key unencrypted, 0600):",
                "  # tls: {cert: /etc/hpcdet/tls/master.crt, key: /etc/hpcdet/tls/master.key}"]
    return ["  tls:", f"    cert: {_q(site.tls_cert)}", f"    key: {_q(site.tls_key)}"]


def _pool_lines(found: Detected) -> list[str]:
    lines = [f"  # Every {found.display_name} pool is a resource pool: "
             f"{', '.join(found.partitions) or 'none found'}."]
    if found.default_partition is not None:
        lines.append(f"  default_compute_resource_pool: {_q(found.default_partition)}")
        lines.append(f"  default_aux_resource_pool: {_q(found.default_partition)}")
    return lines


_HARDENING_COMMON = """\
# Hardening (systemd.exec(5)). The whole filesystem is read-only to the master but its
# state dir and the job root; its /tmp is its own; home directories are read-only.
ProtectSystem=strict
ReadWritePaths={rw}
PrivateTmp=true
ProtectHome=read-only
PrivateDevices=true
ProtectKernelTunables=true
ProtectKernelModules=true
ProtectControlGroups=true
RestrictNamespaces=true
LockPersonality=true
RestrictRealtime=true
"""

_OWNER_MODE_NOTE = """\
# NoNewPrivileges is NOT set, nor a narrowed CapabilityBoundingSet: with
# security.jobs_run_as: owner the master runs sudo (a setuid program) to start the run-as
# helper as each job's owner, and NoNewPrivileges=true would make sudo fail ("effective uid
# is not 0"). sudo's one rule (ALL,!root) NOPASSWD: <helper> is what limits it instead.
NoNewPrivileges=false
"""


def master_unit(site: SiteChoices, environment: Sequence[tuple[str, str]] = ()) -> str:
    """``hpcdet-master.service``: the master as the service account, hardened."""
    return _master_unit_text(site, " ".join((site.state_dir, site.job_root)), environment)


def unit_environment(name: str, value: str) -> str:
    """One ``Environment=`` line; ``value`` is absolute paths joined by ':' (checked)."""
    for part in value.split(":"):
        unit_path(part, f"${name}")
    return f"Environment={name}={value}"


def _master_unit_text(site: SiteChoices, rw: str,
                      environment: Sequence[tuple[str, str]]) -> str:
    head = [
        "# hpcdet-master.service, written by `det-master init`.",
        "[Unit]",
        "Description=hpcdet master (REST API, web pages, reconciler)",
        "Documentation=https://github.com/hpcdet/hpcdet/blob/main/docs/admin/install.md",
        "Wants=network-online.target",
        "After=network-online.target munge.service postgresql.service",
        "",
        "[Service]",
        "Type=simple",
        f"User={site.service_user}",
        *(unit_environment(name, value) for name, value in environment),
        f"ExecStart={site.det_master} --config {site.config_path}",
        "Restart=on-failure",
        "RestartSec=5",
        "# Nothing the master writes is for other users.",
        "UMask=0077",
    ]
    return ("\n".join(head) + "\n" + _HARDENING_COMMON.format(rw=rw) + _OWNER_MODE_NOTE
            + "\n[Install]\nWantedBy=multi-user.target\n")


def vacuum_units(site: SiteChoices) -> dict[str, str]:
    """The optional daily ``det-master vacuum-metrics`` (a oneshot service and its timer)."""
    service = "\n".join([
        "# hpcdet-vacuum-metrics.service, written by `det-master init` (run by its timer).",
        "[Unit]",
        "Description=hpcdet: thin old training metrics (det-master vacuum-metrics)",
        "After=hpcdet-master.service",
        "",
        "[Service]",
        "Type=oneshot",
        f"User={site.service_user}",
        f"ExecStart={site.det_master} --config {site.config_path} vacuum-metrics",
        "UMask=0077",
        "ProtectSystem=strict",
        f"ReadWritePaths={site.state_dir}",
        "PrivateTmp=true",
        "ProtectHome=true",
        "NoNewPrivileges=true",
        "CapabilityBoundingSet=",
        "",
    ])
    timer = "\n".join([
        "# hpcdet-vacuum-metrics.timer, written by `det-master init`.",
        "[Unit]",
        "Description=hpcdet: thin old training metrics daily",
        "",
        "[Timer]",
        "OnCalendar=daily",
        "RandomizedDelaySec=1h",
        "Persistent=true",
        "",
        "[Install]",
        "WantedBy=timers.target",
        "",
    ])
    return {VACUUM_SERVICE: service, VACUUM_TIMER: timer}


def sudoers_file(site: SiteChoices) -> str:
    """The sudoers rule (what install-runas-helper puts in /etc/sudoers.d/hpcdet-runas)."""
    return ("# /etc/sudoers.d/hpcdet-runas (mode 0440), written by `det-master init`.\n"
            + sudoers_line(site.service_user, site.helper) + "\n")


def root_script(site: SiteChoices, scheduler: str, unit_names: Sequence[str]) -> str:
    """The commands a root admin runs, in order, each value quoted."""
    q = shlex.quote
    here = '"$(dirname -- "$0")"'
    units = " ".join(q(name) for name in unit_names)
    return "\n".join([
        "#!/bin/bash",
        "# Run as root, after reading it: installs what det-master init wrote.",
        "set -euo pipefail",
        "# 1. The run-as helper, /etc/hpcdet/runas.conf, the job root (1733) and the sudo",
        "#    rule (checked with visudo -cf before it is put in place).",
        f"{q(site.installer)} --service-user {q(site.service_user)} --scheduler "
        f"{q(scheduler)} --job-root {q(site.job_root)} --helper {q(site.helper)}",
        "# 2. The master's settings, readable by root and the service account only.",
        f"install -d -o root -g root -m 0755 {q(site.config_dir)}",
        f"install -o root -g {q(site.service_user)} -m 0640 {here}/{CONFIG} "
        f"{q(site.config_path)}",
        f"install -d -o {q(site.service_user)} -g {q(site.service_user)} -m 0700 "
        f"{q(site.state_dir)}",
        "# 3. The systemd units; start the master; check everything.",
        f"for unit in {units}; do install -m 0644 {here}/\"$unit\" /etc/systemd/system/; done",
        "systemctl daemon-reload",
        "systemctl enable --now hpcdet-master.service hpcdet-vacuum-metrics.timer",
        f"runuser -u {q(site.service_user)} -- {q(site.det_master)} doctor --config "
        f"{q(site.config_path)}",
        "",
    ])
