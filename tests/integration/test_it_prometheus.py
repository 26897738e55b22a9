"""A real Prometheus server scrapes a live master's ``/metrics`` while a trial runs.

Debian's ``prometheus`` (scripts/ensure-prometheus) is started on a free port, scraping
every second with the master's scrape token (``metrics.allow: [token]``); the test asks its
query API (``/api/v1/query``) and sees the numbers move as the stand-in trial runs on the
dev Slurm cluster: the trial RUNNING (held there by its gate), then COMPLETED; the
reconciler's cycles counting up; sbatch counted; the trial's reported metrics ingested.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from conftest import free_port
from it_helpers import LiveMaster, missing, standin_config, standin_context, wait_for

pytestmark = [pytest.mark.slurm, pytest.mark.prometheus]
TOKEN = "it-scrape-token-0123456789"


@pytest.fixture
def master_settings(tmp_path: Path) -> dict[str, Any]:
    token_file = tmp_path / "metrics-token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    return {"metrics": {"allow": ["token"], "token_file": str(token_file)}}


@pytest.fixture
def prometheus(master: LiveMaster, tmp_path: Path) -> Iterator[str]:
    """A Prometheus server scraping ``master`` every second; its URL."""
    binary = shutil.which("prometheus")
    if binary is None:
        missing("Debian's prometheus (scripts/ensure-prometheus)")
    token = tmp_path / "prometheus-token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
        "scrape_configs": [{
            "job_name": "hpcdet",
            "authorization": {"type": "Bearer", "credentials_file": str(token)},
            "static_configs": [{"targets": [master.url.removeprefix("http://")]}],
        }],
    }))
    port = free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def query(prometheus: str, expr: str) -> dict[tuple[tuple[str, str], ...], float]:
    """``expr``'s value now, per series (its labels but ``__name__``, job and instance)."""
    try:
        answer = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr},
                           timeout=10).json()
    except (httpx.TransportError, ValueError):  # not up yet
        return {}
    result: dict[tuple[tuple[str, str], ...], float] = {}
    for series in answer.get("data", {}).get("result", []):
        labels = {k: v for k, v in series["metric"].items()
                  if k not in ("__name__", "job", "instance")}
        result[tuple(sorted(labels.items()))] = float(series["value"][1])
    return result


def scalar(prometheus: str, expr: str) -> float:
    """The value of an expression of one series (0 when it has none)."""
    return sum(query(prometheus, expr).values())


def gated_config(gate: Path) -> dict[str, Any]:
    """Two epochs of four batches, held after the first until ``gate`` exists."""
    return standin_config("scraped", {"epochs": 2},
                          ["STANDIN_BATCHES_PER_EPOCH=4", f"STANDIN_GATE={gate}"])


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_prometheus_sees_a_trial_run_and_complete(master: LiveMaster, prometheus: str,
                                                  tmp_path: Path) -> None:
    up = wait_for(lambda: scalar(prometheus, 'up{job="hpcdet"}'), "Prometheus to scrape "
                  "the master (up == 1)", 120)
    assert up == 1
    cycles = wait_for(lambda: scalar(prometheus, "hpcdet_reconciler_cycles_total"),
                      "a reconciler cycle in Prometheus", 120)
    gate = tmp_path / "gate"
    context = standin_context(tmp_path / "context")
    path = tmp_path / "scraped.yaml"
    path.write_text(yaml.safe_dump(gated_config(gate)))
    master.det("experiment", "create", str(path), str(context), check=True)

    wait_for(lambda: scalar(prometheus, 'hpcdet_trials{state="RUNNING"}') == 1,
             "Prometheus to see the trial RUNNING", 240)
    assert scalar(prometheus, 'hpcdet_scheduler_commands_total{command="sbatch",'
                  'outcome="ok"}') >= 1
    wait_for(lambda: scalar(prometheus, "hpcdet_ingest_metric_rows_total") > 0,
             "the first epoch's reports ingested", 120)
    gate.touch()
    wait_for(lambda: scalar(prometheus, 'hpcdet_trials{state="COMPLETED"}') == 1,
             "Prometheus to see the trial COMPLETED", 240)
    assert scalar(prometheus, 'hpcdet_trials{state="RUNNING"}') == 0
    assert scalar(prometheus, 'hpcdet_experiments{state="COMPLETED"}') == 1
    assert scalar(prometheus, "hpcdet_reconciler_cycles_total") > cycles
    assert scalar(prometheus, "hpcdet_reconciler_cycle_duration_seconds_count") > 0
