"""``det-master init``: write a shared site's master.yaml, systemd units, sudoers rule and
root commands into a directory, from what it detects on this host and its flags.

It asks nothing it can detect: the scheduler (whose submit command is on PATH), its version,
its pools (the dispatcher's ``read_pools``), munged's socket. It refuses to overwrite a file
unless ``--force``, and writes every file into a temporary directory first, so that a
failure leaves nothing half-written.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import click

from hpcdet.dispatcher.plugin import SchedulerPlugin
from hpcdet.errors import HpcdetError
from hpcdet.master import install_files as files
from hpcdet.master.install_files import Detected, SiteChoices

MUNGE_SOCKET = "/run/munge/munge.socket.2"
# systemd's PATH for services (systemd.exec(5), "Environment variables in spawned processes").
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Each file init writes, and its mode (the config may hold a database password).
MODES = {files.CONFIG: 0o600, files.UNIT: 0o644, files.VACUUM_SERVICE: 0o644,
         files.VACUUM_TIMER: 0o644, files.SUDOERS: 0o440, files.ROOT_SCRIPT: 0o700}


def detect_scheduler(wanted: str | None) -> str:
    """The scheduler named, or the one whose submit command is on PATH."""
    from hpcdet.dispatcher import registry

    if wanted is not None:
        registry.scheduler(wanted)  # ValueError naming the known ones
        return wanted
    found = [name for name in registry.names()
             if shutil.which(registry.scheduler(name).submit_command)]
    if len(found) != 1:
        commands = ", ".join(registry.scheduler(n).submit_command for n in registry.names())
        what = "none" if not found else " and ".join(found)
        raise click.ClickException(f"cannot tell the scheduler: found {what} on PATH "
                                   f"(looked for {commands}); give --scheduler")
    return found[0]


def scheduler_version(scheduler: str) -> str:
    """What the scheduler's version command prints (``scontrol version``)."""
    from hpcdet.dispatcher import registry
    from hpcdet.dispatcher.commands import CommandRunner

    command = registry.scheduler(scheduler).version_command
    output = CommandRunner()(command, timeout=30).strip()
    return output.splitlines()[0] if output else "(version unknown)"


def detect(scheduler: str | None, munge_socket: str) -> Detected:
    """Everything init finds on this host, through the dispatcher's neutral interface."""
    from hpcdet.dispatcher import registry
    from hpcdet.master.scheduling.backend import make_backend
    from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

    name = detect_scheduler(scheduler)
    plugin = registry.scheduler(name)
    settings = replace(MasterSettings(), resource_manager=ResourceManagerSettings(type=name))
    pools = make_backend(settings).read_pools()
    default = next((pool.name for pool in pools if pool.is_default), None)
    socket_found = munge_socket if _is_socket(munge_socket) else None
    return Detected(scheduler=name, display_name=plugin.display_name,
                    version=scheduler_version(name),
                    partitions=tuple(sorted(pool.name for pool in pools)),
                    default_partition=default, munge_socket=socket_found,
                    host=socket.getfqdn(), environment=unit_environment(plugin))


def unit_environment(plugin: SchedulerPlugin) -> tuple[tuple[str, str], ...]:
    """PATH with the scheduler's commands, when systemd's default PATH lacks them, and the
    scheduler's config variable, when this environment sets it."""
    found: list[tuple[str, str]] = []
    command = shutil.which(plugin.submit_command)
    if command is not None and os.path.dirname(command) not in SYSTEMD_PATH.split(":"):
        found.append(("PATH", f"{os.path.dirname(command)}:{SYSTEMD_PATH}"))
    conf = os.environ.get(plugin.conf_variable) if plugin.conf_variable else None
    if conf:
        found.append((plugin.conf_variable, conf))
    return tuple(found)


def _is_socket(path: str) -> bool:
    import stat

    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def render_all(site: SiteChoices, found: Detected) -> dict[str, str]:
    """Every file init writes, by name."""
    units = {files.UNIT: files.master_unit(site, found.environment),
             **files.vacuum_units(site)}
    return {files.CONFIG: files.master_yaml(site, found), **units,
            files.SUDOERS: files.sudoers_file(site),
            files.ROOT_SCRIPT: files.root_script(site, found.scheduler, list(units))}


