"""Determined's batch-inference example (``TorchBatchProcessor``), imports changed only.

``examples/features/torch_batch_process_core_api_comparison/`` of Determined 0.38.1:
``torch_batch_process_inference.py`` runs ``model.build_model()`` over CIFAR-10's test set
with ``experimental.torch_batch_process(MyProcessor, inference_data, batch_size=200,
checkpoint_interval=5)``, each batch's predictions and input saved with
``context.upload_path()``; ``torch_batch_process_config.yaml`` launches it on 2 slots with
``determined.launch.torch_distributed``. The originals are under
``tests/data/determined/examples/``; the copies under ``tests/compat/examples/`` differ in
their imports and the CIFAR-10 download (``synthetic_cifar10``: 2200 records, 11 batches).

On the dev Slurm cluster the experiment must end COMPLETED with: rank 0 having processed
global batches 0, 2, ..., 10 and rank 1 batches 1, 3, ..., 9 (the records in each output
file are the right ones), checkpoints at steps 5 and 6 (6 = ceil(11 / 2) steps per rank)
naming the run's output uuid, and the progress at 1.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from tutorials import REPO, disallowed_changes, trial_log, wait_until_ended

pytestmark = pytest.mark.compat

EXAMPLE = "torch_batch_process_core_api_comparison"
ORIGINAL = REPO / "tests" / "data" / "determined" / "examples" / "features" / EXAMPLE
EXAMPLES = Path(__file__).resolve().parent / "examples"
COPY = EXAMPLES / EXAMPLE
FILES = ["torch_batch_process_inference.py", "model.py", "constants.py",
         "torch_batch_process_config.yaml"]
# The one original line the synthetic-data region replaces.
DATASET_LINES = [r"^\s*inference_data = tv\.datasets\.CIFAR10\($"]
BATCH_SIZE = 200  # the example's
BATCHES = 11  # synthetic_cifar10.TEST_SIZE / BATCH_SIZE
RANKS = 2  # slots_per_trial in the example's config
STEPS = 6  # per rank: ceil(BATCHES / RANKS)


@pytest.mark.parametrize("name", FILES)
def test_only_imports_and_the_dataset_line_differ(name: str) -> None:
    original = (ORIGINAL / name).read_text().splitlines()
    copy = (COPY / name).read_text().splitlines()
    problems = disallowed_changes(original, copy, dataset_patterns=DATASET_LINES)
    assert not problems, "\n".join(problems)


def _context(where: Path) -> Path:
    context = where / f"ctx-{EXAMPLE}"
    shutil.copytree(COPY, context, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(EXAMPLES / "synthetic_cifar10.py", context)
    return context


def _expected_labels() -> list[list[int]]:
    """Each global batch's labels, as the example's dataset yields them."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        import synthetic_cifar10
    finally:
        sys.path.remove(str(EXAMPLES))
    targets = synthetic_cifar10.CIFAR10(train=False).targets
    assert len(targets) == BATCHES * BATCH_SIZE
    return [targets[b * BATCH_SIZE:(b + 1) * BATCH_SIZE] for b in range(BATCHES)]


@pytest.mark.slurm
def test_two_ranks_process_their_shares_on_the_cluster(compat_master: Any,
                                                       tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    context = _context(tmp_path)
    created = compat_master.det("experiment", "create",
                                str(context / "torch_batch_process_config.yaml"), str(context),
                                check=True)
    line = next(li for li in created.stdout.splitlines() if li.startswith("Created experiment"))
    exp_id = int(line.split()[-1])
    exp = wait_until_ended(compat_master, exp_id, timeout=600)
    (trial_row,) = exp["trials"]
    trial_id = int(trial_row["id"])
    log = "\n".join(trial_log(compat_master, trial_id))
    assert exp["experiment"]["state"] == "COMPLETED", log[-4000:]
    assert exp["experiment"]["progress"] == 1.0
    detail = json.loads(compat_master.det("trial", "describe", str(trial_id), "--json",
                                          check=True).stdout)

    # A checkpoint every 5 steps and one at the end, all naming the same output uuid.
    checkpoints = sorted(detail["checkpoints"], key=lambda c: c["steps_completed"])
    assert [c["steps_completed"] for c in checkpoints] == [5, STEPS], checkpoints
    assert [c["metadata"]["steps_completed"] for c in checkpoints] == [5, STEPS]
    (output_uuid,) = {c["metadata"]["default_output_uuid"] for c in checkpoints}
    assert all("batch_completed.json" in c["resources"] for c in checkpoints), checkpoints

    # Each rank's upload_path() files: its batches, holding the records of its share.
    outputs = Path(checkpoints[-1]["storage_path"]).parent / output_uuid
    expected = _expected_labels()
    for rank in range(RANKS):
        files = sorted((outputs / f"rank_{rank}").iterdir(),
                       key=lambda p: int(p.name.rsplit("_", 1)[1]))
        mine = list(range(rank, BATCHES, RANKS))  # global batches r, r+2, ...
        assert [p.name for p in files] == [f"prediction_output_{i}"
                                           for i in range(len(mine))], files
        for batch_idx, path in enumerate(files):
            (output,) = torch.load(path)
            images, labels = output["input"]
            assert tuple(output["predictions"].shape) == (BATCH_SIZE, 10)
            assert tuple(images.shape) == (BATCH_SIZE, 3, 32, 32)
            assert labels.tolist() == expected[mine[batch_idx]], (rank, batch_idx)
