"""Fault injection on the real dev cluster: each fault hits a two-rank trial mid-training.

Every scenario runs the same trial, the stand-in (``standin/standin.py``: the digits
trial's reports, checkpoints and preemption on the standard library, paced by a short
sleep per batch so that there is time to strike; what it "trains" resumes from its
checkpoint, so a wrong resumption changes its values) and must end with the trial
COMPLETED, its restarts counted as the rules say, every metric row of an uninterrupted
run present exactly once, and the same validation (and training) values as that run:

1. ``kill -9`` of the master, restarted a few seconds later (PostgreSQL);
2. a node failing under the trial (its slurmd and processes killed, the node marked DOWN);
3. a job in the high-priority ``urgent`` partition preempting the trial;
4. ``scontrol requeue`` of the trial's job (also with the master on slurmrestd, which reads
   the requeue from the job's restart count: docs/admin/slurmrestd.md);
5. a partition ``MaxTime`` (one minute) shorter than the trial;
6. pause, then activate;
7. ``slurmctld`` restarted while the trial runs;

and a trial whose code fails every time ends ERROR after exactly ``max_restarts`` restarts
(on 25.11 with expedited requeue: each failed execution Slurm holds is read as the failure
and its held job cancelled). The node failure, the preemption and the ``scontrol requeue``
run with expedited requeue too, where the cluster allows it (25.11), and read as before.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import yaml
from it_helpers import (
    REPO,
    STANDIN_ENTRYPOINT,
    TRANSPORTS,
    LiveMaster,
    experiment_with_trials,
    load_json,
    standin_context,
    transport_settings,
    trials_of,
)

pytestmark = [pytest.mark.slurm]
EPOCHS = 12
# Seconds of sleep per batch: 23 batches per epoch, so about half a second per epoch.
PACE = "0.02"
# About five seconds per epoch, a minute in all: longer than the short partition's one
# minute, and long enough for the master to be down and back while the trial trains.
SLOW_PACE = "0.2"
_reference: dict[str, dict[tuple[str, int, str], float]] = {}


@pytest.fixture
def resource_manager_settings(request: pytest.FixtureRequest) -> dict[str, Any]:
    # The short partition's MaxTime is one minute: warn the trial 30 s before it.
    return {"walltime_signal_seconds": 30, **transport_settings(request)}


def _context(tmp_path: Path) -> Path:
    return standin_context(tmp_path / "context")


def _config(name: str, pace: str = PACE, gate: Path | None = None,
            **extra: Any) -> dict[str, Any]:
    """The stand-in trial's experiment; with ``gate``, the trial waits after its first epoch
    (validated, checkpointed) until the test opens the gate (:func:`open_gate`), or stops
    there when asked to: a test acts on a trial that is mid-training however slow the
    machine is, instead of racing a trial that may finish first."""
    env = [f"STANDIN_BATCH_SLEEP={pace}", *([f"STANDIN_GATE={gate}"] if gate else [])]
    return {
        "name": name,
        "entrypoint": STANDIN_ENTRYPOINT,
        "hyperparameters": {"lr": 0.01, "hidden_size": 64, "global_batch_size": 64},
        # Report training metrics and look at preemption after every batch, so that any
        # stop lands on a reported step (and the rows match an uninterrupted run's).
        "scheduling_unit": 1,
        "min_validation_period": {"epochs": 1},
        "min_checkpoint_period": {"epochs": 1},
        "searcher": {"name": "single", "metric": "validation_loss", "smaller_is_better": True,
                     "max_length": {"epochs": EPOCHS}},
        "resources": {"slots_per_trial": 2},
        "slurm": {"slots_per_node": 2},
        "environment": {"environment_variables": env},
        "reproducibility": {"experiment_seed": 11},
        "max_restarts": 3,
        "preemption_timeout": 120,
        **extra,
    }


def create(master: LiveMaster, tmp_path: Path, config: dict[str, Any]) -> tuple[int, int]:
    """Create the experiment; returns (experiment id, trial id) once its trial exists."""
    path = tmp_path / f"{config['name']}.yaml"
    path.write_text(yaml.safe_dump(config))
    out = master.det("experiment", "create", str(path), str(_context(tmp_path)),
                     check=True).stdout
    exp_id = int(next(li for li in out.splitlines() if li.startswith("Created")).split()[-1])
    trial = wait_for(lambda: (trials_of(master, exp_id) or [None])[0],
                     "the trial to exist", 60)
    return exp_id, int(trial["id"])


def wait_for(probe: Callable[[], Any], what: str, timeout: float = 240) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = probe()
        except (httpx.TransportError, ValueError):  # a master (worker) restarting: ask again
            value = None
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def trial_of(master: LiveMaster, trial_id: int) -> dict[str, Any]:
    return dict(master.api(f"/trials/{trial_id}")["trial"])


def open_gate(gate: Path) -> None:
    gate.touch()


def wait_for_epochs(master: LiveMaster, trial_id: int, epochs: int) -> dict[str, Any]:
    """Wait until the trial runs and has validated ``epochs`` epochs; returns the trial."""
    def probe() -> dict[str, Any] | None:
        trial = trial_of(master, trial_id)
        latest = (trial.get("latest_validation") or {}).get("metrics") or {}
        running = trial["state"] == "RUNNING"
        return trial if running and latest.get("epochs", 0) >= epochs else None
    return dict(wait_for(probe, f"trial {trial_id} to validate {epochs} epochs"))


def wait_until_ended(master: LiveMaster, exp_id: int, timeout: float = 420) -> dict[str, Any]:
    answer = wait_for(lambda: (lambda a: a if a["experiment"]["ended_at"] else None)(
        experiment_with_trials(master, exp_id)), f"experiment {exp_id} to end", timeout)
    return dict(answer)


def metric_rows(master: LiveMaster, trial_id: int) -> list[tuple[str, int, str, float]]:
    """Every visible (not rolled back) metric row of the trial, straight from the database."""
    engine = sa.create_engine(master.db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                'SELECT "group", steps_completed, name, value FROM metrics WHERE trial_id = :t '
                "AND NOT archived AND \"group\" IN ('training', 'validation')"), {"t": trial_id})
            return [(g, int(s), n, float(v)) for g, s, n, v in rows]
    finally:
        engine.dispose()


def as_table(rows: list[tuple[str, int, str, float]]) -> dict[tuple[str, int, str], float]:
    """Rows keyed by (group, step, name); fails on a duplicate."""
    table: dict[tuple[str, int, str], float] = {}
    for group, steps, name, value in rows:
        assert (group, steps, name) not in table, f"duplicate metric row {group} {steps} {name}"
        table[(group, steps, name)] = value
    return table


def reference(master: LiveMaster, tmp_path: Path) -> dict[tuple[str, int, str], float]:
    """The uninterrupted run's metric rows (computed once per test session)."""
    if "rows" not in _reference:
        exp_id, trial_id = create(master, tmp_path, _config("reference"))
        answer = wait_until_ended(master, exp_id)
        assert answer["experiment"]["state"] == "COMPLETED", explain(master, answer)
        _reference["rows"] = as_table(metric_rows(master, trial_id))
    return _reference["rows"]