def write_all(out: Path, texts: dict[str, str], force: bool) -> None:
    """Write ``texts`` into ``out``: all of them, or (on any failure) none."""
    out.mkdir(parents=True, exist_ok=True)
    existing = sorted(name for name in texts if (out / name).exists())
    if existing and not force:
        raise click.ClickException(f"{out}: {', '.join(existing)} already exist; "
                                   "nothing written (--force replaces them)")
    staging = Path(tempfile.mkdtemp(prefix=".det-master-init-", dir=out))
    try:
        for name, text in texts.items():
            path = staging / name
            path.write_text(text)
            path.chmod(MODES[name])
        for name in texts:  # renames within one directory: each is atomic
            os.replace(staging / name, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _installer() -> str:
    """scripts/install-runas-helper of this source tree, where there is one."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "install-runas-helper"
    return str(script) if script.is_file() else SiteChoices.installer


@click.command("init")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory to write the files into.")
@click.option("--force", is_flag=True, help="Replace files init wrote before.")
@click.option("--scheduler", default=None, help="slurm or pbs (default: the one on PATH).")
@click.option("--db-url", default=None,
              help="PostgreSQL URL, e.g. postgresql+psycopg2://hpcdet@dbhost/hpcdet "
                   "(default: SQLite in the state dir).")
@click.option("--service-user", default="hpcdet", show_default=True)
@click.option("--config-dir", default="/etc/hpcdet", show_default=True)
@click.option("--state-dir", default="/var/lib/hpcdet", show_default=True)
@click.option("--job-root", default="/srv/hpcdet/jobs", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
@click.option("--tls-cert", default=None, help="The master's certificate (PEM).")
@click.option("--tls-key", default=None, help="Its unencrypted key (PEM, mode 0600).")
@click.option("--admin", "admins", multiple=True, help="An admin user (repeatable).")
@click.option("--helper", default=SiteChoices.helper, show_default=True)
@click.option("--munge-socket", default=MUNGE_SOCKET, show_default=True)
@click.option("--det-master", "det_master", default=None,
              help="det-master the units start (default: this one).")
def init_command(out_dir: str, force: bool, scheduler: str | None, munge_socket: str,
                 service_user: str, config_dir: str, state_dir: str, job_root: str,
                 db_url: str | None, port: int, tls_cert: str | None, tls_key: str | None,
                 admins: tuple[str, ...], helper: str, det_master: str | None) -> None:
    """Write master.yaml, systemd units, the sudoers rule and the root commands for a
    shared master into --out, from what this host has (see docs/admin/install.md)."""
    site = SiteChoices(service_user=service_user, config_dir=config_dir, state_dir=state_dir,
                       job_root=job_root, db_url=db_url, port=port, tls_cert=tls_cert,
                       tls_key=tls_key, admins=admins, helper=helper,
                       det_master=det_master or _this_det_master(), installer=_installer())
    try:
        site.check()
        found = detect(scheduler, munge_socket)
        texts = render_all(site, found)
    except (HpcdetError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    out = Path(out_dir)
    write_all(out, texts, force)
    _report(out, found, sorted(texts))


def _this_det_master() -> str:
    """The det-master next to this Python (a venv's bin), else the one on PATH."""
    beside = Path(sys.executable).parent / "det-master"
    return str(beside) if beside.exists() else (shutil.which("det-master") or str(beside))


def _report(out: Path, found: Detected, names: list[str]) -> None:
    click.echo(f"{found.display_name} ({found.version}); pools: "
               f"{', '.join(found.partitions) or 'none'}; MUNGE socket: "
               f"{found.munge_socket or 'NOT FOUND'}")
    for name in names:
        click.echo(f"wrote {out / name}")
    click.echo(f"next: read {out / files.ROOT_SCRIPT}, then run it as root")
