"""``det trial``: list, describe and read the logs of trials.

The log helpers here (:class:`LogCursor`, :class:`LogFilter`, :func:`print_log_pages`,
:func:`follow_logs`) are shared with ``det experiment logs`` and ``det experiment create
--follow``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.failure_text import failure_line
from hpcdet.cli.main import CliState, pass_state
from hpcdet.cli.options import JSON_OPTION, log_options
from hpcdet.cli.output import (
    format_time,
    format_value,
    print_answer,
    print_json,
    render_fields,
    render_table,
)
from hpcdet.states import TERMINAL_STATES

if TYPE_CHECKING:
    from hpcdet.client import MasterClient

TERMINAL_NAMES = frozenset(state.value for state in TERMINAL_STATES)
@dataclasses.dataclass(frozen=True)
class LogFilter:
    """Which lines a logs command asks for, and how it prints them."""

    rank: int | None = None
    node: str | None = None
    as_json: bool = False
    stream: str | None = None
    before: str | None = None
    after: str | None = None

    def params(self) -> dict[str, Any]:
        """The query parameters of ``GET /trials/<id>/logs`` that narrow the lines."""
        pairs = (("rank", self.rank), ("node", self.node), ("stream", self.stream),
                 ("timestamp_before", self.before), ("timestamp_after", self.after))
        return {k: v for k, v in pairs if v is not None}


def is_terminal(state: str | None) -> bool:
    """Whether a state name from the master is final (COMPLETED, CANCELED or ERROR)."""
    return state in TERMINAL_NAMES


@click.group(cls=AliasedGroup, aliases={"ls": "list"})
def trial() -> None:
    """Inspect trials: state, metrics, checkpoints, logs."""


@trial.command("list")
@click.argument("experiment_id", type=int)
@JSON_OPTION
@pass_state
def list_trials(state: CliState, experiment_id: int, as_json: bool) -> None:
    """List an experiment's trials."""
    print_trials(state, experiment_id, as_json=as_json)


def print_trials(state: CliState, experiment_id: int, *, as_json: bool) -> None:
    """What ``det trial list`` and ``det experiment list-trials`` print: every trial, read
    page by page (``--json``: ``{"trials": [...]}``)."""
    from hpcdet.client import experiment_trials

    trials = experiment_trials(state.client(), experiment_id)
    print_answer({"trials": trials}, as_json, lambda a: trials_table(a["trials"]))


def trials_table(trials: Sequence[Mapping[str, Any]], *, metric: str | None = None,
                 best_id: int | None = None) -> str:
    """The table ``det trial list`` and ``det experiment describe`` show.

    ``metric`` names the searcher metric shown as "Best <metric>"; the trial ``best_id``
    (the experiment's best) is marked with ``*``.
    """
    metric = metric or _first_metric(trials)
    headers = ["ID", "State", "Hyperparameters", f"Best {metric or 'validation'}", "Steps",
               "Restarts", "Note", "Slurm jobs", "Created", "Ended"]
    rows = [[f"{t.get('id')}{' *' if t.get('id') == best_id else ''}", t.get("state"),
             format_hparams(t.get("hparams") or {}), _best_value(t, metric),
             t.get("steps_completed"), t.get("restarts"), trial_note(t), t.get("job_ids"),
             format_time(t.get("created_at")), format_time(t.get("ended_at"))]
            for t in trials]
    return render_table(headers, rows)


def format_hparams(hparams: Mapping[str, Any], prefix: str = "") -> str:
    """``a=1 b.c=x``: nested groups flattened with dots, keys sorted."""
    parts = []
    for key in sorted(hparams):
        value = hparams[key]
        if isinstance(value, Mapping) and value:
            parts.append(format_hparams(value, f"{prefix}{key}."))
        elif isinstance(value, list):
            parts.append(f"{prefix}{key}=[{format_value(value)}]")
        else:
            parts.append(f"{prefix}{key}={format_value(value)}")
    return " ".join(parts)


def trial_note(t: Mapping[str, Any]) -> str:
    """Why a trial waits, stopped or exited early, in a few words (empty otherwise)."""
    if t.get("state") == "QUEUED" and t.get("pending_reason"):
        return str(t.get("pending_words") or t["pending_reason"])
    if t.get("early_exit") == "invalid_hp":
        return "invalid hyperparameters"
    if t.get("early_exit"):
        return f"exited early ({t['early_exit']})"
    if t.get("stop_reason") == "early_stopped":
        return "early-stopped by searcher"
    return ""


def _best_metrics(t: Mapping[str, Any]) -> Mapping[str, Any]:
    best = t.get("best_validation")
    metrics = best.get("metrics") if isinstance(best, Mapping) else None
    return metrics if isinstance(metrics, Mapping) else {}


def _first_metric(trials: Sequence[Mapping[str, Any]]) -> str | None:
    for t in trials:
        if _best_metrics(t):
            return str(sorted(_best_metrics(t))[0])
    return None


def _best_value(t: Mapping[str, Any], metric: str | None) -> Any:
    return _best_metrics(t).get(metric) if metric else None