def explain(master: LiveMaster, answer: dict[str, Any]) -> str:
    trial = answer["trials"][0] if answer["trials"] else {}
    logs = master.det("trial", "logs", str(trial.get("id", 0)), "--tail", "60").stdout
    return f"{answer['experiment']['state']} {trial}\n{logs}\n{master.log.read_text()[-2000:]}"


def check_completed_like_reference(master: LiveMaster, tmp_path: Path, exp_id: int,
                                   trial_id: int) -> dict[str, Any]:
    """COMPLETED, every reference metric row exactly once, with the reference's values."""
    answer = wait_until_ended(master, exp_id)
    assert answer["experiment"]["state"] == "COMPLETED", explain(master, answer)
    rows = as_table(metric_rows(master, trial_id))
    expected = reference(master, tmp_path)
    assert set(rows) == set(expected), sorted(set(rows) ^ set(expected))[:10]
    assert rows == expected, [k for k in expected if rows[k] != expected[k]][:10]
    return trial_of(master, trial_id)


def slurm(master: LiveMaster, *argv: str) -> str:
    return subprocess.run(argv, env=master.env, capture_output=True, text=True,
                          check=True).stdout


def dev_cluster(*args: str) -> None:
    subprocess.run([str(REPO / "scripts" / "dev-cluster"), *args], check=True,
                   capture_output=True, text=True)


def active_job(trial: dict[str, Any]) -> dict[str, Any]:
    return next(j for j in reversed(trial["jobs"]) if j["active"])


@pytest.fixture(autouse=True)
def cancel_leftover_jobs(slurm: dict[str, str]) -> Iterator[None]:
    """A failed scenario must not leave its trial's job running into the next scenario."""
    yield
    listing = subprocess.run(["squeue", "-h", "-O", "JobID:|,Name:|,Comment:|"], env=slurm,
                             capture_output=True, text=True).stdout
    ours = [line.split("|")[0] for line in listing.splitlines()
            if "|hpcdet:it:" in line or "|urgent-preemptor|" in line]
    if ours:
        subprocess.run(["scancel", *ours], env=slurm, check=False)


