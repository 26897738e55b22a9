"""``security.tls``: checked at start, HTTPS URLs, and the certificate each job gets."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from flask import Flask
from flask.testing import FlaskClient
from hang_guard import HANG_GUARD_S
from master_helpers import create

from hpcdet.errors import ConfigError
from hpcdet.master.app import create_app
from hpcdet.master.settings.core import MasterSettings, load_settings
from hpcdet.master.settings.tls import TlsSettings, job_cert_pem, request_is_https

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def tls_dir(dev_tls_dir: Path) -> Path:
    """A CA and server certificate made by scripts/dev-tls."""
    return dev_tls_dir


def _load(tmp_path: Path, security: object) -> MasterSettings:
    path = tmp_path / "master.yaml"
    path.write_text(yaml.safe_dump({"security": security}))
    return load_settings(path, environ={})


def test_dev_tls_makes_private_keys_and_a_certificate_for_this_host(tls_dir: Path) -> None:
    for key in ("ca.key", "server.key"):
        assert (tls_dir / key).stat().st_mode & 0o777 == 0o600
    text = subprocess.run(["openssl", "x509", "-in", str(tls_dir / "server.pem"), "-noout",
                           "-ext", "subjectAltName"], capture_output=True, text=True).stdout
    assert "DNS:localhost" in text and "IP Address:127.0.0.1" in text
    before = (tls_dir / "server.pem").read_bytes()
    subprocess.run([str(REPO / "scripts" / "dev-tls")], check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "HPCDET_TLS_DIR": str(tls_dir)},
                   timeout=HANG_GUARD_S)
    assert (tls_dir / "server.pem").read_bytes() == before, "a second run changes nothing"


def test_security_tls_makes_the_master_serve_https(tls_dir: Path, tmp_path: Path) -> None:
    settings = _load(tmp_path, {"tls": {"cert": str(tls_dir / "server.pem"),
                                        "key": str(tls_dir / "server.key")}})
    assert settings.tls == TlsSettings(cert=str(tls_dir / "server.pem"),
                                       key=str(tls_dir / "server.key"))
    assert settings.master_url.startswith("https://")
    assert settings.tls.gunicorn_options() == {"certfile": str(tls_dir / "server.pem"),
                                               "keyfile": str(tls_dir / "server.key")}
    assert MasterSettings().tls is None and MasterSettings().master_url.startswith("http://")


@pytest.mark.parametrize(("tls", "problem"), [
    ({"cert": "{d}/server.pem", "key": "{d}/missing.key"}, "missing.key: no such file"),
    ({"cert": "/etc/hostname", "key": "{d}/server.key"}, "/etc/hostname: not a PEM file"),
    ({"cert": "{d}/server.pem", "key": "{d}/ca.key"}, "do not form a usable certificate"),
    ({"cert": "{d}/server.pem"}, "security.tls.key: is required"),
    ({"cert": "{d}", "key": "{d}/server.key"}, "not a regular file"),
    ({"cert": "{d}/server.pem", "key": "{d}/server.key", "ca": "x"}, "tls.ca: unknown key"),
    ("yes", "security.tls: must be a mapping"),
])
def test_unusable_tls_settings_are_one_clear_error_each(tls_dir: Path, tmp_path: Path,
                                                         tls: object, problem: str) -> None:
    if isinstance(tls, dict):
        tls = {key: value.format(d=tls_dir) for key, value in tls.items()}
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, {"tls": tls})
    assert any(problem in error for error in caught.value.errors), caught.value.errors


def test_unknown_security_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, {"tlss": {}})
    assert caught.value.errors == [
        "<master.yaml>.security.tlss: unknown key (known: jobs_run_as, max_body_mb, "
        "runas_helper, storage_roots, tls)"]


def test_a_tls_masters_jobs_get_its_certificate_and_https(tls_dir: Path,
                                                          settings: MasterSettings) -> None:
    tls = TlsSettings(cert=str(tls_dir / "server.pem"), key=str(tls_dir / "server.key"))
    app = create_app(replace(settings, tls=tls))
    try:
        client: FlaskClient = app.test_client()
        body = create(client, dry_run=True).get_json()
    finally:
        app.config["HPCDET_ENGINE"].dispose()
    script = body["jobs"][0]["script"]
    job_dir = Path(next(line.split("=", 1)[1] for line in script.splitlines()
                        if line.startswith("export DET_JOB_DIR=")).strip("'"))
    assert f"export DET_MASTER_CERT_FILE={job_dir / 'master-cert.pem'}" in script
    assert "export DET_MASTER=https://" in script
    assert not job_dir.exists()  # a dry run's scratch directory is removed (finding 7)
    # What a real submission writes as master-cert.pem: the certificates, no key.
    assert job_cert_pem(tls) == (tls_dir / "server.pem").read_text()


def test_a_plain_masters_jobs_get_no_certificate(client: FlaskClient) -> None:
    script = create(client, dry_run=True).get_json()["jobs"][0]["script"]
    assert "DET_MASTER_CERT_FILE" not in script and "export DET_MASTER=http://" in script


def test_request_is_https_tells_a_tls_request(app: Flask) -> None:
    with app.test_request_context("/", base_url="https://master.example:8443"):
        assert request_is_https()
    with app.test_request_context("/", base_url="http://master.example:8080"):
        assert not request_is_https()


def test_jobs_never_get_a_private_key_kept_in_the_certificate_file(tls_dir: Path,
                                                                   tmp_path: Path) -> None:
    combined = tmp_path / "combined.pem"
    combined.write_text((tls_dir / "server.key").read_text()
                        + (tls_dir / "server.pem").read_text())
    settings = _load(tmp_path, {"tls": {"cert": str(combined),
                                        "key": str(tls_dir / "server.key")}})
    assert settings.tls is not None
    copied = job_cert_pem(settings.tls)
    assert copied is not None and "PRIVATE KEY" not in copied
    assert copied == (tls_dir / "server.pem").read_text()