@trial.command("describe")
@click.argument("trial_id", type=int)
@click.option("--profile", is_flag=True,
              help="Also show the profiler's timings and system metrics (profiling.enabled).")
@JSON_OPTION
@pass_state
def describe(state: CliState, trial_id: int, profile: bool, as_json: bool) -> None:
    """Show a trial's state, metrics, checkpoints and Slurm jobs.

    Also shows its hyperparameters, progress, latest validation metrics and state history.
    With --profile, also the time each training stage took (mean, max, count, over all
    ranks) and the system metrics of each node (latest and mean).

    With --json, prints the master's answer to GET /trials/TRIAL_ID unchanged; with
    --profile --json, its answer to GET /trials/TRIAL_ID/metrics?group=profiling (every
    profiling report).
    """
    client = state.client()
    if profile and as_json:
        print_json(client.get(f"/trials/{trial_id}/metrics", params={"group": "profiling"}))
        return
    answer = client.get(f"/trials/{trial_id}")
    if as_json:
        print_json(answer)
        return
    metrics = client.get(f"/trials/{trial_id}/metrics",
                         params={"group": "validation", "latest": "1"})
    text = describe_text(answer, metrics.get("metrics") or [])
    if profile:
        from hpcdet.cli.trial_profile import profile_text

        series = client.get(f"/trials/{trial_id}/metrics", params={"group": "profiling"})
        text += "\n\n" + profile_text(series.get("metrics") or [])
    click.echo(text)


@trial.command("kill")
@click.argument("trial_id", type=int)
@pass_state
def kill(state: CliState, trial_id: int) -> None:
    """Stop one trial at once, cancelling its Slurm job; the experiment goes on (its
    searcher counts the trial as errored)."""
    answer = state.client().post(f"/trials/{trial_id}/kill")
    click.echo(f"Killed trial {trial_id} ({answer['trial']['state']})")


def describe_text(answer: Mapping[str, Any], validations: Sequence[Mapping[str, Any]]) -> str:
    """The text ``det trial describe`` prints, section after section."""
    t = answer["trial"]
    sections = [
        f"Trial {t.get('id')} of experiment {t.get('experiment_id')}: {t.get('state')}\n"
        + failure_line(t) + _summary_fields(t),
        _validation_section(validations),
        _section("Checkpoints", _checkpoints_table(answer.get("checkpoints") or [])),
        _section("Slurm jobs", _jobs_table(t.get("jobs") or [])),
        _section("State history", history_table(t.get("history") or [])),
    ]
    return "\n\n".join(sections)


def _summary_fields(t: Mapping[str, Any]) -> str:
    return render_fields([
        ("hyperparameters", t.get("hparams")), ("seed", t.get("seed")),
        ("steps completed", t.get("steps_completed")), ("restarts", t.get("restarts")),
        ("interruptions", t.get("interruptions")),
        *_only_set([("pending", t.get("pending_words") or t.get("pending_reason")),
                    ("log policies", _policy_note(t))]),
        ("best validation", t.get("best_validation")),
        ("latest checkpoint", t.get("latest_checkpoint")),
        ("Slurm jobs", t.get("job_ids")), ("nodes", t.get("nodes")),
        ("created", format_time(t.get("created_at"))),
        ("ended", format_time(t.get("ended_at"))),
    ])


