"""``det-master doctor``: check a configured (and, if it runs, a running) installation end to
end, one line per check with its fix; exit 1 if any check fails (warnings do not).

Run it as the service account (``runuser -u hpcdet -- det-master doctor``) to see what the
master sees, or as root to also check the sudoers files with ``visudo -c``; the checks of
what the service account may reach evaluate its permissions either way.
"""

from __future__ import annotations

import getpass
import json
import os
import pwd
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable

import click

from hpcdet.errors import ConfigError, HpcdetError
from hpcdet.master.doctor_checks import (
    FAIL,
    OK,
    SKIP,
    WARN,
    Doctor,
    Result,
    check_database,
    check_helper,
    check_job_root,
    check_munge,
    check_sudoers,
    check_tls,
)
from hpcdet.master.settings.core import MasterSettings, load_settings

HostCheck = Callable[[Doctor], Result]
HOST_CHECKS: tuple[HostCheck, ...] = (check_database, check_munge, check_helper, check_sudoers,
                                      check_job_root, check_tls)
# Every check's name, in the order doctor prints them (docs/admin/install.md's table).
CHECK_NAMES = ("config", "database", "munge", "runas-helper", "sudoers", "job-root", "tls",
               "master", "scheduler", "operator", "harness")


def load(config_path: str | None, db_url: str | None) -> tuple[MasterSettings | None, Result]:
    """The settings and the config check's result (the settings None when they fail)."""
    from dataclasses import replace

    try:
        settings = load_settings(config_path)
    except ConfigError as exc:
        return None, Result("config", FAIL, f"{exc.title}: {'; '.join(exc.errors)}",
                            "edit master.yaml as the message says")
    if db_url:
        settings = replace(settings, db_url=db_url)
    return settings, Result("config", OK, f"{config_path or '(no file: defaults)'} loads")


def check_running(doctor: Doctor) -> Result:
    """Whether a master answers at its port on this host; one not running is skipped (maybe
    not yet started: the other checks are of its configuration)."""
    settings = doctor.settings
    scheme = "https" if settings.tls is not None else "http"
    url = f"{scheme}://127.0.0.1:{settings.port}/api/v1/master"
    try:
        with urllib.request.urlopen(url, timeout=10, context=_liveness_context()) as answer:
            info = json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as exc:  # it answered: running, if not this way
        return Result("master", OK, f"answers at {url} (HTTP {exc.code})")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return Result("master", SKIP, f"not running: no master answers at {url} "
                      f"({getattr(exc, 'reason', exc)}); systemctl start hpcdet-master")
    return Result("master", OK, f"answers at {url} (version {info.get('version', '?')})")


def _liveness_context() -> ssl.SSLContext:
    """No certificate check: this asks only whether the local master answers (the tls check
    looks at the certificate itself), and a site's CA is not what the cert file holds."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def run_checks(doctor: Doctor, *, harness: bool) -> list[Result]:
    """Every check in order; the cluster's through the configured backend."""
    results = [check(doctor) for check in HOST_CHECKS]
    results.append(check_running(doctor))
    from hpcdet.master.doctor_cluster import check_harness, check_operator, check_scheduler
    from hpcdet.master.scheduling.backend import make_backend

    try:
        backend = make_backend(doctor.settings)
    except (HpcdetError, ValueError) as exc:
        results.append(Result("scheduler", FAIL, str(exc), "fix resource_manager in master.yaml"))
        return results
    scheduler = check_scheduler(doctor, backend)
    results += [scheduler, check_operator(doctor, backend)]
    if not harness:
        results.append(Result("harness", SKIP, "--no-harness"))
    elif scheduler.status == FAIL:
        results.append(Result("harness", SKIP, "the scheduler does not answer"))
    else:
        results.append(check_harness(doctor, backend))
    return results


def default_service_user() -> str:
    """The user running doctor, unless root (then the usual service account's name)."""
    return "hpcdet" if os.geteuid() == 0 else getpass.getuser()


def print_results(results: list[Result], as_json: bool) -> None:
    """A line per check (status, check, what; then the fix), or one JSON object."""
    if as_json:
        click.echo(json.dumps({"ok": not failed(results),
                               "checks": [r.__dict__ for r in results]}, indent=2))
        return
    width = max(len(r.check) for r in results)
    for r in results:
        fix = f" -- fix: {r.fix}" if r.fix and r.status in (FAIL, WARN) else ""
        click.echo(f"{r.status.upper():<4}  {r.check:<{width}}  {one_line(r.message)}{fix}")


def one_line(text: str) -> str:
    """A check's message on its line: a command's multi-line error (sacctmgr's) by its first
    line; the whole of it stays in --json."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else ""
    return f"{lines[0]} (+{len(lines) - 1} more lines: --json)"


def failed(results: list[Result]) -> bool:
    return any(r.status == FAIL for r in results)


@click.command("doctor")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="master.yaml (default: det-master's --config / HPCDET_MASTER_CONFIG).")
@click.option("--service-user", default=None,
              help="The master's Unix account (default: you, or hpcdet when run as root).")
@click.option("--munge-socket", default=Doctor.munge_socket, show_default=True)
@click.option("--runas-conf", default=Doctor.runas_conf, show_default=True)
@click.option("--no-harness", is_flag=True, help="Skip the compute-node job.")
@click.option("--harness-timeout", type=click.FloatRange(5, 3600), default=120.0,
              show_default=True, help="Seconds the compute-node job may take.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def doctor_command(ctx: click.Context, config_path: str | None, service_user: str | None,
                   munge_socket: str, runas_conf: str, no_harness: bool,
                   harness_timeout: float, as_json: bool) -> None:
    """Check the installation: config, database, MUNGE, run-as helper, sudoers, job root
    ACLs, TLS, the running master, scheduler rights and a compute-node job."""
    parent = ctx.parent.params if ctx.parent is not None else {}
    settings, config = load(config_path or parent.get("config_path"), parent.get("db_url"))
    results = [config]
    if settings is not None:
        user = service_user or default_service_user()
        try:
            pwd.getpwnam(user)
        except KeyError:
            raise click.ClickException(f"--service-user {user}: no such Unix user") from None
        doctor = Doctor(settings=settings, service_user=user, munge_socket=munge_socket,
                        runas_conf=runas_conf, harness_timeout=harness_timeout)
        results += run_checks(doctor, harness=not no_harness)
    print_results(results, as_json)
    if failed(results):
        ctx.exit(1)
