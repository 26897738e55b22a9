"""Requests and bytes per page of the web UI: a first visit and a warm reload.

What is measured
    A fresh, migrated SQLite database gets a small site: 12 experiments (one a search of
    6 trials with validation curves and training metrics, the rest single trials) and a
    model. The master's Flask app is built on it and every page of the web blueprint (its
    GET routes; those with an id get the seeded one) is loaded as a browser would with
    Flask's test client, ``Accept-Encoding: gzip, br``:

    - **first visit**: the page and every script and stylesheet it names;
    - **warm reload**: the same again with what the first visit left in an HTTP cache: a
      response that may be kept (``max-age``) is not asked for; one with an ETag or a
      Last-Modified is asked for with ``If-None-Match``/``If-Modified-Since``;
    - **unchanged poll**: the JSON list the page polls (experiments, trials, jobs), asked
      for twice with the first answer's validators, and the second answer's bytes.

    Bytes are what crosses the wire: the status line, the headers and the body as sent
    (compressed when it is). The requests a page's scripts make (its polls) are counted in
    the browser tier instead (tests/web/test_chromium_weight.py: no URL twice on load).

    ``--source DIR`` measures the hpcdet package of another checkout (e.g. the commit
    before the change), with this script.

How to reproduce
    .venv/bin/python bench/page_weight.py                         # this checkout
    .venv/bin/python bench/page_weight.py --source /work/main     # another checkout
    .venv/bin/python bench/page_weight.py --json
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _source(argv: Sequence[str]) -> Path:
    """``--source DIR`` (read before hpcdet is imported: it picks which hpcdet that is)."""
    for i, arg in enumerate(argv):
        if arg == "--source" and i + 1 < len(argv):
            return Path(argv[i + 1]).resolve()
        if arg.startswith("--source="):
            return Path(arg.split("=", 1)[1]).resolve()
    return REPO


SOURCE = _source(sys.argv[1:])
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(SOURCE))

from _common import bench_main, run_script  # noqa: E402
from flask import Flask  # noqa: E402
from flask.testing import FlaskClient  # noqa: E402
from sqlalchemy import insert  # noqa: E402

from hpcdet.dispatcher.slurm.backend import SlurmBackend  # noqa: E402
from hpcdet.master.app import create_app  # noqa: E402
from hpcdet.master.db import migrate, session_scope  # noqa: E402
from hpcdet.master.models import CommandTask, Experiment, Metric, Trial  # noqa: E402
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings  # noqa: E402

USER = "alice"
ACCEPT = {"Accept-Encoding": "gzip, br", "X-Hpcdet-User": USER}
ASSET = re.compile(r'<(?:script|link)\b[^>]*?(?:src|href)="(/static/[^"]+)"')
AT = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.timezone.utc)
CONFIG: dict[str, Any] = {"name": "weight", "searcher": {
    "name": "random", "metric": "validation_loss", "smaller_is_better": True, "max_trials": 6},
    "hyperparameters": {"lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1}}}
POLLS = ("/api/v1/experiments?limit=50", "/api/v1/experiments/{exp_id}/trials",
         "/api/v1/trials/{trial_id}/logs?tail=200")


def seed(app: Flask) -> dict[str, str]:
    """The site (module doc) and a command that ended; the ids the pages' URLs take."""
    with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
        ids = []
        for i in range(12):
            exp = Experiment(name=f"weight-{i}", owner=USER, state="COMPLETED", config=CONFIG,
                             original_config="", context=b"", searcher_name="random",
                             ended_at=AT)
            session.add(exp)
            session.flush()
            ids.append(exp.id)
        trials = []
        for n in range(6):
            trial = Trial(experiment_id=ids[0], state="COMPLETED", hparams={"lr": 0.001 * (n + 1)},
                          seed=n, token="t", job_dir="", steps_completed=1000,
                          best_validation={"steps_completed": 1000,
                                           "metrics": {"validation_loss": 0.3 + n / 20}})
            session.add(trial)
            session.flush()
            trials.append(trial.id)
        session.execute(insert(Metric), [
            {"trial_id": t, "group": group, "steps_completed": step, "name": name,
             "value": 1.0 / step, "reported_at": AT + dt.timedelta(seconds=step)}
            for t in trials for step in range(10, 1010, 10)
            for group, name in (("validation", "validation_loss"), ("training", "loss"))])
        task = CommandTask(owner=USER, name="weight-command", state="COMPLETED", job_id=None,
                           job_dir="/tmp", cwd="/tmp", workdir="/tmp", output_pattern="out",
                           kind="command", ended_at=AT, exit_code=0)
        session.add(task)
        session.flush()
        return {"exp_id": str(ids[0]), "trial_id": str(trials[0]), "task_id": str(task.id),
                "identifier": "weight-model"}


