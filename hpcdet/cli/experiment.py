"""``det experiment``: create, list, describe, kill experiments and read their logs.

``create --follow`` prints ``Created experiment <id>`` on stdout, then the first trial's log
lines on stdout and progress lines (state changes, Slurm job and pending reason) on stderr,
until the experiment ends; it exits 0 only if the experiment ended COMPLETED. Ctrl-C stops
following, not the experiment.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import click

from hpcdet.cli._lazy import LazyGroup
from hpcdet.cli.main import CliError, CliState, Interrupted, pass_state
from hpcdet.cli.options import JSON_OPTION, log_options
from hpcdet.cli.output import (
    format_size,
    format_time,
    format_value,
    print_answer,
    print_json,
    render_fields,
    warn,
)

# The trial module's helpers (logs, trial tables) and the --config overrides
# (hpcdet.cli.overrides) are imported by the commands that use them: `det experiment list`
# needs neither (nor dataclasses, which cost ~1.5 ms of det's start).

SKIPPED_SHOWN = 5


# Commands kept in other modules, imported only when run (or listed by --help).
_ELSEWHERE = {
    "list-checkpoints": "hpcdet.cli.checkpoint:experiment_list_checkpoints",
    **{name: f"hpcdet.cli.experiment_edit:{attribute}" for name, attribute in (
        ("set", "set_group"), ("label", "label_group"), ("move", "move"),
        ("delete", "delete"), ("continue", "continue_experiment"), ("fork", "fork"),
        ("download-model-def", "download_model_def"))},
}


@click.group(cls=LazyGroup, lazy_subcommands=_ELSEWHERE,
             aliases={"ls": "list", "lt": "list-trials", "lc": "list-checkpoints",
                      "unpause": "activate"})
def experiment() -> None:
    """Create, inspect and stop experiments."""


def refuse_determined_only(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """Refuse Determined's ``-p/--publish`` (ports of the task container: none here) and
    ``--project_id`` (projects are named here): ``-p`` must not mean something else."""
    if value is not None:
        raise click.UsageError(
            "-p/--publish and --project_id are Determined's options, not det's: publishing "
            "ports has no meaning for Slurm jobs; put the experiment in a project with "
            "--workspace NAME --project NAME")


@experiment.command("create")
@click.argument("config_file", metavar="CONFIG")
@click.argument("context_dir", metavar="CONTEXT")
@click.option("--template", metavar="NAME",
              help="Start from config template NAME: the config's own values win, objects "
                   "merge, lists concatenate (see `det template`).")
@click.option("-w", "--workspace", metavar="NAME",
              help="Put the experiment in workspace NAME (its members see it; needs the "
                   "editor role there). Without: it is yours and the admins' alone.")
@click.option("--project", metavar="NAME",
              help="Put the experiment in project NAME of the --workspace (no -p: "
                   "Determined's -p is --publish).")
@click.option("-p", "--publish", "--project_id", "--project-id", expose_value=False,
              hidden=True, callback=refuse_determined_only, help="Refused with a message.")
@click.option("--paused", is_flag=True,
              help="Create the experiment PAUSED: nothing is submitted until "
                   "`det experiment activate ID` (or unpause).")
@click.option("-i", "--include", "includes", multiple=True, metavar="PATH",
              help="Add file or directory PATH to the context, at its top under its own "
                   "name (a directory's .detignore applies). Repeatable.")
@click.option("--config", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override one config key (dotted path, e.g. resources.slots_per_trial=4; "
                   "VALUE is YAML). Repeatable.")
@click.option("-f", "--follow", "--follow-first-trial", "follow", is_flag=True,
              help="Stream the first trial's logs until the experiment ends; exit 0 only "
                   "if it COMPLETED.")
@click.option("--dry-run", is_flag=True,
              help="Print the job script of each trial instead of submitting anything.")
@click.option("--local", is_flag=True,
              help="Train the first trial in this process, with no master and no Slurm, "
                   "to debug model code (metrics on stderr, checkpoints in "
                   "CONTEXT/checkpoints).")
@JSON_OPTION
@pass_state
def create(state: CliState, config_file: str, context_dir: str, template: str | None,
           workspace: str | None, project: str | None, paused: bool,
           includes: tuple[str, ...], overrides: tuple[str, ...], follow: bool,
           dry_run: bool, local: bool, as_json: bool) -> None:
    """Create an experiment from CONFIG and code in CONTEXT.

    CONFIG is the experiment configuration (YAML); CONTEXT is the directory holding the
    model code. It is packed and uploaded (at most 95 MiB; list what training does not need in
    CONTEXT/.detignore, .gitignore syntax). With --dry-run, only the rendered job scripts
    are printed on stdout, so `det experiment create --dry-run c.yaml . > job.sh` works.
    With --local, nothing is sent anywhere: the searcher's first trial trains in this
    process with CONTEXT as working directory; the exit code is 0 if it succeeded.
    With --paused the experiment is created PAUSED and starts when activated.
    """
    if local:
        _check_local_flags(template=template or workspace or project, follow=follow,
                           dry_run=dry_run, as_json=as_json, paused=paused,
                           includes=bool(includes))
        from hpcdet.cli.local import run_local_experiment

        run_local_experiment(config_file, context_dir, overrides)
        return
    _check_create_flags(follow=follow, dry_run=dry_run, as_json=as_json, paused=paused)
    if project is not None and workspace is None:
        raise click.UsageError("--project needs --workspace (projects live in a workspace)")
    body = create_body(config_file, context_dir, dry_run=dry_run, overrides=overrides,
                       includes=includes)
    extra = {"template": template, "workspace": workspace, "project": project,
             "activate": False if paused else None}
    body.update({key: value for key, value in extra.items() if value is not None})
    answer = state.client().post("/experiments", body)
    for warning in answer.get("warnings") or []:
        warn(str(warning))
    if as_json:
        print_json(answer)
    elif dry_run:
        if answer.get("allocation"):  # allocation mode: its job first, trials run inside
            click.echo("(allocation mode: the allocation job's script first, then the first "
                       "trial's, which runs as a step inside it)", err=True)
        print_scripts([answer["allocation"]] if answer.get("allocation") else [])
        print_scripts(answer.get("jobs") or [])
    else:
        _report_created(state, answer["experiment"]["id"], follow=follow)


def _check_create_flags(*, follow: bool, dry_run: bool, as_json: bool,
                        paused: bool = False) -> None:
    if follow and paused:
        raise click.UsageError("--follow and --paused cannot be used together (a paused "
                               "experiment runs nothing to follow)")
    if follow and dry_run:
        raise click.UsageError("--follow and --dry-run cannot be used together")
    if follow and as_json:
        raise click.UsageError("--follow and --json cannot be used together")


def _check_local_flags(*, template: str | None, follow: bool, dry_run: bool,
                      as_json: bool, paused: bool = False, includes: bool = False) -> None:
    """--local talks to no master: the options that need one are refused."""
    given = [flag for flag, used in (("--template/--workspace/--project",
                                      template is not None), ("--follow", follow),
                                     ("--dry-run", dry_run), ("--json", as_json),
                                     ("--paused", paused), ("--include", includes)) if used]
    if given:
        raise click.UsageError(f"--local cannot be used with {', '.join(given)}")


def create_body(config_file: str, context_dir: str, *, dry_run: bool,
                overrides: Sequence[str] = (), includes: Sequence[str] = ()) -> dict[str, Any]:
    """The ``POST /experiments`` body: the config's text and the packed context.

    Without overrides the text is sent exactly as written, so the master's error lines
    point into the user's file; with overrides it is the YAML dump of the changed document.
    """
    from hpcdet.cli.config_file import load_config_file
    from hpcdet.cli.context import build_context
    from hpcdet.cli.overrides import override_text, parse_override

    parsed = [parse_override(arg) for arg in overrides]
    config = load_config_file(config_file)
    text = override_text(config.data, parsed) if parsed else config.text
    archive = build_context(context_dir, includes=includes)
    click.echo(f"Preparing files to send to master... {format_size(archive.size)} and "
               f"{archive.files} files", err=True)
    _warn_skipped(archive.skipped)
    import base64

    context = base64.b64encode(archive.data).decode("ascii")
    return {"config": text, "context": context, "dry_run": dry_run}


def _warn_skipped(skipped: Sequence[str]) -> None:
    if not skipped:
        return
    shown = ", ".join(skipped[:SKIPPED_SHOWN])
    more = f" and {len(skipped) - SKIPPED_SHOWN} more" if len(skipped) > SKIPPED_SHOWN else ""
    warn(f"left out of the context: {shown}{more}")


def print_scripts(jobs: Sequence[Mapping[str, Any]]) -> None:
    """Print each job's rendered script, and nothing else, on stdout."""
    for job in jobs:
        script = str(job.get("script", ""))
        click.echo(script if script.endswith("\n") else script + "\n", nl=False)
    if len(jobs) > 1:
        click.echo(f"({len(jobs)} job scripts, one per trial, in trial order)", err=True)


