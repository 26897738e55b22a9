"""One rank of a multi-process trial: ``python rank_worker.py <args.json> <rank>``.

Joins a gloo process group over TCP on 127.0.0.1, trains ``RegressionTrial`` with the
trainer and writes what the tests check to ``<out>/rank-<rank>.json``.
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import torch.distributed as dist
from pytorch_trials import RegressionTrial

from hpcdet.harness.main import exit_process
from hpcdet.pytorch import Trainer, local_core_context


def main(args: dict[str, Any], rank: int) -> None:
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{args['port']}", rank=rank, world_size=args["world"]
    )
    try:
        result = train(args)
    finally:
        dist.destroy_process_group()
    out = pathlib.Path(args["out"]) / f"rank-{rank}.json"
    out.write_text(json.dumps(result))


def train(args: dict[str, Any]) -> dict[str, Any]:
    core = local_core_context(
        args["config"],
        hparams=args["hparams"],
        checkpoint_dir=args["checkpoint_dir"],
        latest_checkpoint=args.get("latest"),
    )
    checks: list[int] = []
    with core:
        trainer = Trainer(RegressionTrial, core)
        ask = core.preempt.should_preempt

        def should_preempt() -> bool:
            checks.append(trainer.progress.batches)
            return ask()

        core.preempt.should_preempt = should_preempt  # type: ignore[method-assign]
        outcome = trainer.run()
    trial = trainer.trial
    assert isinstance(trial, RegressionTrial)
    return {
        "outcome": outcome.value,
        "batches": trainer.progress.batches,
        "weights": [p.detach().flatten().tolist() for p in trainer.context.models[0].parameters()],
        "training": trial.recorder.training,
        "validation": trial.recorder.validation,
        "seen": trial.seen,
        "preempt_checks": checks,
    }


if __name__ == "__main__":
    main(json.loads(pathlib.Path(sys.argv[1]).read_text()), int(sys.argv[2]))
    # Exit as the harness does (hpcdet.harness.main.exit_process): a normal interpreter
    # teardown races with gloo's C++ threads and sometimes aborts a finished rank.
    exit_process(0)