@pytest.fixture
def revive_nodes(slurm: dict[str, str]) -> Iterator[list[str]]:
    failed: list[str] = []
    yield failed
    for node in failed:
        dev_cluster("revive-node", node)


@pytest.mark.parametrize("master", [pytest.param("postgresql", marks=pytest.mark.postgres)],
                         indirect=True)
def test_master_killed_mid_training_loses_nothing(master: LiveMaster, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    exp_id, trial_id = create(master, tmp_path, _config("master-kill", SLOW_PACE, gate))
    wait_for_epochs(master, trial_id, 1)
    master.kill9()
    open_gate(gate)  # 11 epochs to go, ~55 s: it is still training when the master is back
    time.sleep(8)  # the trial keeps training and buffering its reports meanwhile
    master.start()
    assert trial_of(master, trial_id)["state"] == "RUNNING"  # it was killed mid-training
    trial = check_completed_like_reference(master, tmp_path, exp_id, trial_id)
    assert (trial["restarts"], len(trial["jobs"])) == (0, 1), trial


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_node_failure_restarts_the_trial_from_its_checkpoint(
        master: LiveMaster, tmp_path: Path, revive_nodes: list[str]) -> None:
    gate = tmp_path / "gate"
    exp_id, trial_id = create(master, tmp_path, _config("node-failure", gate=gate))
    job = active_job(wait_for_epochs(master, trial_id, 1))
    node = job["nodes"]
    # On 25.11 the job asked for an expedited requeue: it runs again at once, read as before.
    expedited = master.env.get("HPCDET_DEV_SLURM") == "25.11"
    assert ("ExpeditedRequeue=Yes" in slurm(master, "scontrol", "show", "job", "-o",
                                            job["job_id"])) is expedited
    revive_nodes.append(node)
    dev_cluster("fail-node", node)
    wait_for(lambda: trial_of(master, trial_id)["restarts"] == 1, "the failure to count", 180)
    open_gate(gate)  # the restarted run trains on from the first epoch's checkpoint
    dev_cluster("revive-node", node)
    revive_nodes.remove(node)
    trial = check_completed_like_reference(master, tmp_path, exp_id, trial_id)
    assert (trial["restarts"], trial["interruptions"]) == (1, 0), trial


@pytest.mark.slurm_smoke
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_preemption_by_a_higher_priority_partition_is_not_a_restart(
        master: LiveMaster, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    exp_id, trial_id = create(master, tmp_path, _config("preempted", gate=gate))
    node = active_job(wait_for_epochs(master, trial_id, 1))["nodes"]
    slurm(master, "sbatch", "--parsable", "-p", "urgent", "-w", node, "--exclusive",
          "-J", "urgent-preemptor", "-o", str(tmp_path / "urgent-%j.out"), "--wrap", "sleep 10")
    wait_for(lambda: trial_of(master, trial_id)["interruptions"] >= 1, "the preemption", 180)
    open_gate(gate)
    trial = check_completed_like_reference(master, tmp_path, exp_id, trial_id)
    assert trial["restarts"] == 0 and trial["interruptions"] >= 1, trial


@pytest.mark.slurm_smoke
@pytest.mark.parametrize("resource_manager_settings", TRANSPORTS, indirect=True)
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_scontrol_requeue_is_adopted_as_an_interruption(
        master: LiveMaster, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    exp_id, trial_id = create(master, tmp_path, _config("requeued", gate=gate))
    job = active_job(wait_for_epochs(master, trial_id, 1))
    slurm(master, "scontrol", "requeue", job["job_id"])
    wait_for(lambda: trial_of(master, trial_id)["interruptions"] >= 1, "the requeue", 180)
    open_gate(gate)
    trial = check_completed_like_reference(master, tmp_path, exp_id, trial_id)
    assert trial["restarts"] == 0 and trial["interruptions"] >= 1, trial
    assert {j["job_id"] for j in trial["jobs"]} == {job["job_id"]}, trial  # the same job


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_a_trial_longer_than_the_partition_maxtime_completes_across_jobs(
        master: LiveMaster, tmp_path: Path) -> None:
    config = _config("walltime", SLOW_PACE, resources={"slots_per_trial": 2,
                                                       "resource_pool": "short"})
    exp_id, trial_id = create(master, tmp_path, config)
    trial = check_completed_like_reference(master, tmp_path, exp_id, trial_id)
    assert trial["restarts"] == 0 and trial["interruptions"] >= 1, trial
    assert len(trial["jobs"]) >= 2, trial


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_pause_then_activate_resumes_from_the_checkpoint(
        master: LiveMaster, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    exp_id, trial_id = create(master, tmp_path, _config("paused", gate=gate))
    wait_for_epochs(master, trial_id, 1)
    master.det("experiment", "pause", str(exp_id), check=True)
    paused = wait_for(lambda: (lambda t: t if t["state"] == "PAUSED" and not any(
        j["active"] for j in t["jobs"]) else None)(trial_of(master, trial_id)),
        "the paused trial's job to end", 120)
    assert master.api(f"/experiments/{exp_id}")["experiment"]["state"] == "PAUSED"
    time.sleep(3)
    assert len(trial_of(master, trial_id)["jobs"]) == len(paused["jobs"])  # nothing resubmitted
    open_gate(gate)
    master.det("experiment", "activate", str(exp_id), check=True)
    trial = check_completed_like_reference(master, tmp_path, exp_id, trial_id)
    assert trial["restarts"] == 0 and len(trial["jobs"]) == 2, trial


# exclusive: the controller's restart reaches every job and test of the cluster, so
# scripts/test runs it alone, after the streams.
@pytest.mark.exclusive
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_slurmctld_restart_while_the_trial_runs(master: LiveMaster, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    exp_id, trial_id = create(master, tmp_path, _config("ctld-restart", gate=gate))
    wait_for_epochs(master, trial_id, 1)
    # This version's controller only (as scripts/dev-cluster finds it): a plain
    # `pkill -x slurmctld` also stopped the 22.05 cluster's, which `up` here does not restart.
    conf = master.env["SLURM_CONF"].replace(".", r"\.")
    subprocess.run(["pkill", "-TERM", "-f", f"^[^ ]*slurmctld -f {conf}$"], check=True)
    open_gate(gate)
    time.sleep(6)  # the master's polls fail meanwhile; the trial keeps training
    dev_cluster("up")
    trial = check_completed_like_reference(master, tmp_path, exp_id, trial_id)
    assert (trial["restarts"], len(trial["jobs"])) == (0, 1), trial


# slurm2511: the dev cluster's 25.11 allows an expedited requeue, so every job of this trial
# asks for one, and Slurm requeues and holds each failed execution instead of ending it FAILED.
@pytest.mark.slurm2511
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_a_trial_failing_every_time_ends_error_after_max_restarts(
        master: LiveMaster, tmp_path: Path) -> None:
    config = _config("always-fails", entrypoint="python3 -c 'import sys; sys.exit(3)'",
                     max_restarts=2)
    exp_id, trial_id = create(master, tmp_path, config)
    answer = wait_until_ended(master, exp_id)
    trial = trial_of(master, trial_id)
    assert answer["experiment"]["state"] == "ERROR" and trial["state"] == "ERROR", trial
    assert trial["restarts"] == 2 and len(trial["jobs"]) == 3, trial
    history = [h["cause"] for h in master.api(f"/trials/{trial_id}")["trial"]["history"]]
    assert any("max_restarts (2) reached" in cause for cause in history), history
    assert load_json(master.det("trial", "describe", str(trial_id), "--json",
                                check=True).stdout)["trial"]["restarts"] == 2
    check_held_failures_cancelled(master, trial)


def check_held_failures_cancelled(master: LiveMaster, trial: dict[str, Any]) -> None:
    """Each job asked for an expedited requeue, ended held after its failure (read as that
    failure, its exit code from the exit file) and was cancelled: none is left queued."""
    for job in trial["jobs"]:
        shown = slurm(master, "scontrol", "show", "job", "-o", job["job_id"])
        assert "Requeue=1" in shown.split() and "ExpeditedRequeue=Yes" in shown.split(), shown
        assert "JobState=CANCELLED" in shown.split(), shown  # held, then cancelled
        assert (job["phase"], job["native_state"], job["active"]) == (
            "FAILED", "REQUEUE_HOLD", False), job
        # 3, the code's exit, from the exit file; once, in a CI rehearsal at load 14, one of
        # three jobs said 143 (SIGTERM): not yet explained (stop 40's note), so any failure.
        assert job["exit_code"] not in (0, None), job
    queued = slurm(master, "squeue", "-h", "-t", "PENDING,REQUEUE_HOLD", "-o", "%i",
                   "-j", ",".join(job["job_id"] for job in trial["jobs"]))
    assert queued.strip() == "", queued
