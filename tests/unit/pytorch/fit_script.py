"""A script-style trial (``init()`` + ``Trainer.fit``) for torchrun: ``fit_script.py OUT``.

Each rank writes ``OUT/rank-<rank>.json`` with its rank, world size and final weights.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

from pytorch_trials import HparamsTrial

from hpcdet import pytorch
from hpcdet.harness.main import exit_process


def main(out: pathlib.Path) -> None:
    hparams = {"global_batch_size": 8, "lr": 0.01, "train_size": 32}
    os.chdir(out)
    with pytorch.init(hparams=hparams) as context:
        trial = HparamsTrial(context, hparams)
        outcome = pytorch.Trainer(trial, context).fit(
            max_length=pytorch.Epoch(2), validation_period=pytorch.Epoch(1)
        )
        result = {
            "rank": context.distributed.rank,
            "size": context.distributed.size,
            "outcome": outcome.value,
            "seen": trial.seen,
            "validations": [m["batches"] for m in trial.recorder.validation],
            "weights": [p.detach().flatten().tolist() for p in trial.model.parameters()],
        }
    (out / f"rank-{result['rank']}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
    exit_process(0)  # as the harness does: no interpreter teardown racing gloo's threads
