"""``bench/requeue.py --trial``: a trial's job requeued after a node failure, under det-master.

One ``det-master`` per mode (``plain``: ``resource_manager.expedited_requeue: false``;
``expedite``: true, hpcdet's default), each on its own SQLite database and job root. Each try
creates a one-trial experiment whose Core API code sleeps, waits until the master shows it
RUNNING, fails its node (``scripts/dev-cluster fail-node``) and times two clocks from there:
Slurm running the job again (``slurm_s``) and the master showing the trial RUNNING again
with its restart counted (``trial_s``). The experiment is killed and the node revived after
each try.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from _common import log
from ingest import free_port
from requeue import REPO, dev_cluster, job_fields, wait_for, wait_until
from soak import BIN, Master, cancel_leftovers, create_experiment

from hpcdet.master.db import migrate

TRIAL_CODE = '''\
"""Sleeps until told to stop: a trial whose job a node failure requeues."""
import time

import hpcdet as det

with det.core.init() as core:
    while not core.preempt.should_preempt():
        time.sleep(0.5)
'''


@dataclass
class ModeMaster(Master):
    """The soak bench's master, with expedited requeue on or off and a 1 s reconcile."""

    expedite: bool = True

    def write_config(self) -> Path:
        path = super().write_config()
        config = json.loads(path.read_text())
        config["reconciler"]["interval_seconds"] = 1
        config["resource_manager"]["expedited_requeue"] = self.expedite
        path.write_text(json.dumps(config, indent=2))  # JSON is YAML
        return path


class TrialTries:
    """A master per mode, started on entry and stopped (its jobs cancelled) on exit."""

    def __init__(self, modes: list[str], partition: str) -> None:
        self.modes, self.partition = modes, partition
        self.workdir = Path(tempfile.mkdtemp(prefix="hpcdet-bench-requeue-"))
        self.masters: dict[str, ModeMaster] = {}

    def __enter__(self) -> TrialTries:
        context = self.workdir / "context"
        context.mkdir()
        (context / "sleeper.py").write_text(TRIAL_CODE)
        env = {**os.environ, "PYTHONPATH": str(REPO), "DET_USER": "bench"}
        for mode in self.modes:
            root = self.workdir / mode
            root.mkdir()
            db_url = f"sqlite:///{root / 'master.sqlite'}"
            migrate(db_url)
            master = ModeMaster(root, db_url, free_port(), env, expedite=mode == "expedite")
            master.start()
            self.masters[mode] = master
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for master in self.masters.values():
            master.stop()
            cancel_leftovers(master.workdir / "jobs")
        shutil.rmtree(self.workdir, ignore_errors=True)

    def run(self, repeat: int) -> dict[str, dict[str, list[float]]]:
        """Each mode ``repeat`` times, alternating; ``{clock: {mode: [seconds]}}``."""
        clocks: dict[str, dict[str, list[float]]] = {
            "slurm_s": {mode: [] for mode in self.modes},
            "trial_s": {mode: [] for mode in self.modes}}
        for attempt in range(repeat):
            for mode in self.modes:
                slurm_s, trial_s = self.one_try(mode)
                log(f"try {attempt + 1}/{repeat} {mode}: job running again after "
                    f"{slurm_s:.1f} s, trial RUNNING again after {trial_s:.1f} s")
                clocks["slurm_s"][mode].append(slurm_s)
                clocks["trial_s"][mode].append(trial_s)
        return clocks

    def one_try(self, mode: str) -> tuple[float, float]:
        """Seconds from the node's failure to the job, then the trial, running again."""
        master = self.masters[mode]
        config = master.workdir / f"experiment-{time.monotonic_ns()}.yaml"
        config.write_text(json.dumps(experiment_config(mode, self.partition)))
        exp_id = create_experiment(master, config, self.workdir / "context")
        try:
            trial = wait_until(lambda: running_trial(master, exp_id), "the trial running",
                               poll=0.2)
            job = trial["jobs"][-1]
            check_requeue_line(master, trial, mode)
            failed = time.monotonic()
            dev_cluster("fail-node", job["nodes"])
            try:
                wait_for(job["job_id"], "running again", again)
                slurm_s = time.monotonic() - failed
                wait_until(lambda: (running_trial(master, exp_id) or {}).get("restarts") == 1,
                           "the trial running again", poll=0.1)
                return slurm_s, time.monotonic() - failed
            finally:
                dev_cluster("revive-node", job["nodes"])
        finally:
            subprocess.run([str(BIN / "det"), "-m", master.url, "experiment", "kill",
                            str(exp_id)], env=master.env, capture_output=True, check=False)
            wait_until(lambda: not active_jobs(master, exp_id), "the killed trial's job to end",
                       poll=0.5)


def experiment_config(mode: str, partition: str) -> dict[str, Any]:
    return {"name": f"bench-requeue-{mode}", "entrypoint": "python3 sleeper.py",
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
            "resources": {"slots_per_trial": 1, "resource_pool": partition},
            "environment": {"environment_variables": ["HPCDET_PREEMPT_POLL_SECONDS=1"]},
            "max_restarts": 5}


def api(master: Master, path: str) -> Any:
    request = urllib.request.Request(f"{master.url}/api/v1{path}",
                                     headers={"X-Hpcdet-User": "bench"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def trial_of(master: Master, exp_id: int) -> dict[str, Any] | None:
    trials = api(master, f"/experiments/{exp_id}/trials").get("trials") or []
    if not trials:
        return None
    return dict(api(master, f"/trials/{trials[0]['id']}")["trial"])


def running_trial(master: Master, exp_id: int) -> dict[str, Any] | None:
    """The experiment's trial once the master shows it RUNNING on a node."""
    trial = trial_of(master, exp_id)
    if trial is None or trial["state"] != "RUNNING" or not trial["jobs"]:
        return None
    return trial if trial["jobs"][-1].get("nodes") else None


def active_jobs(master: Master, exp_id: int) -> list[Any]:
    trial = trial_of(master, exp_id)
    return [job for job in (trial or {}).get("jobs", []) if job["active"]]


def again(fields: dict[str, str]) -> bool:
    return fields.get("JobState") == "RUNNING" and fields.get("Restarts") == "1"


def check_requeue_line(master: Master, trial: dict[str, Any], mode: str) -> None:
    """The job hpcdet rendered asks for what the mode says (scontrol's view of it)."""
    fields = job_fields(trial["jobs"][-1]["job_id"])
    expedited = fields.get("ExpeditedRequeue") == "Yes"
    if expedited != (mode == "expedite") or fields.get("Requeue") != "1":
        raise SystemExit(f"{mode}: job {trial['jobs'][-1]['job_id']} has Requeue="
                         f"{fields.get('Requeue')} ExpeditedRequeue={expedited}")
