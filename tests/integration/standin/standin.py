"""A stand-in for a training script: it trains nothing, on the standard library alone.

The integration tests whose subject is scheduling, state, faults, queues, arrays, PBS,
users, containers or interactive tasks, not training, run this Core API script instead of
examples/digits. It keeps the digits trial's outward shape: the same metric names,
``epochs`` in every validation (adaptive ASHA's rungs), a checkpoint per epoch and on
preemption, resumption from the latest checkpoint, a stop when asked. But a rank costs
~30 MB and a fraction of a second of CPU, where importing torch (and scikit-learn) costs
~300 MB and seconds per rank.

What is "trained" is a number: each batch moves it by a step drawn from the trial seed,
the hyperparameters and the batch index, starting from the value the latest checkpoint
saved. So the metrics are deterministic, and a resumption from the wrong checkpoint (or
none) gives different values from an uninterrupted run: the fault tests still see it.

Knobs (the hyperparameters, or the environment):

* ``STANDIN_BATCH_SLEEP`` (env; default 0): seconds of sleep per batch, so that a fault
  can strike mid-training;
* ``STANDIN_BATCHES_PER_EPOCH`` (env; default 23, the digits trial's at batch size 64);
* ``STANDIN_FAIL_AT_BATCH`` (env): exit 3 when that batch starts (the first run only,
  when no checkpoint exists yet);
* ``STANDIN_GATE`` (env): a path; after the first epoch (its validation and checkpoint),
  wait (up to 10 minutes) until it exists before training on, or stop there when asked
  to (preemption, pause, a signal): a test holds the trial mid-training for as long as
  it needs, however slow the machine;
* ``STANDIN_FAIL_AS`` (env): ``cuda_oom`` prints the traceback
  PyTorch prints for a CUDA out-of-memory error and exits 1 (a stand-in: no GPU here);
  ``hang`` prints a line, then sleeps ignoring every request to stop (the time-limit
  warning, a preemption, a kill) and never checkpoints, so Slurm's time limit (or an
  ``scancel``) is what ends it;
* each run prints ``standin-first-batch=N``, the batch it starts from (0, or the
  checkpoint's); with ``STANDIN_PRINT_BATCHES=1`` (env) also ``epoch E batch B`` per batch
  (a log to follow);
* the searcher's ``max_length`` (``epochs`` or ``batches``) or ``max_time`` (with
  ``time_metric: epochs``) says how long to train; ``scheduling_unit`` (default 100) how
  many batches between training reports and preemption checks; ``min_validation_period``
  and ``min_checkpoint_period`` in ``epochs`` (default 1).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from typing import Any

import hpcdet.core

STATE_FILE = "state.json"


def train_length(config: dict[str, Any], batches_per_epoch: int) -> int:
    """Batches to train, from the searcher section."""
    searcher = config.get("searcher") or {}
    if searcher.get("max_time") is not None:
        return int(searcher["max_time"]) * batches_per_epoch  # time_metric: epochs
    length = searcher.get("max_length") or {"epochs": 1}
    if isinstance(length, dict) and length.get("batches") is not None:
        return int(length["batches"])
    epochs = length.get("epochs", 1) if isinstance(length, dict) else length
    return int(epochs) * batches_per_epoch


def period_epochs(config: dict[str, Any], key: str) -> int:
    period = config.get(key) or {}
    return max(1, int(period.get("epochs", 1))) if isinstance(period, dict) else 1


def step(value: float, seed: int, hparams: dict[str, Any], batch: int) -> float:
    """The next value: a decay towards 0 plus a seeded wobble, like a loss."""
    lr = float(hparams.get("lr", 0.01))
    wobble = random.Random(f"{seed}/{batch}/{sorted(hparams.items())}").uniform(-0.01, 0.01)
    return value * (1.0 - min(lr, 0.5)) + abs(wobble)


def restore(core: hpcdet.core.Context) -> tuple[int, float]:
    """(batches done, value) from the latest checkpoint, or from the start."""
    uuid = core.info.latest_checkpoint
    if uuid is None:
        return 0, 2.3  # ln(10), a 10-class loss before training
    with core.checkpoint.restore_path(uuid) as path:
        state = json.loads((path / STATE_FILE).read_text())
    return int(state["batches"]), float(state["value"])


def save(core: hpcdet.core.Context, batches: int, value: float, epoch: int) -> None:
    if not core.distributed.is_chief:
        return
    with core.checkpoint.store_path({"steps_completed": batches, "epoch": epoch}) as (path, _):
        (path / STATE_FILE).write_text(json.dumps({"batches": batches, "value": value}))


def wait_for_gate(path: str, core: hpcdet.core.Context) -> bool:
    """Wait until ``path`` exists (True) or the trial is asked to stop (False).

    Both questions are collectives, asked in the same order on every rank: the chief's view
    of the gate is broadcast, so no rank leaves the loop alone."""
    deadline = time.monotonic() + 600
    while True:
        if core.distributed.broadcast(os.path.exists(path) or time.monotonic() > deadline):
            return True
        if core.preempt.should_preempt():
            return False
        time.sleep(0.2)


# PyTorch 2's message for a failed CUDA allocation, as it prints it (the last line).
CUDA_OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
            "GPU 0 has a total capacity of 79.14 GiB of which 1.06 GiB is free. Of the "
            "allocated memory 75.98 GiB is allocated by PyTorch, and 1.12 GiB is reserved by "
            "PyTorch but unallocated.")


def fail_as(how: str) -> None:
    """Fail the ``STANDIN_FAIL_AS`` way: ``cuda_oom`` (exit 1) or ``hang`` (never returns)."""
    if how == "cuda_oom":
        print("Traceback (most recent call last):\n"
              '  File "standin.py", line 1, in <module>\n'
              "    loss.backward()\n" + CUDA_OOM, file=sys.stderr, flush=True)
        raise SystemExit(1)
    if how == "hang":
        print("standin: hanging until the scheduler ends the job", flush=True)
        while True:
            time.sleep(1)
    raise SystemExit(f"standin: STANDIN_FAIL_AS={how!r} is neither cuda_oom nor hang")


def stop(core: hpcdet.core.Context, batches: int, value: float, saved_at: int,
         per_epoch: int) -> None:
    """Asked to stop: checkpoint where it is, unless that checkpoint exists."""
    if saved_at != batches:
        save(core, batches, value, batches // per_epoch)
    print(f"standin: asked to stop after batch {batches}; the checkpoint is saved")


def main() -> None:
    per_epoch = int(os.environ.get("STANDIN_BATCHES_PER_EPOCH", "23"))
    pause = float(os.environ.get("STANDIN_BATCH_SLEEP", "0"))
    fail_at = int(os.environ.get("STANDIN_FAIL_AT_BATCH", "0"))
    print_batches = os.environ.get("STANDIN_PRINT_BATCHES") == "1"
    gate = os.environ.get("STANDIN_GATE")
    with hpcdet.core.init() as core:
        config = core.info.experiment_config or {}
        hparams, seed = dict(core.info.hparams or {}), core.info.trial_seed
        total = train_length(config, per_epoch)
        unit = max(1, int(config.get("scheduling_unit") or 100))
        validate_every = period_epochs(config, "min_validation_period") * per_epoch
        checkpoint_every = period_epochs(config, "min_checkpoint_period") * per_epoch
        if os.environ.get("STANDIN_FAIL_AS"):
            fail_as(os.environ["STANDIN_FAIL_AS"])
        batches, value = restore(core)
        saved_at = batches
        # Where this run starts: 0, or the batch of the checkpoint it resumed from.
        print(f"standin-first-batch={batches}", flush=True)
        while batches < total:
            if fail_at and batches + 1 == fail_at and core.info.latest_checkpoint is None:
                raise SystemExit(3)
            if gate and batches >= per_epoch:
                if not wait_for_gate(gate, core):
                    stop(core, batches, value, saved_at, per_epoch)
                    return
                gate = None  # open: train on
            if print_batches:
                print(f"epoch {batches // per_epoch} batch {batches}", flush=True)
            time.sleep(pause)
            value = step(value, seed, hparams, batches)
            batches += 1
            epoch = batches / per_epoch
            if batches % unit == 0 or batches == total:
                core.train.report_training_metrics(batches, {"loss": value, "epoch": epoch})
            if batches % validate_every == 0 or batches == total:
                core.train.report_validation_metrics(batches, {
                    "validation_loss": value * 1.1, "accuracy": 1.0 - value / 2.3,
                    "epochs": batches // per_epoch})
            if batches % checkpoint_every == 0 or batches == total:
                save(core, batches, value, batches // per_epoch)
                saved_at = batches
            if (batches % unit == 0 or batches % per_epoch == 0) and core.preempt.should_preempt():
                stop(core, batches, value, saved_at, per_epoch)
                return
        if core.distributed.is_chief:
            print(f"standin: done, {batches} batches, validation_loss {value * 1.1:.4f}")


if __name__ == "__main__":
    main()
