"""HTTPS end to end: a master with ``security.tls`` (certificates from scripts/dev-tls).

The digits example trains on the dev cluster while det, and the harness inside the Slurm
job, verify the master's certificate; det refuses the master's certificate when it was not
told which CA to trust, in one line that names the fix.
"""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from it_helpers import REPO, LiveMaster, load_json

pytestmark = [pytest.mark.slurm, pytest.mark.torch]
DIGITS = REPO / "examples" / "digits"


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dev CA and server certificate, made by the script the docs tell developers to run."""
    directory = tmp_path_factory.mktemp("tls")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(directory), "HPCDET_TLS_DIR": str(directory)}
    subprocess.run([str(REPO / "scripts" / "dev-tls")], env=env, check=True,
                   capture_output=True, text=True, timeout=120)
    return directory


@pytest.fixture
def master_settings(tls_dir: Path) -> dict[str, Any]:
    return {"security": {"tls": {"cert": str(tls_dir / "server.pem"),
                                 "key": str(tls_dir / "server.key")}}}


def _config(tmp_path: Path) -> Path:
    config = yaml.safe_load((DIGITS / "const.yaml").read_text())
    config["resources"]["slots_per_trial"] = 1
    config["slurm"]["slots_per_node"] = 1
    config["searcher"]["max_length"] = {"epochs": 2}
    path = tmp_path / "digits-tls.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_digits_trains_over_https_with_verification(master: LiveMaster, tls_dir: Path,
                                                   tmp_path: Path) -> None:
    assert master.url.startswith("https://")
    master.env["DET_MASTER_CERT_FILE"] = str(tls_dir / "ca.pem")
    result = master.det("experiment", "create", str(_config(tmp_path)), str(DIGITS),
                        "--follow", check=True, timeout=600)
    line = next(li for li in result.stdout.splitlines() if li.startswith("Created experiment"))
    exp = load_json(master.det("experiment", "describe", line.split()[-1], "--json",
                               check=True).stdout)
    trial = exp["trials"][0]
    logs = master.det("trial", "logs", str(trial["id"])).stdout
    assert exp["experiment"]["state"] == "COMPLETED", f"{exp}\n{logs[-3000:]}"
    detail = load_json(master.det("trial", "describe", str(trial["id"]), "--json",
                                  check=True).stdout)
    # Metrics and a checkpoint reached the master (and below: over HTTPS, not the spool).
    assert detail["trial"]["latest_validation"]["metrics"]["accuracy"] > 0.5
    assert detail["checkpoints"], "the harness registered a checkpoint over HTTPS"
    assert master.api("/master")["url"].startswith("https://")
    job_dir = next(p for p in master.job_root.rglob("trial.json")).parent
    # Nothing took the detour a reporter takes when it cannot reach the master (the spool,
    # collected by the master from the job directory): every report went over HTTPS.
    assert not list(job_dir.glob("spool/*/seg-*")), "reports were spooled, not sent"
    assert "spooled report" not in master.log.read_text(), "reports came through the spool"
    assert "cannot verify" not in logs and "CERTIFICATE_VERIFY_FAILED" not in logs, logs
    # The job verified the master with the copy of its certificate in the job directory.
    assert (job_dir / "master-cert.pem").read_text() == (tls_dir / "server.pem").read_text()
    info = load_json((job_dir / "trial.json").read_text())
    assert info["master_url"].startswith("https://")
    assert info["master_cert_file"] == "master-cert.pem"
    scripts = "".join(p.read_text() for p in job_dir.glob("*.sh"))
    assert f"DET_MASTER_CERT_FILE={job_dir / 'master-cert.pem'}" in scripts


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_det_refuses_an_unverified_certificate(master: LiveMaster, tls_dir: Path) -> None:
    master.env.pop("DET_MASTER_CERT_FILE", None)
    refused = master.det("experiment", "list")
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert "cannot verify the TLS certificate" in lines[0]
    assert "DET_MASTER_CERT_FILE=" in lines[0] and "Traceback" not in refused.stderr
    # A plain HTTP client gets nothing from an HTTPS master either.
    with pytest.raises(httpx.TransportError):
        httpx.get(master.url.replace("https://", "http://") + "/api/v1/master", timeout=10)
    # The web pages are served over HTTPS too.
    page = httpx.get(master.url + "/", timeout=30,
                     verify=ssl.create_default_context(cafile=str(tls_dir / "ca.pem")))
    assert page.status_code == 200 and "<html" in page.text.lower()
    # Told the CA (or asked not to verify), det works.
    master.env["DET_MASTER_CERT_FILE"] = str(tls_dir / "ca.pem")
    assert master.det("experiment", "list").returncode == 0
    master.env["DET_MASTER_CERT_FILE"] = "noverify"
    assert master.det("experiment", "list").returncode == 0