def _report_created(state: CliState, experiment_id: int, *, follow: bool) -> None:
    click.echo(f"Created experiment {experiment_id}")
    # On stderr: stdout stays the one line scripts parse.
    click.echo(f"Watch it in a browser: {state.master.rstrip('/')}/experiments/{experiment_id}",
               err=True)
    if not follow:
        return
    try:
        final = follow_experiment(state, experiment_id)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted; experiment {experiment_id} keeps running (stop it "
                          f"with `det experiment kill {experiment_id}`)") from None
    click.echo(f"Experiment {experiment_id} ended {final}", err=True)
    if final != "COMPLETED":
        click.get_current_context().exit(1)


class Progress:
    """Prints a status line on stderr whenever the line for its subject changes."""

    def __init__(self) -> None:
        self.last: dict[str, str] = {}

    def show(self, subject: str, line: str) -> None:
        if self.last.get(subject) != line:
            self.last[subject] = line
            click.echo(line, err=True)


def follow_experiment(state: CliState, experiment_id: int) -> str:
    """Stream the first trial's logs, then wait for the experiment; return its final state."""
    from hpcdet.cli.trial import LogCursor, follow_logs

    progress = Progress()
    trial_id = wait_for_first_trial(state, experiment_id, progress)
    if trial_id is not None:
        def show_trial() -> None:
            progress.show("trial", trial_status(state.client().get(f"/trials/{trial_id}")))

        follow_logs(LogCursor(state.client(), trial_id), poll_interval=state.poll_interval,
                    on_idle=show_trial)
        show_trial()
    return wait_for_end(state, experiment_id, progress)


