"""Searcher benchmarks on the digits example (``examples/digits``).

Subcommands (``bench/searcher.py SUBCOMMAND --help``):

quality
    What is measured
        The issue's question: on the digits example, the best validation metric reached by
        adaptive ASHA vs random search *at the same total training budget*. In one process,
        without Slurm or a master, the real searchers (:func:`hpcdet.searcher.make_searcher`)
        drive the real training code (``examples/digits/train.py``: :func:`make_trial`,
        :func:`fit_epoch`, :func:`validate`), single rank, over the hyperparameter space of
        ``examples/digits/asha.yaml``. For each experiment seed:

        * ASHA (``--max-trials``, ``--max-time`` epochs, ``--divisor``, ``--mode``,
          ``--max-rungs``, ``--max-concurrent-trials``) runs to completion. Trials run as if
          in parallel on identical workers: a discrete-event loop trains whichever running
          trial finishes its next epoch first (1 epoch = 1 time unit; ties in creation
          order), reports ``validation_loss`` and ``epochs`` to the searcher after every
          epoch, and stops a trial at once when the searcher says so (on a cluster, a stop
          takes effect a few seconds later). The epochs it actually trained are counted.
        * Random search over the same space with the same seed then gets as many
          full-length (``--max-time``) trials as that budget buys, at least 1.

        Reported per seed and on average: epochs trained, trials, trials stopped early, the
        best ``validation_loss`` and the best ``accuracy`` over all validations of all
        trials, and wall time. Training is deterministic for a given seed (one torch thread
        by default), so a run repeats exactly. Both searchers draw from one RNG seeded with
        the experiment seed, so random search's first trials have the same hyperparameters
        as ASHA's first trials: the comparison is paired.

    How to reproduce
        .venv/bin/python bench/searcher.py quality            # 3 seeds, about 2 minutes
        .venv/bin/python bench/searcher.py quality --quick    # a few seconds
        .venv/bin/python bench/searcher.py quality --json     # one JSON object on stdout

throughput
    See ``bench/_searcher_throughput.py``: validations per second consumed by the master's
    ASHA search step from the database (target >= 10,000/s), side by side with a
    per-event-transaction design, on SQLite and PostgreSQL.

    How to reproduce
        .venv/bin/python bench/searcher.py throughput               # SQLite and PostgreSQL
        .venv/bin/python bench/searcher.py throughput --database sqlite --json

scale
    See ``bench/_searcher_scale.py``: the search step of a 10,000-trial ASHA search with
    ``max_concurrent_trials: 500``: the median step with 10, 100 and 1,000 validations and
    validations/s over the whole search, the searcher kept in memory (the master) vs
    restored and saved whole every step (the design before), on SQLite and PostgreSQL.

    How to reproduce
        .venv/bin/python bench/searcher.py scale                    # SQLite and PostgreSQL
        .venv/bin/python bench/searcher.py scale --trials 1000 --database sqlite --json

Each subcommand registers its parser in :data:`SUBCOMMANDS`; the parser's defaults carry
``run(args)`` (returns the JSON-serialisable result) and ``render(result)`` (the table).
"""

from __future__ import annotations

import argparse
import heapq
import importlib.util
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DIGITS = REPO / "examples" / "digits"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

import _searcher_scale as scale  # noqa: E402
import _searcher_throughput as throughput  # noqa: E402
import yaml  # noqa: E402

from hpcdet.searcher import Create, Searcher, Stop, TrialRequest, make_searcher  # noqa: E402

METHODS = ("asha", "random")


