"""``python -m hpcdet.tensorboard``: what a TensorBoard task's job runs (see :mod:`.serve`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from hpcdet.errors import HpcdetError
from hpcdet.tensorboard.events import RunWriter
from hpcdet.tensorboard.serve import StopFlag, fresh_logdir, parse_ids, run, task_id_from
from hpcdet.tensorboard.source import MasterMetrics
from hpcdet.tensorboard.sync import Syncer


def main(argv: list[str] | None = None) -> int:
    """Serve the experiments' and trials' metrics until the job is cancelled."""
    parser = argparse.ArgumentParser(prog="python -m hpcdet.tensorboard")
    parser.add_argument("--experiment-ids", nargs="*", default=[], metavar="ID")
    parser.add_argument("--trial-ids", nargs="*", default=[], metavar="ID")
    parser.add_argument("--interval", type=float, default=5.0, metavar="SECONDS",
                        help="How often to fetch new metrics.")
    args = parser.parse_args(argv)
    try:
        task_dir = Path(os.environ.get("DET_TASK_DIR") or os.getcwd())
        prefix = f"/proxy/{task_id_from(dict(os.environ), task_dir)}"
        experiment_ids, trial_ids = parse_ids(args.experiment_ids), parse_ids(args.trial_ids)
        if not experiment_ids and not trial_ids:
            raise HpcdetError("name at least one experiment or trial")
        logdir = fresh_logdir(task_dir / "tensorboard")
        syncer = Syncer(MasterMetrics.from_env(), logdir, experiment_ids=experiment_ids,
                        trial_ids=trial_ids, open_writer=RunWriter)
        return run(syncer, logdir, task_dir, prefix, interval=args.interval,
                   stop=StopFlag().install())
    except HpcdetError as exc:
        print(f"hpcdet.tensorboard: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