def wait_for_first_trial(state: CliState, experiment_id: int, progress: Progress) -> int | None:
    """The id of the experiment's first trial once it exists; None if the experiment
    ended without any."""
    from hpcdet.cli.trial import is_terminal
    from hpcdet.client import first_trial_id

    while True:
        trial_id = first_trial_id(state.client(), experiment_id)
        if trial_id is not None:
            return trial_id
        exp_state = state.client().get(f"/experiments/{experiment_id}")["experiment"]["state"]
        progress.show("experiment", f"experiment {experiment_id}: {exp_state}")
        if is_terminal(exp_state):
            return None
        time.sleep(state.poll_interval)


def wait_for_end(state: CliState, experiment_id: int, progress: Progress) -> str:
    """Poll the experiment until its state is final; return that state."""
    from hpcdet.cli.trial import is_terminal

    while True:
        exp_state = str(state.client().get(f"/experiments/{experiment_id}")
                        ["experiment"]["state"])
        if is_terminal(exp_state):
            return exp_state
        progress.show("experiment", f"experiment {experiment_id}: {exp_state}")
        time.sleep(state.poll_interval)


def trial_status(answer: Mapping[str, Any]) -> str:
    """``trial 1: QUEUED (Slurm job 42, reason: Resources)`` from ``GET /trials/<id>``."""
    t = answer["trial"]
    details = _job_details(t.get("state"), (t.get("jobs") or [None])[-1])
    if t.get("restarts"):
        details.append(f"restarts: {t['restarts']}")
    suffix = f" ({', '.join(details)})" if details else ""
    return f"trial {t.get('id')}: {t.get('state')}{suffix}"


def _job_details(trial_state: str | None, job: Mapping[str, Any] | None) -> list[str]:
    if not job:
        return []
    details = [f"Slurm job {job.get('job_id')}"]
    if job.get("reason") not in (None, "", "None"):
        details.append(f"reason: {job['reason']}")
    if trial_state == "RUNNING" and job.get("nodes"):
        details.append(f"on {format_value(job['nodes'])}")
    return details


@experiment.command("list")
@click.option("-a", "--all", "show_all", is_flag=True,
              help="Show every user's experiments you may see, archived ones included "
                   "(without: only yours, not archived).")