def load_digits_module() -> ModuleType:
    """``examples/digits/train.py`` as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("digits_train", DIGITS / "train.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def digits_hparams() -> dict[str, Any]:
    """The hyperparameter space of ``examples/digits/asha.yaml`` (random.yaml's too)."""
    config = yaml.safe_load((DIGITS / "asha.yaml").read_text())
    space: dict[str, Any] = config["hyperparameters"]
    return space


@dataclass(frozen=True)
class QualitySettings:
    """What one ``quality`` run compares."""

    seeds: tuple[int, ...] = (0, 1, 2)
    max_trials: int = 32
    max_time: int = 32
    divisor: float = 4.0
    mode: str = "standard"
    max_rungs: int = 5
    max_concurrent_trials: int = 16

    def asha_searcher(self) -> dict[str, Any]:
        """The ``adaptive_asha`` searcher section these settings describe."""
        return {"name": "adaptive_asha", "metric": "validation_loss", "time_metric": "epochs",
                "max_trials": self.max_trials, "max_time": self.max_time,
                "divisor": self.divisor, "mode": self.mode, "max_rungs": self.max_rungs,
                "max_concurrent_trials": self.max_concurrent_trials}

    def random_searcher(self, trials: int) -> dict[str, Any]:
        """A ``random`` searcher section with ``trials`` trials."""
        return {"name": "random", "metric": "validation_loss", "max_trials": trials,
                "max_concurrent_trials": self.max_concurrent_trials}


QUICK = QualitySettings(seeds=(0,), max_trials=6, max_time=4, divisor=2.0, max_rungs=3,
                        max_concurrent_trials=3)


@dataclass
class SearchOutcome:
    """What one search did and reached."""

    method: str
    seed: int
    epochs: int = 0
    trials: int = 0
    stopped_early: int = 0
    best_validation_loss: float = float("inf")
    best_accuracy: float = 0.0
    best_hparams: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def record(self, metrics: dict[str, float], hparams: dict[str, Any]) -> None:
        """Count one epoch and keep the best validation results."""
        self.epochs += 1
        self.best_accuracy = max(self.best_accuracy, metrics["accuracy"])
        if metrics["validation_loss"] < self.best_validation_loss:
            self.best_validation_loss = metrics["validation_loss"]
            self.best_hparams = hparams


@dataclass
class Running:
    """A trial in training: its searcher request, the digits trial, creation order, epochs
    done."""

    request: TrialRequest
    trial: Any
    order: int
    epochs: int = 0


class SearchRun:
    """Drives one searcher to completion over simulated identical parallel workers."""

    def __init__(self, searcher: Searcher, method: str, seed: int, max_time: int,
                 digits: ModuleType, data: tuple[Any, Any]) -> None:
        self.searcher, self.max_time, self.digits, self.data = searcher, max_time, digits, data
        self.outcome = SearchOutcome(method, seed)
        self.running: dict[str, Running] = {}
        self.queue: list[tuple[int, int, str]] = []  # (time its next epoch ends, order, id)
        self.now = 0

    def run(self) -> SearchOutcome:
        """Train until the searcher has no trial left; return what it reached."""
        started = time.perf_counter()
        for request in self.searcher.initial_trials():
            self._start(request)
        while self.queue:
            self.now, _, trial_id = heapq.heappop(self.queue)
            if trial_id in self.running:
                self._epoch(self.running[trial_id])
        self.outcome.seconds = time.perf_counter() - started
        return self.outcome

    def _start(self, request: TrialRequest) -> None:
        hparams = self.digits.HParams.parse(request.hparams)
        trial = self.digits.make_trial(hparams, request.seed, self.data[0])
        self.outcome.trials += 1
        self.running[request.request_id] = Running(request, trial, self.outcome.trials)
        self._schedule(self.running[request.request_id])

    def _schedule(self, run: Running) -> None:
        """Its next epoch ends one time unit from now; ties go in creation order."""
        heapq.heappush(self.queue, (self.now + 1, run.order, run.request.request_id))

    def _epoch(self, run: Running) -> None:
        """Train and validate one epoch, then carry out what the searcher says."""
        self.digits.fit_epoch(run.trial, run.epochs)
        run.epochs += 1
        metrics = self.digits.validate(run.trial.model, self.data[1], 0, 1)
        self.outcome.record(metrics, run.request.hparams)
        trial_id = run.request.request_id
        self._apply(self.searcher.on_validation(trial_id, metrics["validation_loss"],
                                                run.epochs))
        if trial_id not in self.running:
            return
        if run.epochs >= self.max_time:
            self._exit(trial_id)
        else:
            self._schedule(run)

    def _apply(self, actions: Sequence[Any]) -> None:
        for action in actions:
            if isinstance(action, Stop) and action.trial_id in self.running:
                if self.running[action.trial_id].epochs < self.max_time:
                    self.outcome.stopped_early += 1
                self._exit(action.trial_id)
            elif isinstance(action, Create):
                self._start(action.request)

    def _exit(self, trial_id: str) -> None:
        """The trial ends COMPLETED (stopped trials too, as on the master)."""
        del self.running[trial_id]
        self._apply(self.searcher.on_trial_exited(trial_id, "completed"))


def compare(settings: QualitySettings, seed: int, digits: ModuleType,
            data: tuple[Any, Any]) -> list[SearchOutcome]:
    """ASHA, then random search with the budget ASHA spent, for one experiment seed."""
    space = digits_hparams()
    asha = make_searcher(settings.asha_searcher(), space, seed)
    asha_outcome = SearchRun(asha, "asha", seed, settings.max_time, digits, data).run()
    trials = max(1, asha_outcome.epochs // settings.max_time)
    rand = make_searcher(settings.random_searcher(trials), space, seed)
    random_outcome = SearchRun(rand, "random", seed, settings.max_time, digits, data).run()
    return [asha_outcome, random_outcome]


def run_quality(settings: QualitySettings, threads: int = 1) -> dict[str, Any]:
    """Compare the methods over every seed; return settings, per-seed rows and means."""
    import torch

    torch.set_num_threads(threads)
    digits = load_digits_module()
    data = digits.load_data()
    rows = [o for seed in settings.seeds for o in compare(settings, seed, digits, data)]
    return {"settings": asdict(settings), "threads": threads, "machine": machine(),
            "runs": [asdict(o) for o in rows], "mean": mean_rows(rows)}


def mean_rows(rows: list[SearchOutcome]) -> list[dict[str, Any]]:
    """Per method, the mean of every number over the seeds."""
    keys = ("epochs", "trials", "stopped_early", "best_validation_loss", "best_accuracy",
            "seconds")
    return [{"method": method, **{k: statistics.fmean(getattr(o, k) for o in rows
                                                       if o.method == method) for k in keys}}
            for method in METHODS]


def machine() -> dict[str, Any]:
    """Where the figures were taken."""
    import torch

    return {"cpus": os.cpu_count(), "python": platform.python_version(),
            "torch": torch.__version__, "platform": platform.platform()}


def render_quality(result: dict[str, Any]) -> str:
    """Per-seed rows, then the means, as an aligned table."""
    headers = ["seed", "method", "trials", "stopped early", "epochs", "best validation_loss",
               "best accuracy", "seconds"]
    rows = [[r["seed"], *_figures(r)] for r in result["runs"]]
    rows += [["mean", *_figures(r)] for r in result["mean"]]
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows, strict=True)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip()
             for line in [headers, ["-" * w for w in widths], *rows]]
    return "\n".join(lines)


