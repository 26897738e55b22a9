"""``det-master vacuum-metrics``: apply ``metrics_retention`` with progress and a summary."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import click

from hpcdet.cli.output import render_table
from hpcdet.master.db import make_engine, make_session_factory, migrate
from hpcdet.master.reports.metrics_retention import ExperimentVacuum, vacuum_metrics
from hpcdet.master.settings.core import MasterSettings


def run_vacuum(settings: MasterSettings, *, dry_run: bool, experiment_ids: Sequence[int],
               batch_size: int, as_json: bool) -> None:
    """Run the vacuum over the master's database; progress on stderr, the summary on stdout."""
    migrate(settings.db_url)
    engine = make_engine(settings.db_url)
    verb = "would delete" if dry_run else "deleted"

    def progress(result: ExperimentVacuum) -> None:
        if result.rows:
            click.echo(f"experiment {result.experiment_id}: {verb} {result.rows:,} training "
                       f"rows of {result.trials} trials ({result.seconds:.1f} s)", err=True)

    try:
        results = vacuum_metrics(make_session_factory(engine), settings.metrics_retention,
                                 dt.datetime.now(dt.timezone.utc), dry_run=dry_run,
                                 batch_size=batch_size, experiment_ids=experiment_ids,
                                 progress=progress)
    finally:
        engine.dispose()
    missing = sorted(set(experiment_ids) - {r.experiment_id for r in results})
    if as_json:
        click.echo(json.dumps(summary(results, dry_run, missing), indent=2, sort_keys=True))
    else:
        click.echo(render_table(
            ["experiment", "policy", "trials", "rows to delete" if dry_run else "rows deleted"],
            [(r.experiment_id, r.policy.describe(), r.trials, f"{r.rows:,}")
             for r in results if r.policy.thins]))
        done = "would be deleted" if dry_run else "deleted"
        click.echo(f"\n{sum(r.rows for r in results):,} training rows {done} "
                   f"(master policy: {settings.metrics_retention.describe()})")
    if missing:
        raise click.ClickException(f"no such experiment: {', '.join(map(str, missing))}")


def summary(results: Sequence[ExperimentVacuum], dry_run: bool,
            missing: Sequence[int]) -> dict[str, Any]:
    """The ``--json`` answer."""
    return {"dry_run": dry_run, "rows": sum(r.rows for r in results),
            "missing_experiments": list(missing),
            "experiments": [{"experiment_id": r.experiment_id, "policy": r.policy.describe(),
                             "trials": r.trials, "rows": r.rows, "seconds": r.seconds}
                            for r in results]}
