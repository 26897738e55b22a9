"""A script that creates its own process group, as Determined's
``core_api_pytorch_mnist/model_def_distributed.py`` does, on 4 ranks of the dev cluster.

That tutorial asks for NCCL (GPUs only); this is the same pattern on gloo: the entrypoint
goes through Determined's launcher module, the script calls ``init_process_group`` with
the ``env://`` variables hpcdet exported, builds its DistributedContext with
``from_torch_distributed()`` and reports what the ranks computed together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tutorials import trial_log, wait_until_ended

pytestmark = [pytest.mark.compat, pytest.mark.torch, pytest.mark.slurm]

SCRIPT = '''\
import torch
import torch.distributed as dist

import hpcdet as det

dist.init_process_group("gloo")
distributed = det.core.DistributedContext.from_torch_distributed()
with det.core.init(distributed=distributed) as core_context:
    total = torch.tensor([float(distributed.rank)])
    dist.all_reduce(total)
    ranks = core_context.distributed.allgather(distributed.get_rank())
    if distributed.rank == 0:
        core_context.train.report_validation_metrics(
            steps_completed=1, metrics={"rank_sum": total.item(), "ranks": len(ranks)})
'''
CONFIG = {
    "name": "own-group",
    "entrypoint": "python3 -m determined.launch.torch_distributed python3 own_group.py",
    "searcher": {"name": "single", "metric": "rank_sum"},
    "resources": {"slots_per_trial": 4},
    "max_restarts": 0,
}


def test_a_script_owns_the_process_group_it_creates(compat_master: Any,
                                                    tmp_path: Path) -> None:
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "own_group.py").write_text(SCRIPT)
    (context / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    out = compat_master.det("experiment", "create", str(context / "config.yaml"),
                            str(context), check=True).stdout
    exp_id = int(next(li for li in out.splitlines() if li.startswith("Created")).split()[-1])
    exp = wait_until_ended(compat_master, exp_id, 600)
    trial_id = exp["trials"][0]["id"]
    log = trial_log(compat_master, trial_id)
    assert exp["experiment"]["state"] == "COMPLETED", log[-60:]
    assert sum("creates its own process group" in line for line in log) == 4, log[-60:]
    metrics = compat_master.api(f"/trials/{trial_id}/metrics?group=validation")["metrics"]
    assert [m["metrics"] for m in metrics] == [{"rank_sum": 6, "ranks": 4}]
