"""Helpers for the integration tier (no fixtures here; see conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@dataclass
class LiveMaster:
    url: str
    env: dict[str, str]
    job_root: Path
    log: Path

    def det(self, *args: str, check: bool = False,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Run the real ``det`` CLI against this master."""
        result = subprocess.run([str(BIN / "det"), "-m", self.url, *args], env=self.env,
                                capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"det {' '.join(args)} failed ({result.returncode}):\n"
                                 f"{result.stdout}\n{result.stderr}")
        return result

    def api(self, path: str) -> Any:
        return httpx.get(f"{self.url}/api/v1{path}", timeout=30).json()


def sacct_state(job_id: str, env: dict[str, str]) -> str:
    """The job's state in Slurm's accounting (waits a little for slurmdbd to catch up)."""
    for _ in range(30):
        out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"], env=env,
                             capture_output=True, text=True).stdout.strip()
        if out and out not in ("PENDING", "RUNNING", "COMPLETING"):
            return out.split()[0]
        time.sleep(1)
    return out


def write_experiment(directory: Path, config: dict[str, Any], files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def load_json(text: str) -> Any:
    return json.loads(text)
