"""``det-master doctor``'s checks of the master's host: config, database, MUNGE, the run-as
helper and its sudo rule, the job root, TLS. Each is a small function returning a
:class:`Result` (status, what it found, and the fix); none changes the installation but for
a probe directory it removes again. The cluster's checks are in :mod:`.doctor_cluster`.
"""

from __future__ import annotations

import configparser
import grp
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hpcdet.dispatcher.runas import sudoers_line
from hpcdet.master.settings.core import MasterSettings

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
RUNAS_CONF = "/etc/hpcdet/runas.conf"
INSTALL = "scripts/install-runas-helper"


@dataclass(frozen=True)
class Result:
    """One check's outcome: ``fix`` says what to do when it is not ok."""

    check: str
    status: str
    message: str
    fix: str = ""


@dataclass
class Doctor:
    """What the checks look at: the settings and where the site keeps things."""

    settings: MasterSettings
    service_user: str
    munge_socket: str = "/run/munge/munge.socket.2"
    runas_conf: str = RUNAS_CONF
    sudo: str = "sudo"
    visudo: str = "visudo"
    harness_timeout: float = 120.0
    notes: list[str] = field(default_factory=list)


def _run(argv: Sequence[str], timeout: float = 30,
         stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` (no shell); a missing program answers 127 like a shell would."""
    try:
        return subprocess.run(list(argv), input=stdin, capture_output=True, timeout=timeout,
                              check=False)
    except FileNotFoundError:
        return subprocess.CompletedProcess(list(argv), 127, b"", f"{argv[0]}: not found".encode())


def _text(data: bytes) -> str:
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else ""


def check_database(doctor: Doctor) -> Result:
    """The database answers and its schema is the one this code writes."""
    from hpcdet.master.db import HEAD_REVISION, schema_revision

    url = doctor.settings.db_url
    missing = _missing_sqlite_file(url)
    if missing:  # connecting would create it: say so instead
        return Result("database", WARN, f"no SQLite database yet at {missing}",
                      "start the master once: it creates it (its state_dir writable by the "
                      "service account)")
    problem = _connect_problem(url)
    if problem:
        return Result("database", FAIL, f"{doctor.settings.database_kind} database does not "
                      f"answer: {problem}",
                      "start the database; check db.url (host, user, database) in master.yaml")
    revision = schema_revision(url)
    if revision == HEAD_REVISION:
        return Result("database", OK, f"{doctor.settings.database_kind}, schema at head "
                      f"({HEAD_REVISION})")
    if revision is None:
        return Result("database", WARN, "reachable, no schema yet",
                      "start the master once: it creates the schema (Alembic upgrade head)")
    return Result("database", FAIL, f"schema at {revision}, this code's is {HEAD_REVISION}",
                  "an older schema: start the master (it upgrades); a newer one: install the "
                  "release that wrote it (docs/admin/upgrades.md)")


def _missing_sqlite_file(url: str) -> str:
    """The file of a SQLite ``url`` when it does not exist; '' otherwise."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if not parsed.drivername.startswith("sqlite") or not parsed.database \
            or parsed.database == ":memory:" or os.path.exists(parsed.database):
        return ""
    return parsed.database


def _connect_problem(url: str) -> str:
    """'' when the database at ``url`` answers ``SELECT 1``; else its driver's first line."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url, connect_args=_timeout_args(url))
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001  (any driver's error: it is the finding)
        return str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
    finally:
        engine.dispose()
    return ""


def _timeout_args(url: str) -> dict[str, int]:
    """A bounded connect for PostgreSQL (a dead host must not hang doctor)."""
    return {"connect_timeout": 10} if url.startswith("postgresql") else {}


def can_access(path: str, user: str, mode: int) -> str:
    """'' when ``user`` may reach ``path`` with ``mode`` (R=4, W=2, X=1) by its permission
    bits, every parent searched; else the first path that stops it."""
    account = pwd.getpwnam(user)
    if account.pw_uid == 0:
        return ""
    groups = {account.pw_gid} | {g.gr_gid for g in grp.getgrall() if user in g.gr_mem}
    target = Path(path)
    for step, wanted in [*((p, 1) for p in reversed(target.parents)), (target, mode)]:
        try:
            info = os.stat(step)
        except OSError as exc:
            return f"{step}: {exc.strerror}"
        if info.st_uid == account.pw_uid:
            bits = (info.st_mode >> 6) & 7
        elif info.st_gid in groups:
            bits = (info.st_mode >> 3) & 7
        else:
            bits = info.st_mode & 7
        if bits & wanted != wanted:
            return str(step)
    return ""


def check_munge(doctor: Doctor) -> Result:
    """munged's socket is there, the service account can connect to it, and a credential
    made through it decodes."""
    if doctor.settings.auth_mode != "munge":
        return Result("munge", SKIP, "auth.mode is open: MUNGE is not used",
                      "a shared master uses auth.mode: munge (docs/admin/security.md)")
    path = doctor.munge_socket
    fix_start = "install and start munge (systemctl enable --now munge); same key on every node"
    try:
        if not stat.S_ISSOCK(os.stat(path).st_mode):
            return Result("munge", FAIL, f"{path} is not a socket", fix_start)
    except OSError as exc:
        return Result("munge", FAIL, f"{path}: {exc.strerror}", fix_start)
    blocked = can_access(path, doctor.service_user, 2)
    if blocked:
        return Result("munge", FAIL, f"{doctor.service_user} cannot connect to {path} "
                      f"(stopped at {blocked})",
                      f"let {doctor.service_user} reach the socket: munged's socket directory "
                      "is 0755 and the socket 0777 by default (systemctl restart munge)")
    made = _run(["munge", "-n", "--socket", path])
    decoded = _run(["unmunge", "--socket", path], stdin=made.stdout) if made.returncode == 0 \
        else made
    if decoded.returncode != 0:
        return Result("munge", FAIL, f"munge/unmunge through {path} failed: "
                      f"{_text(decoded.stderr)}", fix_start)
    return Result("munge", OK, f"{path}: a credential made and decoded")


def _root_owned(path: str, what: str) -> str:
    """'' when ``path`` is root's and only root can change it; else what is wrong."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return f"{what} {path}: {exc.strerror}"
    if info.st_uid != 0 or info.st_mode & 0o022:
        return f"{what} {path} is not root-owned and writable by root only"
    return ""


def check_helper(doctor: Doctor) -> Result:
    """The run-as helper and runas.conf are root's, and the conf names this job root."""
    if not doctor.settings.runas.owner_mode:
        return Result("runas-helper", SKIP, "security.jobs_run_as is service")
    helper = doctor.settings.runas.runas_helper
    install = (f"as root: {INSTALL} --service-user {doctor.service_user} --job-root "
               f"{doctor.settings.resource_manager.job_storage_root} --helper {helper}")
    problem = _root_owned(helper, "helper") or _root_owned(doctor.runas_conf, "settings")
    if problem:
        return Result("runas-helper", FAIL, problem, install)
    conf = configparser.ConfigParser()
    try:
        conf.read(doctor.runas_conf)
        job_root = conf.get("runas", "job_root")
        service = conf.get("runas", "service_user")
        scheduler = conf.get("runas", "scheduler", fallback="slurm")
    except (configparser.Error, OSError) as exc:
        return Result("runas-helper", FAIL, f"{doctor.runas_conf}: {exc}", install)
    rm = doctor.settings.resource_manager
    have = (os.path.normpath(job_root), service, scheduler)
    wanted = (os.path.normpath(rm.job_storage_root), doctor.service_user, rm.type)
    if have != wanted:
        return Result("runas-helper", FAIL, f"{doctor.runas_conf} has job_root, service_user, "
                      f"scheduler {', '.join(have)}; master.yaml: {', '.join(wanted)}",
                      f"{install} --scheduler {rm.type}")
    return Result("runas-helper", OK, f"{helper} and {doctor.runas_conf} root-owned")


def check_sudoers(doctor: Doctor) -> Result:
    """sudo lets the service account run the helper as others (never root), and the sudoers
    files are valid (``visudo -c``, as root)."""
    if not doctor.settings.runas.owner_mode:
        return Result("sudoers", SKIP, "security.jobs_run_as is service")
    helper = doctor.settings.runas.runas_helper
    rule = sudoers_line(doctor.service_user, helper)
    fix = f"as root: {INSTALL} (or put this line in /etc/sudoers.d/hpcdet-runas): {rule}"
    as_root = os.geteuid() == 0
    argv = [doctor.sudo, "-n", "-l", *(["-U", doctor.service_user] if as_root else [])]
    listing = _run(argv)
    text = listing.stdout.decode(errors="replace")
    if not any(helper in line and "NOPASSWD" in line and "!root" in line
               for line in text.splitlines()):
        return Result("sudoers", FAIL, f"no sudo rule lets {doctor.service_user} run {helper} "
                      f"as other users ({_text(listing.stderr) or 'sudo -l lists none'})", fix)
    if not as_root:
        return Result("sudoers", OK, "rule present (run doctor as root to also run visudo -c)")
    checked = _run([doctor.visudo, "-c"])
    if checked.returncode != 0:
        return Result("sudoers", FAIL, f"visudo -c: {_text(checked.stdout + checked.stderr)}",
                      "fix the file visudo names (visudo -f FILE); sudo refuses all rules "
                      "while one file is invalid")
    return Result("sudoers", OK, f"rule present for {doctor.service_user}; visudo -c valid")


def check_job_root(doctor: Doctor) -> Result:
    """The job root exists, is owned right, and takes POSIX ACLs (a probe directory in it
    gets the ACL the helper gives each user's directory, then goes)."""
    root = doctor.settings.resource_manager.job_storage_root
    owner_mode = doctor.settings.runas.owner_mode
    create = (f"as root: {INSTALL} --job-root {root} (makes it root:root 1733)" if owner_mode
              else f"mkdir -m 0700 {root} as {doctor.service_user}")
    try:
        info = os.stat(root)
    except OSError as exc:
        return Result("job-root", FAIL, f"{root}: {exc.strerror}", create)
    if owner_mode and (info.st_uid != 0 or stat.S_IMODE(info.st_mode) != 0o1733):
        return Result("job-root", FAIL, f"{root} is {stat.S_IMODE(info.st_mode):o} of uid "
                      f"{info.st_uid}, not root's 1733", create)
    problem = acl_problem(root, pwd.getpwnam(doctor.service_user).pw_uid)
    if problem:
        return Result("job-root", FAIL, f"{root}: no POSIX ACLs ({problem})",
                      "put the job root on a filesystem with POSIX ACLs (ext4, xfs, NFSv4 "
                      "with ACLs; Lustre/GPFS with acl enabled) and point "
                      "resource_manager.job_storage_root and runas.conf at it")
    return Result("job-root", OK, f"{root} exists, owned right, takes POSIX ACLs")


def acl_problem(root: str, service_uid: int) -> str:
    """'' when a directory in ``root`` takes the helper's ACL; else the error."""
    from hpcdet.runas.helper import Refused, set_private_acl

    try:
        probe = tempfile.mkdtemp(prefix=".hpcdet-doctor-", dir=root)
    except OSError as exc:
        return f"cannot make a probe directory: {exc.strerror}"
    try:
        set_private_acl(probe, service_uid)
    except Refused as exc:
        return str(exc.args[-1]) if exc.args else "setxattr failed"
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    return ""


def check_tls(doctor: Doctor) -> Result:
    """The certificate and key (already loaded together by the settings) are not expired and
    the key is the service account's alone."""
    tls = doctor.settings.tls
    if tls is None:
        return Result("tls", WARN, "no security.tls: the master serves plain HTTP",
                      "give init --tls-cert/--tls-key, or add security.tls to master.yaml")
    from datetime import datetime, timedelta, timezone

    from cryptography import x509

    cert = x509.load_pem_x509_certificate(Path(tls.cert).read_bytes())
    left = cert.not_valid_after_utc - datetime.now(timezone.utc)
    renew = f"renew {tls.cert} (and its key) and restart the master"
    if left <= timedelta(0):
        return Result("tls", FAIL, f"{tls.cert} expired on {cert.not_valid_after_utc:%Y-%m-%d}",
                      renew)
    if os.stat(tls.key).st_mode & 0o077:
        return Result("tls", FAIL, f"{tls.key} is readable by others than its owner",
                      f"chmod 0600 {tls.key} (owned by {doctor.service_user})")
    if left < timedelta(days=30):
        return Result("tls", WARN, f"{tls.cert} expires in {left.days} days", renew)
    return Result("tls", OK, f"{tls.cert} matches its key, valid until "
                  f"{cert.not_valid_after_utc:%Y-%m-%d}")