def _only_set(pairs: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The fields worth a line only when they say something."""
    return [(key, value) for key, value in pairs if value]


def _policy_note(t: Mapping[str, Any]) -> str | None:
    """What the trial's log policies decided (``cancel_retries``, ``exclude_node``)."""
    notes = ["no more restarts"] if t.get("cancel_retries") else []
    if t.get("excluded_nodes"):
        notes.append("excluded nodes " + ", ".join(map(str, t["excluded_nodes"])))
    return "; ".join(notes) or None


def _section(title: str, table: str | None) -> str:
    return f"{title}:\n" + (table if table else "  none")


def _validation_section(validations: Sequence[Mapping[str, Any]]) -> str:
    if not validations:
        return "Latest validation metrics:\n  none"
    latest = max(validations, key=lambda v: v.get("steps_completed") or 0)
    title = (f"Latest validation metrics (step {latest.get('steps_completed')}, "
             f"{format_time(latest.get('reported_at'))}):")
    return title + "\n" + render_fields(sorted((latest.get("metrics") or {}).items()))


def _checkpoints_table(checkpoints: Sequence[Mapping[str, Any]]) -> str | None:
    if not checkpoints:
        return None
    rows = [[c.get("uuid"), c.get("steps_completed"), c.get("state"),
             format_time(c.get("reported_at")), c.get("validation_metrics")]
            for c in checkpoints]
    return render_table(["UUID", "Steps", "State", "Reported", "Validation metrics"], rows)


def _jobs_table(jobs: Sequence[Mapping[str, Any]]) -> str | None:
    if not jobs:
        return None
    rows = [[j.get("job_id"), j.get("run_id"), j.get("requeues"), j.get("native_state"),
             j.get("reason"), j.get("exit_code"), j.get("nodes"),
             format_time(j.get("submitted_at"))]
            for j in jobs]
    return render_table(["Job ID", "Run", "Requeues", "Slurm state", "Reason", "Exit code",
                         "Nodes", "Submitted"], rows)


def history_table(history: Sequence[Mapping[str, Any]]) -> str | None:
    """State transitions as a table (shared with ``det experiment describe``)."""
    if not history:
        return None
    rows = [[format_time(h.get("at")), h.get("from"), h.get("to"), h.get("cause"),
             h.get("actor")] for h in history]
    return render_table(["At", "From", "To", "Cause", "By"], rows)


@trial.command("logs")
@click.argument("trial_id", type=int)
@log_options
@pass_state
def logs(state: CliState, trial_id: int, follow: bool, head: int | None,
         tail: int | None, rank: int | None, node: str | None, stdtype: str | None,
         timestamp_before: str | None, timestamp_after: str | None, as_json: bool) -> None:
    """Print a trial's logs (all ranks, stdout and stderr).

    Each line is prefixed with [rank R NODE] where the master knows them.
    """
    show_logs(state, trial_id, follow=follow, head=head, tail=tail,
              selection=LogFilter(rank, node, as_json, stdtype, timestamp_before,
                                  timestamp_after))


def show_logs(state: CliState, trial_id: int, *, follow: bool, head: int | None,
              tail: int | None, selection: LogFilter = LogFilter()) -> None:
    """What ``det trial logs`` and ``det experiment logs`` do once the trial is known."""
    check_log_flags(follow=follow, head=head, tail=tail)
    cursor = LogCursor(state.client(), trial_id, selection=selection)
    if tail is not None:
        echo_logs(cursor.fetch(tail=tail), as_json=selection.as_json)
    else:
        print_log_pages(cursor, limit=head)
    if follow:
        follow_logs(cursor, poll_interval=state.poll_interval)


def check_log_flags(*, follow: bool, head: int | None, tail: int | None) -> None:
    """Refuse flag combinations that mean nothing."""
    if head is not None and tail is not None:
        raise click.UsageError("--head and --tail cannot be used together")
    if head is not None and follow:
        raise click.UsageError("--head and --follow cannot be used together")


@dataclasses.dataclass
class LogCursor:
    """Reads a trial's logs page by page, remembering the last line id seen."""

    client: MasterClient
    trial_id: int
    after: int = 0
    trial_state: str | None = None
    selection: LogFilter = LogFilter()

    def fetch(self, *, limit: int | None = None, tail: int | None = None) -> list[Any]:
        """The next lines after :attr:`after` (or the last ``tail`` lines)."""
        params = {"after": self.after, "limit": limit, "tail": tail, **self.selection.params()}
        answer = self.client.get(f"/trials/{self.trial_id}/logs",
                                 params={k: v for k, v in params.items() if v is not None})
        lines: list[Any] = answer.get("logs") or []
        self.after = max([self.after, *(int(line["id"]) for line in lines)])
        self.trial_state = answer.get("trial_state") or self.trial_state
        return lines


JSON_LOG_KEYS = ("id", "rank", "node", "stream", "line", "job_id", "at")


def echo_logs(lines: Sequence[Mapping[str, Any]], *, as_json: bool = False) -> None:
    """Print log lines, each prefixed with ``[rank R NODE]`` as far as they are known;
    with ``as_json``, one JSON object per line."""
    for line in lines:
        if as_json:
            click.echo(json.dumps({key: line.get(key) for key in JSON_LOG_KEYS}))
        else:
            click.echo(log_text(line))


def log_text(line: Mapping[str, Any]) -> str:
    """``[rank 3 node2] text``, ``[node1] text`` (the batch script) or just the text."""
    text = str(line.get("line", "")).rstrip("\n")
    rank, node = line.get("rank"), line.get("node")
    where = " ".join(([f"rank {rank}"] if rank is not None else [])
                     + ([str(node)] if node else []))
    return f"[{where}] {text}" if where else text


def print_log_pages(cursor: LogCursor, *, limit: int | None = None) -> None:
    """Print every line after the cursor (at most ``limit``), one page at a time."""
    printed = 0
    while limit is None or printed < limit:
        lines = cursor.fetch(limit=None if limit is None else limit - printed)
        if not lines:
            return
        echo_logs(lines, as_json=cursor.selection.as_json)
        printed += len(lines)


def follow_logs(cursor: LogCursor, *, poll_interval: float,
                on_idle: Callable[[], None] | None = None) -> str | None:
    """Print new lines as they arrive until the trial is final and no new lines come.

    ``on_idle`` runs whenever a poll brought nothing new (to report progress). Returns the
    trial's final state.
    """
    while True:
        lines = cursor.fetch()
        echo_logs(lines, as_json=cursor.selection.as_json)
        if lines:
            continue
        if is_terminal(cursor.trial_state):
            return cursor.trial_state
        if on_idle is not None:
            on_idle()
        time.sleep(poll_interval)