@click.option("-w", "--workspace", metavar="NAME",
              help="Only workspace NAME's experiments (every member's).")
@click.option("--limit", type=click.IntRange(min=1, max=1000), default=100, show_default=True,
              metavar="N", help="Show at most this many experiments.")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True, metavar="N",
              help="Skip this many experiments first.")
@click.option("--csv", "as_csv", is_flag=True, help="Print as CSV.")
@JSON_OPTION
@pass_state
def list_experiments(state: CliState, show_all: bool, workspace: str | None, limit: int,
                     offset: int, as_csv: bool, as_json: bool) -> None:
    """List your experiments (everyone's you may see with --all or --workspace).

    Columns as Determined's: ID, Owner, Name, Parent ID, State, Progress, Started, Ended,
    Resource Pool, and Archived with --all.
    """
    if as_csv and as_json:
        raise click.UsageError("--csv and --json cannot be used together")
    params: dict[str, Any] = {"limit": limit, "offset": offset}
    if workspace is not None:
        params["workspace"] = workspace
    elif not show_all and state.user:
        params["owner"] = state.user
    if show_all:
        params["archived"] = "true"
    answer = state.client().get("/experiments", params=params)
    if as_json:
        print_json(answer)
        return
    experiments = answer.get("experiments") or []
    click.echo(experiments_table(experiments, archived=show_all, as_csv=as_csv))
    _note_more(answer.get("total"), offset + len(experiments))


def experiments_table(experiments: Sequence[Mapping[str, Any]], *, archived: bool = False,
                      as_csv: bool = False) -> str:
    """The table (or CSV) ``det experiment list`` shows."""
    from hpcdet.cli.tables import table_or_csv

    headers = ["ID", "Owner", "Name", "Parent ID", "State", "Progress", "Started", "Ended",
               "Resource Pool"] + (["Archived"] if archived else [])
    show_time = (lambda v: v) if as_csv else format_time
    rows = [[e.get("id"), e.get("owner"), e.get("name"), e.get("parent_id"), e.get("state"),
             _percent(e.get("progress")), show_time(e.get("created_at")),
             show_time(e.get("ended_at")), _pool(e)]
            + ([e.get("archived")] if archived else []) for e in experiments]
    return table_or_csv(headers, rows, as_csv)


def _pool(experiment: Mapping[str, Any]) -> Any:
    """An unmanaged experiment runs in no pool of the master: it says so instead."""
    return "(unmanaged)" if experiment.get("unmanaged") else experiment.get("resource_pool")


def _note_more(total: Any, shown_up_to: int) -> None:
    if isinstance(total, int) and total > shown_up_to:
        click.echo(f"({total} experiments in all; see more with --limit and --offset)",
                   err=True)


@experiment.command("describe")
@click.argument("experiment_id", type=int)
@JSON_OPTION
@pass_state
def describe(state: CliState, experiment_id: int, as_json: bool) -> None:
    """Show an experiment's settings, trials and state history.

    Every trial is listed (read page by page); --json prints the experiment with them all
    under "trials".
    """
    from hpcdet.client import experiment_trials

    answer = state.client().get(f"/experiments/{experiment_id}")
    answer["trials"] = experiment_trials(state.client(), experiment_id)
    print_answer(answer, as_json, describe_text)


def describe_text(answer: Mapping[str, Any]) -> str:
    """The text ``det experiment describe`` prints; the best trial is marked with ``*``."""
    from hpcdet.cli.trial import history_table, trials_table

    e = answer["experiment"]
    header = f"Experiment {e.get('id')}: {e.get('name') or '(unnamed)'} ({e.get('state')})"
    searcher = (e.get("config") or {}).get("searcher") or {}
    fields = render_fields([
        ("description", e.get("description")), ("owner", e.get("owner")),
        ("labels", e.get("labels")), ("searcher", e.get("searcher")),
        ("searcher metric", _metric_goal(searcher)),
        ("progress", _percent(e.get("progress"))),
        ("resource pool", _pool(e)), ("trials", e.get("num_trials")),
        ("best trial", e.get("best_trial_id")),
        ("created", format_time(e.get("created_at"))),
        ("ended", format_time(e.get("ended_at"))),
    ])
    trials = answer.get("trials") or []
    table = trials_table(trials, metric=searcher.get("metric"), best_id=e.get("best_trial_id"))
    history = history_table(e.get("history") or [])
    return "\n\n".join([
        header + "\n" + fields,
        "Trials (* best):\n" + (table if trials else "  none"),
        "State history:\n" + (history or "  none"),
        *(_log_tail_section(t) for t in trials if t.get("state") == "ERROR"),
    ])


