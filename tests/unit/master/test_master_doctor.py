"""``det-master doctor``'s checks, each broken on purpose and seen named with its fix.

Real files, sockets, ACLs and databases; ``sudo``/``visudo`` and the scheduler's answers are
fakes (named so) where the machine's real ones must not be changed. The whole doctor against
the dev cluster is tests/integration/test_it_doctor.py.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from db_templates import SchemaTemplates

from hpcdet.dispatcher.pbs import operator as pbs_operator
from hpcdet.dispatcher.slurm import operator as slurm_operator
from hpcdet.errors import SchedulerError
from hpcdet.master import doctor_checks as checks
from hpcdet.master.doctor import print_results
from hpcdet.master.doctor_checks import FAIL, OK, SKIP, WARN, Doctor, Result
from hpcdet.master.serve import main
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings
from hpcdet.master.settings.runas import RunAsSettings
from hpcdet.master.settings.tls import TlsSettings

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="root-owned files need root")


def doctor(tmp_path: Path, **settings: object) -> Doctor:
    values: dict[str, object] = {
        "auth_mode": "munge", "runas": RunAsSettings(jobs_run_as="owner"),
        "resource_manager": ResourceManagerSettings(job_storage_root=str(tmp_path / "jobs")),
        "db_url": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    values.update(settings)
    return Doctor(settings=MasterSettings(**values),  # type: ignore[arg-type]
                  service_user="nobody", munge_socket=str(tmp_path / "munge.socket"))


def listening_socket(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    return server


def test_munge_socket_missing_not_a_socket_or_out_of_the_service_accounts_reach(
        tmp_path: Path) -> None:
    d = doctor(tmp_path)
    missing = checks.check_munge(d)
    assert (missing.status, missing.check) == (FAIL, "munge")
    assert "No such file" in missing.message and "systemctl enable --now munge" in missing.fix
    Path(d.munge_socket).write_text("")
    assert "is not a socket" in checks.check_munge(d).message
    os.unlink(d.munge_socket)
    hidden = tmp_path / "private"
    hidden.mkdir(mode=0o700)
    d.munge_socket = str(hidden / "munge.socket")
    with listening_socket(Path(d.munge_socket)):
        found = checks.check_munge(d)
    if os.geteuid() == 0:  # nobody cannot search a 0700 directory of root's
        assert found.status == FAIL and f"nobody cannot connect to {d.munge_socket}" \
            in found.message and "socket directory is 0755" in found.fix
    assert checks.check_munge(doctor(tmp_path, auth_mode="open")).status == SKIP


def test_can_access_follows_owner_group_other_and_every_parent() -> None:
    base = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's tmp_path lies under a 0700 dir
    try:
        base.chmod(0o755)
        target = base / "a" / "file"
        target.parent.mkdir()
        target.write_text("")
        assert checks.can_access(str(target), pwd.getpwuid(os.getuid()).pw_name, 4) == ""
        if os.geteuid() == 0:
            assert checks.can_access(str(target), "nobody", 4) == ""
            target.parent.chmod(0o700)
            assert checks.can_access(str(target), "nobody", 4) == str(target.parent)
            target.parent.chmod(0o755)
            target.chmod(0o600)
            assert checks.can_access(str(target), "nobody", 4) == str(target)
    finally:
        shutil.rmtree(base)


@as_root
def test_helper_and_runas_conf_root_owned_and_naming_this_job_root(tmp_path: Path) -> None:
    helper, conf = tmp_path / "hpcdet-runas", tmp_path / "runas.conf"
    helper.write_text("#!/usr/bin/python3\n")
    helper.chmod(0o755)
    conf.write_text(f"[runas]\nservice_user = nobody\njob_root = {tmp_path / 'jobs'}\n")
    conf.chmod(0o644)
    d = doctor(tmp_path, runas=RunAsSettings(jobs_run_as="owner", runas_helper=str(helper)))
    d.runas_conf = str(conf)
    assert checks.check_helper(d).status == OK
    conf.write_text("[runas]\nservice_user = nobody\njob_root = /elsewhere\n")
    wrong_root = checks.check_helper(d)
    assert wrong_root.status == FAIL
    assert "/elsewhere, nobody, slurm; master.yaml: " in wrong_root.message
    assert "install-runas-helper --service-user nobody --job-root" in wrong_root.fix
    helper.chmod(0o777)
    assert "not root-owned and writable by root only" in checks.check_helper(d).message
    service_mode = doctor(tmp_path, runas=RunAsSettings(jobs_run_as="service"))
    assert checks.check_helper(service_mode).status == SKIP


def fake_program(path: Path, stdout: str, code: int = 0) -> str:
    """A fake sudo or visudo: prints ``stdout``, exits ``code`` (the machine's real sudo
    rules are shared with other tests and must not change)."""
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{stdout}\nEOF\nexit {code}\n")
    path.chmod(0o755)
    return str(path)


def test_sudoers_rule_missing_or_files_invalid_are_named_with_the_rule(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = doctor(tmp_path)
    d.visudo = fake_program(tmp_path / "visudo", "/etc/sudoers: parsed OK")
    d.sudo = fake_program(tmp_path / "sudo", "User nobody may run the following commands:\n"
                          "    (ALL, !root) NOPASSWD: /usr/local/libexec/hpcdet-runas")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert checks.check_sudoers(d).status == OK
    d.visudo = fake_program(tmp_path / "visudo", "/etc/sudoers.d/x:1:2: syntax error", 1)
    invalid = checks.check_sudoers(d)
    assert invalid.status == FAIL and "syntax error" in invalid.message
    d.sudo = fake_program(tmp_path / "sudo", "User nobody is not allowed to run sudo on vm.")
    absent = checks.check_sudoers(d)
    assert absent.status == FAIL and "no sudo rule lets nobody run" in absent.message
    assert absent.fix.endswith("nobody ALL=(ALL,!root) NOPASSWD: "
                               "/usr/local/libexec/hpcdet-runas")


def test_job_root_missing_or_mis_owned_is_named(tmp_path: Path) -> None:
    d = doctor(tmp_path)
    missing = checks.check_job_root(d)
    assert missing.status == FAIL and "No such file" in missing.message
    assert "install-runas-helper --job-root" in missing.fix
    (tmp_path / "jobs").mkdir(mode=0o755)
    wrong = checks.check_job_root(d)
    assert wrong.status == FAIL and "not root's 1733" in wrong.message


def test_job_root_takes_acls_and_the_probe_is_removed(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    d = doctor(tmp_path, runas=RunAsSettings(jobs_run_as="service"))
    result = checks.check_job_root(d)
    assert result.status == OK, result
    assert list(jobs.iterdir()) == []


def test_database_unreachable_unmigrated_and_at_head(tmp_path: Path, db_url: str,
                                                     schema_templates: SchemaTemplates) -> None:
    """On SQLite and PostgreSQL (``db_url``: a fresh, empty database of each)."""
    down = checks.check_database(doctor(tmp_path, db_url="postgresql+psycopg2://x@127.0.0.1:1/x"))
    assert down.status == FAIL and "postgresql database does not answer" in down.message
    d = doctor(tmp_path, db_url=db_url)
    fresh = checks.check_database(d)
    assert fresh.status == WARN and fresh.message in (
        "reachable, no schema yet", f"no SQLite database yet at {tmp_path / 'master.sqlite'}")
    assert not (tmp_path / "master.sqlite").exists()  # doctor made none
    schema_templates.copy_to(db_url)  # what the master's migration makes, copied
    at_head = checks.check_database(d)
    assert at_head.status == OK and "schema at head" in at_head.message


def make_cert(tmp_path: Path, days: int) -> TlsSettings:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "master")])
    now = datetime.now(timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=400))
            .not_valid_after(now + timedelta(days=days)).sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / f"cert{days}.pem", tmp_path / f"key{days}.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    return TlsSettings(cert=str(cert_path), key=str(key_path))


def test_tls_expired_soon_expiring_or_key_open_to_others(tmp_path: Path) -> None:
    good = make_cert(tmp_path, 365)
    assert checks.check_tls(doctor(tmp_path, tls=good)).status == OK
    expired = checks.check_tls(doctor(tmp_path, tls=make_cert(tmp_path, -1)))
    assert expired.status == FAIL and "expired on" in expired.message
    assert checks.check_tls(doctor(tmp_path, tls=make_cert(tmp_path, 10))).status == WARN
    os.chmod(good.key, 0o644)
    open_key = checks.check_tls(doctor(tmp_path, tls=good))
    assert open_key.status == FAIL and open_key.fix.startswith(f"chmod 0600 {good.key}")
    assert checks.check_tls(doctor(tmp_path)).status == WARN  # plain HTTP


def answering(output: str | None):  # type: ignore[no-untyped-def]
    """A fake runner: ``output``, or a failed command when None."""
    def run(argv, **_):  # type: ignore[no-untyped-def]
        if output is None:
            raise SchedulerError(list(argv), 1, "", "sacctmgr: error: connection refused")
        return output
    return run


def test_slurm_operator_rights() -> None:
    assert slurm_operator.operator_problem(answering("Operator\n"), "hpcdet") is None
    assert slurm_operator.operator_problem(answering("Administrator"), "hpcdet") is None
    assert "admin level is 'none'" in slurm_operator.operator_problem(answering("None"), "h")
    assert "not a Slurm user" in slurm_operator.operator_problem(answering(""), "h")
    assert "connection refused" in slurm_operator.operator_problem(answering(None), "h")
    assert slurm_operator.operator_fix("h") == "sacctmgr -i modify user h set adminlevel=operator"


def test_pbs_operator_rights() -> None:
    listing = "Server pbs\n    operators = hpcdet@*,ops@login\n    managers = root@*\n"
    assert pbs_operator.operator_problem(answering(listing), "hpcdet") is None
    assert pbs_operator.operator_problem(answering(listing), "root") is None
    assert "neither a PBS operator" in pbs_operator.operator_problem(answering(listing), "hpc")


def test_one_line_per_check_with_its_fix() -> None:
    results = [Result("config", OK, "loads"), Result("sudoers", FAIL, "no rule", "add it"),
               Result("tls", SKIP, "none", "ignored"),
               Result("operator", WARN, "sacctmgr: error: x\nsacctmgr: fatal: y\n", "fix it")]
    lines = []
    import click

    original = click.echo
    try:
        click.echo = lambda text="": lines.append(text)  # type: ignore[assignment]
        print_results(results, as_json=False)
    finally:
        click.echo = original
    assert lines == ["OK    config    loads", "FAIL  sudoers   no rule -- fix: add it",
                     "SKIP  tls       none",
                     "WARN  operator  sacctmgr: error: x (+1 more lines: --json) -- fix: fix it"]


def test_a_config_that_does_not_load_is_the_first_failed_check(tmp_path: Path) -> None:
    bad = tmp_path / "master.yaml"
    bad.write_text("resource_manager: {type: lsf}\n")
    result = CliRunner().invoke(main, ["doctor", "--config", str(bad)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith("FAIL  config  invalid master configuration")
    assert "-- fix: edit master.yaml as the message says" in result.output


def test_a_running_master_answers_and_one_not_running_is_skipped(tmp_path: Path) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from hpcdet.master.doctor import check_running

    class Master(BaseHTTPRequestHandler):  # a stand-in answering as the master's route does
        def do_GET(self) -> None:  # noqa: N802
            body = b'{"version": "9.9"}' if self.path == "/api/v1/master" else b""
            self.send_response(200 if body else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    with HTTPServer(("127.0.0.1", 0), Master) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            port = server.server_address[1]
            up = check_running(doctor(tmp_path, port=port))
        finally:
            server.shutdown()
    assert up == Result("master", OK, f"answers at http://127.0.0.1:{port}/api/v1/master "
                        "(version 9.9)")
    down = check_running(doctor(tmp_path, port=port))
    assert down.status == SKIP and down.message.startswith("not running: no master answers")