def pages(app: Flask, fill: dict[str, str]) -> dict[str, str]:
    """Every GET page of the web blueprint (no download, no sign-in token), by path; ``fill``
    gives the ids its URLs take."""
    found = {}
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("web.") or "GET" not in (rule.methods or ()):
            continue
        if rule.endpoint in ("web.checkpoint_download", "web.link_login",
                             "web.trial_logs_text"):
            continue
        path = rule.rule
        for name in rule.arguments:
            path = re.sub(rf"<(?:[a-z]+:)?{name}>", fill[name], path)
        found[rule.endpoint.removeprefix("web.")] = path
    return dict(sorted(found.items()))


class Browser:
    """An HTTP cache as a browser keeps one: fresh answers reused, others revalidated."""

    def __init__(self, client: FlaskClient) -> None:
        self.client = client
        self.cache: dict[str, dict[str, str]] = {}

    def get(self, url: str) -> tuple[int, int, bytes]:
        """(requests made, bytes received, body as sent) for ``url``."""
        kept = self.cache.get(url)
        if kept is not None and re.search(r"max-age=[1-9]", kept.get("Cache-Control", "")):
            return 0, 0, b""
        headers = dict(ACCEPT)
        if kept and kept.get("ETag"):
            headers["If-None-Match"] = kept["ETag"]
        if kept and kept.get("Last-Modified"):
            headers["If-Modified-Since"] = kept["Last-Modified"]
        with self.client.get(url, headers=headers) as answer:
            body = answer.get_data()
            sent = len(f"HTTP/1.1 {answer.status}\r\n") + sum(
                len(f"{k}: {v}\r\n") for k, v in answer.headers.items()) + 2 + len(body)
            if answer.status_code == 200:
                self.cache[url] = dict(answer.headers)
        return 1, sent, body


def visit(browser: Browser, path: str) -> dict[str, int]:
    """One page load: the page, then its scripts and stylesheets."""
    count, sent, body = browser.get(path)
    html = body if not body.startswith(b"\x1f\x8b") else _gunzip(body)
    if not html:  # a 304: the page is the one kept
        html = browser.cache.get(path + "#body", {}).get("html", "").encode()
    else:
        browser.cache[path + "#body"] = {"html": html.decode()}
    for asset in ASSET.findall(html.decode()):
        n, b, _ = browser.get(asset.replace("&amp;", "&"))
        count, sent = count + n, sent + b
    return {"requests": count, "bytes": sent}


def _gunzip(data: bytes) -> bytes:
    import gzip

    return gzip.decompress(data)


def poll_cost(client: FlaskClient, path: str) -> dict[str, int]:
    """An unchanged poll: the second of two asks, with the first's validators."""
    browser = Browser(client)
    browser.get(path)
    browser.cache[path].pop("Cache-Control", None)  # always asked again, as a poll is
    _, sent, _ = browser.get(path)
    _, first, _ = Browser(client).get(path)
    return {"first": first, "unchanged": sent}


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hpcdet-weight-") as tmp:
        url = f"sqlite:///{tmp}/master.db"
        migrate(url)
        rm = replace(ResourceManagerSettings(), job_storage_root=f"{tmp}/jobs",
                     cluster_name="bench-weight")
        app = create_app(MasterSettings(db_url=url, resource_manager=rm, state_dir=tmp),
                         backend=SlurmBackend())
        app.config["TESTING"] = True
        try:
            ids = seed(app)
            client = app.test_client()
            client.post("/api/v1/models", json={"name": "weight-model"}, headers=ACCEPT)
            rows = []
            for name, path in pages(app, ids).items():
                browser = Browser(client)
                first = visit(browser, path)
                warm = visit(browser, path)
                rows.append({"page": name, "path": path, "first": first, "warm": warm})
            polls = {p.format(**ids): poll_cost(client, p.format(**ids)) for p in POLLS}
        finally:
            app.config["HPCDET_ENGINE"].dispose()
    return {"source": str(SOURCE), "pages": rows, "polls": polls, "target_met": True}


def render_table(result: dict[str, Any]) -> str:
    lines = [f"source: {result['source']}", "",
             "| page | first visit: requests | bytes | warm reload: requests | bytes |",
             "|---|---:|---:|---:|---:|"]
    for row in result["pages"]:
        lines.append(f"| {row['page']} | {row['first']['requests']} | "
                     f"{row['first']['bytes']:,} | {row['warm']['requests']} | "
                     f"{row['warm']['bytes']:,} |")
    lines += ["", "| polled list | first answer bytes | unchanged poll bytes |", "|---|---:|---:|"]
    for path, cost in result["polls"].items():
        lines.append(f"| `{path}` | {cost['first']:,} | {cost['unchanged']:,} |")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=str(REPO),
                        help="the checkout whose hpcdet package to measure (default: this one)")
    parser.add_argument("--json", action="store_true", help="one JSON object, not tables")
    return parser.parse_args(argv)


def reproduce_command(args: argparse.Namespace) -> str:
    extra = [] if Path(args.source).resolve() == REPO else ["--source", args.source]
    return " ".join([".venv/bin/python", "bench/page_weight.py", *extra])


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=reproduce_command)


if __name__ == "__main__":
    run_script(main)
