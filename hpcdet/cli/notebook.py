"""``det notebook``: JupyterLab as a job, reached through the master's proxy.

``det notebook start`` sends the notebook config (Determined's: a file, ``--config
KEY=VALUE`` overrides; ``idle_timeout`` e.g. ``30m``) and optionally a context directory;
the master submits it as a notebook task and proxies it at ``<master>/proxy/<id>/``, for
its owner and admins only (docs/notebooks.md). Without ``-d`` it waits until the notebook
answers through the proxy and prints its URL. ``list``, ``describe``, ``logs`` and
``kill`` are the task commands narrowed to notebooks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.command import config_body, config_options
from hpcdet.cli.main import CliState, pass_state
from hpcdet.cli.task_kinds import (
    describe_command,
    kill_command,
    kind_table,
    list_command,
    logs_command,
    open_command,
    start_proxied,
)

KIND = "notebook"
START_TIMEOUT = 1800.0  # a notebook may wait in the queue


@click.group(cls=AliasedGroup, aliases={"ls": "list"})
def notebook() -> None:
    """JupyterLab in a job, opened through the master (as Determined's det notebook)."""


@notebook.command("start")
@config_options("notebook", "the notebook starts in its copy", "waiting until it answers")
@click.option("--test-only", is_flag=True, help="Show the script and the submit command; "
              "submit nothing.")
@click.option("--no-browser", is_flag=True, help="Do not open a browser (only ever opened "
              "where this machine has a display).")
@pass_state
def start(state: CliState, config_file: str | None, configs: Sequence[str],
          context_dir: str | None, detach: bool, no_browser: bool, test_only: bool) -> None:
    """Start JupyterLab as a job and print its URL once it answers."""
    body: dict[str, Any] = {**config_body(config_file, configs, context_dir),
                            "test_only": test_only}
    start_proxied(state, "/notebooks", body, detach=detach, noun="notebook",
                  launched=_launched, timeout=START_TIMEOUT, browser=not no_browser,
                  probe="api/status")


def _launched(task: Mapping[str, Any]) -> str:
    return (f"Launched notebook {task['id']} (job {task['job_id']}); waiting for it to "
            "answer (Ctrl-C stops waiting, the notebook goes on)")


def _not_open(task: Mapping[str, Any]) -> str | None:
    if task["state"] not in ("QUEUED", "RUNNING"):
        return f"notebook {task['id']} ended {task['state']}"
    return None


notebook.add_command(open_command(KIND, "notebook", "Print the notebook's URL (and open it "
                                  "where this machine has a browser).", "Only print the URL.",
                                  _not_open))


def _headline(task: Mapping[str, Any]) -> str:
    return f"Notebook {task.get('id')}: {task.get('name') or '-'}"


notebook.add_command(describe_command(KIND, "notebook", "Show a notebook: its config, job, "
                                      "state and history.", _headline))
notebook.add_command(list_command(KIND, "notebooks", kind_table, ""))
notebook.add_command(logs_command(KIND, "notebook", "JupyterLab's log"))
notebook.add_command(kill_command(KIND, "notebook", "Cancel a notebook's job (the master "
                                  "cancels it within seconds)."))