def _figures(row: dict[str, Any]) -> list[str]:
    return [row["method"], f"{row['trials']:g}", f"{row['stopped_early']:g}",
            f"{row['epochs']:g}", f"{row['best_validation_loss']:.4f}",
            f"{row['best_accuracy']:.4f}", f"{row['seconds']:.1f}"]


def quality_settings(args: argparse.Namespace) -> QualitySettings:
    """The settings named on the command line (``--quick`` is a preset of them)."""
    base = QUICK if args.quick else QualitySettings()
    chosen = {name: getattr(args, name) for name in ("max_trials", "max_time", "divisor",
                                                     "mode", "max_rungs",
                                                     "max_concurrent_trials")
              if getattr(args, name) is not None}
    seeds = tuple(range(args.seeds)) if args.seeds is not None else base.seeds
    return QualitySettings(**{**asdict(base), **chosen, "seeds": seeds})


def add_quality_parser(subparsers: Any) -> None:
    """Register the ``quality`` subcommand."""
    parser = subparsers.add_parser("quality", help="best validation metric of ASHA vs random "
                                   "search at the same training budget, on the digits example")
    parser.add_argument("--quick", action="store_true",
                        help="a tiny run (1 seed, 6 trials of at most 4 epochs)")
    parser.add_argument("--seeds", type=int, help="experiment seeds 0..N-1 (default 3)")
    parser.add_argument("--max-trials", type=int, help="ASHA max_trials (default 32)")
    parser.add_argument("--max-time", type=int, help="epochs of a full trial (default 32)")
    parser.add_argument("--divisor", type=float, help="ASHA divisor (default 4)")
    parser.add_argument("--mode", choices=("aggressive", "standard", "conservative"))
    parser.add_argument("--max-rungs", type=int, help="ASHA max_rungs (default 5)")
    parser.add_argument("--max-concurrent-trials", type=int,
                        help="trials training at once, both methods (default 16)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=lambda args: run_quality(quality_settings(args), args.threads),
                        render=render_quality)


# One entry per subcommand: the function that registers its parser.
SUBCOMMANDS: dict[str, Callable[[Any], None]] = {
    "quality": add_quality_parser,
    "throughput": throughput.add_parser,
    "scale": scale.add_parser,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for add_parser in SUBCOMMANDS.values():
        add_parser(subparsers)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    words = sys.argv[1:] if argv is None else list(argv)
    print(f"# reproduce: cd {shlex.quote(str(REPO))} && .venv/bin/python bench/searcher.py "
          f"{shlex.join(words)}", file=sys.stderr, flush=True)
    result = args.run(args)
    print(json.dumps(result, indent=2) if args.json else args.render(result))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
