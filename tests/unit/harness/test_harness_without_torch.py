"""A trial that never imports torch never loads it; one that does joins the group then.

Real harness processes (``python -m hpcdet.harness``), one per rank as srun starts them,
against the fake master of harness_fakes.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from harness_fakes import FakeMaster, job_environ, one_node_step, run_harness, write_job_dir

NO_TORCH = """
import json, random, resource, sys
import hpcdet.core

with hpcdet.core.init() as core:
    d = core.distributed
    core.train.report_training_metrics(1, {"loss": 1.0})
    result = {
        "rank": d.rank,
        "allgather": d.allgather(d.rank * 10),
        "broadcast": d.broadcast(f"from {d.rank}"),
        "random": random.random(),
        "torch_loaded": "torch" in sys.modules,
        "numpy_loaded": "numpy" in sys.modules,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }
    d.barrier()
with open(f"result-{d.rank}.json", "w") as out:
    json.dump(result, out)
"""

TORCH_LATER = """
import json, sys
import hpcdet.core

with hpcdet.core.init() as core:
    before = "torch" in sys.modules
    import torch
    import torch.distributed as dist
    result = {"before": before, "initialized": dist.is_initialized(),
              "world": dist.get_world_size(), "rank": dist.get_rank(),
              "store_collective": core.distributed.allgather(core.distributed.rank),
              "torch_random": torch.rand(1).item()}
with open(f"result-{result['rank']}.json", "w") as out:
    json.dump(result, out)
"""


def _job(tmp_path: pathlib.Path, master: FakeMaster, script: str) -> pathlib.Path:
    job = write_job_dir(tmp_path / "job", master.url)
    (job / "context" / "train.py").write_text(script)
    return job


def _results(job: pathlib.Path, ranks: int) -> list[dict[str, object]]:
    return [json.loads((job / "context" / f"result-{rank}.json").read_text())
            for rank in range(ranks)]


def test_a_one_slot_script_without_torch_never_loads_it(
        tmp_path: pathlib.Path, fake_master: FakeMaster) -> None:
    job = _job(tmp_path, fake_master, NO_TORCH)
    [rank] = run_harness(job, [job_environ(job)])
    assert rank.returncode == 0, rank.stderr
    assert "process group joined when the entrypoint imports torch" in rank.stderr
    [result] = _results(job, 1)
    assert (result["torch_loaded"], result["numpy_loaded"]) == (False, False)
    assert result["allgather"] == [0]
    assert fake_master.reports("training") == [{"steps_completed": 1, "metrics": {"loss": 1.0}}]


def test_two_ranks_without_torch_exchange_through_the_chiefs_store(
        tmp_path: pathlib.Path, fake_master: FakeMaster) -> None:
    job = _job(tmp_path, fake_master, NO_TORCH)
    ranks = run_harness(job, one_node_step(job))
    for rank in ranks:
        assert rank.returncode == 0, rank.stderr
    results = _results(job, 2)
    for result in results:
        assert result["torch_loaded"] is False
        assert result["allgather"] == [0, 10]
        assert result["broadcast"] == "from 0"
    # Seeded alike (the trial seed), as they were when the harness imported torch itself.
    assert results[0]["random"] == results[1]["random"]
    assert len(fake_master.reports("training")) == 1  # the chief's only


@pytest.mark.torch
def test_ranks_that_import_torch_late_join_the_group_then(
        tmp_path: pathlib.Path, fake_master: FakeMaster) -> None:
    pytest.importorskip("torch")
    job = _job(tmp_path, fake_master, TORCH_LATER)
    ranks = run_harness(job, one_node_step(job))
    for rank in ranks:
        assert rank.returncode == 0, rank.stderr
        assert "the entrypoint imported torch: rank" in rank.stderr
        assert "joined the process group, backend gloo" in rank.stderr
    results = _results(job, 2)
    for number, result in enumerate(results):
        assert result == {**result, "before": False, "initialized": True, "world": 2,
                          "rank": number, "store_collective": [0, 1]}
    # torch is seeded with the trial seed at its import, the same on every rank.
    assert results[0]["torch_random"] == results[1]["torch_random"]