def _log_tail_section(t: Mapping[str, Any]) -> str:
    """The last lines an ERROR trial logged (``last_log_lines`` of the master's answer)."""
    from hpcdet.cli.trial import log_text

    lines = t.get("last_log_lines") or []
    body = "\n".join("  " + log_text(line) for line in lines) if lines else "  none"
    return f"Last log lines of trial {t.get('id')}:\n{body}"


def _metric_goal(searcher: Mapping[str, Any]) -> str | None:
    if not searcher.get("metric"):
        return None
    better = "larger" if searcher.get("smaller_is_better") is False else "smaller"
    return f"{searcher['metric']} ({better} is better)"


def _percent(value: Any) -> str | None:
    return f"{100 * float(value):.0f}%" if isinstance(value, int | float) else None


@experiment.command("config")
@click.argument("experiment_id", type=int)
@JSON_OPTION
@pass_state
def config(state: CliState, experiment_id: int, as_json: bool) -> None:
    """Print the experiment's effective config as YAML (storage secrets masked)."""
    exp_config = state.client().get(f"/experiments/{experiment_id}")["experiment"]["config"]
    if as_json:
        print_json(exp_config)
    else:
        import yaml  # only this command prints YAML

        click.echo(yaml.safe_dump(exp_config, sort_keys=False), nl=False)


@experiment.command("wait")
@click.argument("experiment_id", type=int)
@click.option("--polling-interval", type=click.FloatRange(min=0.1), default=5.0,
              show_default=True, metavar="SECONDS", help="Seconds between two looks.")
@pass_state
def wait(state: CliState, experiment_id: int, polling_interval: float) -> None:
    """Wait until the experiment ends; exit 0 only if it COMPLETED (as Determined's)."""
    state.poll_interval = polling_interval
    final = wait_for_end(state, experiment_id, Progress())
    click.echo(f"Experiment {experiment_id} terminated with state {final}")
    if final != "COMPLETED":
        raise click.exceptions.Exit(1)


@experiment.command("list-trials")
@click.argument("experiment_id", type=int)
@JSON_OPTION
@pass_state
def list_trials(state: CliState, experiment_id: int, as_json: bool) -> None:
    """List an experiment's trials (same as `det trial list`)."""
    from hpcdet.cli.trial import print_trials

    print_trials(state, experiment_id, as_json=as_json)


# `det experiment list-checkpoints` is `det checkpoint list` under Determined's other name.


@experiment.command("logs")
@click.argument("experiment_id", type=int)
@log_options
@pass_state
def logs(state: CliState, experiment_id: int, follow: bool, head: int | None,
         tail: int | None, rank: int | None, node: str | None, stdtype: str | None,
         timestamp_before: str | None, timestamp_after: str | None, as_json: bool) -> None:
    """Print the logs of an experiment's first trial.

    With --follow, waits for the trial to be created if need be. Each line is prefixed
    with [rank R NODE] where the master knows them.
    """
    from hpcdet.cli.trial import LogFilter, check_log_flags, show_logs

    check_log_flags(follow=follow, head=head, tail=tail)
    if follow:
        trial_id = wait_for_first_trial(state, experiment_id, Progress())
    else:
        from hpcdet.client import first_trial_id

        trial_id = first_trial_id(state.client(), experiment_id)
    if trial_id is None:
        raise CliError(f"experiment {experiment_id} has no trials")
    show_logs(state, trial_id, follow=follow, head=head, tail=tail,
              selection=LogFilter(rank, node, as_json, stdtype, timestamp_before,
                                  timestamp_after))


# pause, activate, cancel, kill, archive, unarchive (hpcdet/cli/lifecycle.py); set, label,
# move, delete, continue, fork, download-model-def (hpcdet/cli/experiment_edit.py: _ELSEWHERE)
from hpcdet.cli.lifecycle import add_lifecycle_commands  # noqa: E402

add_lifecycle_commands(experiment)
