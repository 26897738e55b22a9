"""det over HTTPS: certificate verification (DET_MASTER_CERT_FILE, noverify) and its errors.

A real TLS server in a thread (werkzeug, certificates from scripts/dev-tls) answers
``GET /api/v1/master``; the client is the one det and the harness use.
"""

from __future__ import annotations

import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from hang_guard import HANG_GUARD_S
from werkzeug.serving import make_server

from hpcdet.cli.main import error_message
from hpcdet.client import MasterClient, normalize_master_url
from hpcdet.client_tls import MasterTlsError
from hpcdet.errors import MasterError

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def tls_dir(dev_tls_dir: Path) -> Path:
    """scripts/dev-tls's CA and certificate, plus the server's own (leaf) certificate alone."""
    leaf = (dev_tls_dir / "server.pem").read_text().split("-----END CERTIFICATE-----")[0]
    (dev_tls_dir / "leaf.pem").write_text(leaf + "-----END CERTIFICATE-----\n")
    return dev_tls_dir


@pytest.fixture(scope="module")
def https_url(tls_dir: Path) -> Iterator[str]:
    app = Flask("tls-test")
    app.add_url_rule("/api/v1/master", "master", lambda: {"version": "t"})
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_dir / "server.pem", tls_dir / "server.key")
    server = make_server("127.0.0.1", 0, app, ssl_context=context)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://localhost:{server.port}"
    server.shutdown()


def test_https_master_addresses_are_kept() -> None:
    assert normalize_master_url("HTTPS://login1:8443/") == "https://login1:8443"
    assert normalize_master_url("login1:8080") == "http://login1:8080"
    with pytest.raises(MasterError, match="scheme must be http or https"):
        normalize_master_url("ftp://login1")


def test_an_unverified_certificate_is_one_line_naming_the_fix(
        https_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DET_MASTER_CERT_FILE", raising=False)
    with MasterClient(https_url) as client, pytest.raises(MasterTlsError) as caught:
        client.get("/master")
    text = error_message(caught.value)
    assert "\n" not in text and "Traceback" not in text
    assert text.startswith(f"cannot verify the TLS certificate of the master at {https_url}")
    assert "DET_MASTER_CERT_FILE=/path/to/ca.pem" in text and "noverify" in text
    assert "DET_MASTER)" not in text, "not the hint for an unreachable address"


@pytest.mark.parametrize("trusted", ["ca.pem", "server.pem", "leaf.pem"])
def test_the_ca_or_the_masters_own_certificate_verifies_it(
        https_url: str, tls_dir: Path, monkeypatch: pytest.MonkeyPatch, trusted: str) -> None:
    monkeypatch.setenv("DET_MASTER_CERT_FILE", str(tls_dir / trusted))
    with MasterClient(https_url) as client:
        assert client.get("/master") == {"version": "t"}


def test_noverify_skips_the_check_only_when_asked(https_url: str) -> None:
    with MasterClient(https_url, cert_file="noverify") as client:
        assert client.get("/master") == {"version": "t"}


def test_a_certificate_file_for_someone_else_still_fails(https_url: str, tmp_path: Path,
                                                         tls_dir: Path) -> None:
    other = tmp_path / "other"
    subprocess.run([str(REPO / "scripts" / "dev-tls")], check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "HPCDET_TLS_DIR": str(other)},
                   timeout=HANG_GUARD_S)
    with MasterClient(https_url, cert_file=str(other / "ca.pem")) as client, \
            pytest.raises(MasterTlsError, match="check that DET_MASTER_CERT_FILE="):
        client.get("/master")


def test_a_missing_certificate_file_is_named(https_url: str, tmp_path: Path) -> None:
    with pytest.raises(MasterTlsError, match=r"DET_MASTER_CERT_FILE=.*nothing\.pem: cannot"):
        MasterClient(https_url, cert_file=str(tmp_path / "nothing.pem"))
