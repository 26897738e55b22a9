"""The PyTorchTrial trainer on the dev cluster: 2 nodes x 2 ranks train the digits trial.

The trial is the example's ``DigitsTrial`` with a thin test-only subclass
(:data:`EVIDENCE_TRIAL`, written next to a copy of ``examples/digits``) that leaves
evidence of what the trainer did: after the last training batch each rank prints a
SHA-256 of its model's weights, and every training and validation batch reports a
``rank`` metric (the rank's number), whose mean over 4 ranks is 1.5 only if the trainer
averaged the metrics over all of them (rank 0 alone would report 0).

Stop and resume: Slurm's warning signal (``scancel --signal=USR2``, what ``--signal=USR2@N``
sends before a time limit) reaches the trial's job once the master has registered its first
checkpoint; the trial checkpoints and exits, the master resubmits it from that checkpoint
(an interruption, not a restart), and the second job ends with the weights of an
uninterrupted run, bit for bit.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from it_helpers import REPO, LiveMaster, load_json

pytestmark = [pytest.mark.slurm, pytest.mark.torch]


@pytest.fixture
def master_settings(tmp_path: Path) -> dict[str, Any]:
    """The tests keep checkpoints in ``tmp_path/ckpt``: a storage root the site allows."""
    return {"security": {"storage_roots": [str(tmp_path / "ckpt"), str(tmp_path / "jobs")]}}
DIGITS = REPO / "examples" / "digits"
TOTAL_BATCHES = 96  # a bit over 4 epochs of 23 batches: the run ends mid-epoch
PERIOD_BATCHES = 24  # validate and checkpoint every 24 batches: not on an epoch boundary
# The resume test runs the job shape, 2 nodes x 2 ranks: with more than two ranks
# only the rank-ordered all-reduce (hpcdet/pytorch/_allreduce.py) makes the resumed
# weights bit-identical (this test found the drift).
RESUME_SLOTS_PER_NODE = 2
WEIGHTS_LINE = re.compile(r"it-weights rank=(\d+) batches=(\d+) sha256=([0-9a-f]{64})")

EVIDENCE_TRIAL = '''\
"""DigitsTrial plus evidence for tests/integration/test_it_pytorch_trial.py."""
import hashlib
import os
import time

from model_def import DigitsTrial


def weights_sha256(model):
    model = getattr(model, "module", model)  # DistributedDataParallel's inner model
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


class EvidenceTrial(DigitsTrial):
    def train_batch(self, batch, epoch_idx, batch_idx):
        # Slows training down (numerics unchanged), so a stop can land between checkpoints.
        time.sleep(float(self.context.get_hparam("batch_sleep")))
        metrics = super().train_batch(batch, epoch_idx, batch_idx)
        rank = int(os.environ["RANK"])
        total = self.context.get_experiment_config()["searcher"]["max_length"]["batches"]
        if batch_idx + 1 == total:
            print(f"it-weights rank={rank} batches={batch_idx + 1} "
                  f"sha256={weights_sha256(self.model)}", flush=True)
        return {**metrics, "rank": float(rank)}

    def evaluate_batch(self, batch, batch_idx):
        metrics = super().evaluate_batch(batch, batch_idx)
        return {**metrics, "rank": float(os.environ["RANK"])}
'''


def experiment_config(tmp_path: Path, name: str, batch_sleep: float,
                      slots_per_node: int) -> dict[str, Any]:
    """``2 * slots_per_node`` ranks on 2 nodes."""
    return {
        "name": name, "entrypoint": "evidence_trial:EvidenceTrial",
        "hyperparameters": {"lr": 0.01, "hidden_size": 64, "global_batch_size": 64,
                            "batch_sleep": batch_sleep},
        "searcher": {"name": "single", "metric": "validation_loss", "smaller_is_better": True,
                     "max_length": {"batches": TOTAL_BATCHES}},
        "min_validation_period": {"batches": PERIOD_BATCHES},
        "min_checkpoint_period": {"batches": PERIOD_BATCHES},
        "scheduling_unit": 4,  # report (and look at the preemption flag) every 4 batches
        # hpcdet's schema default is false (as in Determined's schema); ask for the mean.
        "optimizations": {"average_training_metrics": True},
        "reproducibility": {"experiment_seed": 7},  # the same trial seed in every run
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(tmp_path / "ckpt")},
        "resources": {"slots_per_trial": 2 * slots_per_node},
        "slurm": {"slots_per_node": slots_per_node},
        "environment": {"environment_variables": ["OMP_NUM_THREADS=1"]},
        "max_restarts": 0,
    }


def context_dir(tmp_path: Path) -> Path:
    """A copy of examples/digits plus the evidence trial."""
    ctx = tmp_path / "ctx"
    if not ctx.exists():
        shutil.copytree(DIGITS, ctx, ignore=shutil.ignore_patterns("__pycache__", "*.pt",
                                                                    "checkpoints"))
        (ctx / "evidence_trial.py").write_text(EVIDENCE_TRIAL)
    return ctx


def create(master: LiveMaster, tmp_path: Path, name: str, batch_sleep: float = 0.0,
           *extra: str, slots_per_node: int = 2) -> tuple[int, str]:
    """Submit an experiment; returns (experiment id, det's stdout)."""
    path = tmp_path / f"{name}.yaml"
    config = experiment_config(tmp_path, name, batch_sleep, slots_per_node)
    path.write_text(yaml.safe_dump(config))
    result = master.det("experiment", "create", str(path), str(context_dir(tmp_path)), *extra,
                        check=True)
    if "--dry-run" in extra:
        return 0, result.stdout
    line = next(li for li in result.stdout.splitlines() if li.startswith("Created experiment"))
    return int(line.split()[-1]), result.stdout


def describe(master: LiveMaster, exp_id: int) -> dict[str, Any]:
    return dict(load_json(master.det("experiment", "describe", str(exp_id), "--json",
                                     check=True).stdout))


def trial_detail(master: LiveMaster, trial_id: int) -> dict[str, Any]:
    return dict(load_json(master.det("trial", "describe", str(trial_id), "--json",
                                     check=True).stdout))


def wait_for(what: str, ready: Any, timeout: float = 300, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def ended(master: LiveMaster, exp_id: int) -> dict[str, Any]:
    """The experiment once it has ended, with its first trial's log on failure."""
    exp = wait_for(f"experiment {exp_id} to end",
                   lambda: (e := describe(master, exp_id))["experiment"]["ended_at"] and e)
    if exp["experiment"]["state"] != "COMPLETED":
        trial_id = exp["trials"][0]["id"]
        logs = master.det("trial", "logs", str(trial_id)).stdout[-4000:]
        raise AssertionError(f"{exp}\n{logs}\n{master.log.read_text()[-2000:]}")
    return exp


def weight_hashes(lines: list[str]) -> dict[int, tuple[int, str]]:
    """{rank: (batches, sha256)} from the evidence lines in ``lines``."""
    found = {}
    for line in lines:
        match = WEIGHTS_LINE.search(line)
        if match:
            found[int(match[1])] = (int(match[2]), match[3])
    return found


def trial_log(master: LiveMaster, trial_id: int) -> list[str]:
    return [entry["line"] for entry in master.api(f"/trials/{trial_id}/logs")["logs"]]


def metrics(master: LiveMaster, trial_id: int, group: str) -> list[dict[str, Any]]:
    return list(master.api(f"/trials/{trial_id}/metrics?group={group}")["metrics"])


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_two_nodes_two_ranks_train_the_digits_trial(master: LiveMaster,
                                                    tmp_path: Path) -> None:
    exp_id, _ = create(master, tmp_path, "it-2x2")
    trial = ended(master, exp_id)["trials"][0]
    job_id = trial_detail(master, trial["id"])["trial"]["job_ids"][0]
    nodes = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "NNodes"],
                           env=master.env, capture_output=True, text=True).stdout.split()
    assert nodes == ["2"], nodes
    hashes = weight_hashes(trial_log(master, trial["id"]))
    assert sorted(hashes) == [0, 1, 2, 3], hashes
    assert len({digest for _, digest in hashes.values()}) == 1, f"replicas differ: {hashes}"
    assert {batches for batches, _ in hashes.values()} == {TOTAL_BATCHES}
    training = metrics(master, trial["id"], "training")
    assert training and all(m["metrics"]["rank"] == 1.5 for m in training), training
    assert training[-1]["metrics"]["loss"] < 0.5 * training[0]["metrics"]["loss"], training
    validation = metrics(master, trial["id"], "validation")
    assert [m["steps_completed"] for m in validation] == [24, 48, 72, 96], validation
    assert validation[-1]["metrics"]["validation_loss"] < validation[0]["metrics"][
        "validation_loss"]
    assert validation[-1]["metrics"]["accuracy"] > 0.85, validation
    assert validation[-1]["metrics"]["batches"] == TOTAL_BATCHES
    assert all(m["metrics"]["rank"] == 1.5 for m in validation), validation


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_a_stopped_and_resumed_trial_ends_with_the_weights_of_an_uninterrupted_one(
        master: LiveMaster, tmp_path: Path) -> None:
    whole_id, _ = create(master, tmp_path, "it-whole", slots_per_node=RESUME_SLOTS_PER_NODE)
    stopped_id, _ = create(master, tmp_path, "it-stopped", 0.1,
                           slots_per_node=RESUME_SLOTS_PER_NODE)
    stopped_trial = wait_for("the stopped trial", lambda: describe(master, stopped_id)["trials"])
    trial_id = stopped_trial[0]["id"]
    first = wait_for("a first checkpoint", lambda: trial_detail(master, trial_id)["checkpoints"],
                     interval=0.2)
    job_id = trial_detail(master, trial_id)["trial"]["job_ids"][0]
    # The walltime warning: the trial checkpoints and exits, and the master resubmits it
    # from that checkpoint (an interruption, not a restart).
    subprocess.run(["scancel", "--signal=USR2", job_id], env=master.env, check=True)
    stopped = trial_detail(master, ended(master, stopped_id)["trials"][0]["id"])
    trial = stopped["trial"]
    assert (trial["restarts"], trial["interruptions"]) == (0, 1), trial
    assert trial["job_ids"][0] == job_id and len(trial["job_ids"]) == 2, trial
    resumed_from = [c for c in stopped["checkpoints"] if c["steps_completed"] < TOTAL_BATCHES]
    assert resumed_from and first[0]["steps_completed"] <= resumed_from[-1]["steps_completed"]
    logs = master.api(f"/trials/{trial_id}/logs")["logs"]
    assert not weight_hashes([e["line"] for e in logs if e["job_id"] == job_id]), (
        "the stopped run went to the end")
    resumed = weight_hashes([e["line"] for e in logs if e["job_id"] == trial["job_ids"][1]])
    whole = weight_hashes(trial_log(master, ended(master, whole_id)["trials"][0]["id"]))
    assert sorted(resumed) == sorted(whole) == list(range(2 * RESUME_SLOTS_PER_NODE)), (
        resumed, whole)
    assert resumed == whole, f"resumed {resumed} != uninterrupted {whole}"
