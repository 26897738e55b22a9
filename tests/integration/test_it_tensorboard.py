"""``det tensorboard`` through the real CLI, a live master (SQLite), the dev Slurm cluster
and a real ``tensorboard``; the web Tasks page in real headless Chromium.

A trial (the stand-in, ``standin/standin.py``: the digits trial's reports on the standard
library) validates once, then waits at a gate file.
TensorBoard is started for its experiment and read through its own scalars API at the
node's host and port from ``service.json``, with the task's secret as the master's proxy
sends it (without it the port answers 401; :func:`test_tensorboard_in_chromium_through_the_proxy`
goes through the proxy): it shows the one point,
the gate opens, and the points reported while TensorBoard runs appear, until there are as
many as the master's API reports.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from it_helpers import (
    REPO,
    STANDIN_ENTRYPOINT,
    LiveMaster,
    load_json,
    sacct_state,
    standin_context,
    trials_of,
    wait_for,
)
from test_it_sbatch import wait_for_state

pytestmark = [pytest.mark.slurm, pytest.mark.interactive,
              pytest.mark.parametrize("master", ["sqlite"], indirect=True)]

DIGITS = REPO / "examples" / "digits"
TAG = "validation/validation_loss"
EPOCHS = 3


def create_gated(master: LiveMaster, tmp_path: Path, gate: Path) -> tuple[int, int]:
    """The gated experiment (the digits example's config, the stand-in trial: validates
    after epoch 1, then waits for ``gate``); its id and its trial's."""
    context = standin_context(tmp_path / "context")
    config = yaml.safe_load((DIGITS / "const.yaml").read_text())
    config.update({"name": "tensorboard-gated", "entrypoint": STANDIN_ENTRYPOINT})
    config["searcher"]["max_length"] = {"epochs": EPOCHS}
    config["resources"]["slots_per_trial"] = 1
    config["slurm"]["slots_per_node"] = 1
    config["environment"]["environment_variables"] += [f"STANDIN_GATE={gate}"]
    path = tmp_path / "gated.yaml"
    path.write_text(yaml.safe_dump(config))
    out = master.det("experiment", "create", str(path), str(context), check=True)
    exp_id = int(next(li for li in out.stdout.splitlines()
                      if li.startswith("Created")).split()[-1])
    trial = wait_for(lambda: (trials_of(master, exp_id) or [None])[0],
                     "the trial to exist", 120)
    return exp_id, int(trial["id"])


def api_validation_steps(master: LiveMaster, trial_id: int) -> list[int]:
    entries = master.api(f"/trials/{trial_id}/metrics?group=validation")["metrics"]
    return [e["steps_completed"] for e in entries if "validation_loss" in e["metrics"]]


def service_of(master: LiveMaster, task_id: int) -> dict[str, Any]:
    """service.json, with the task's secret (``secret``) the master's proxy sends."""
    job_dir = Path(master.api(f"/tasks/{task_id}")["task"]["job_dir"])
    service: dict[str, Any] = json.loads((job_dir / "service.json").read_text())
    service["secret"] = (job_dir / "service_token").read_text().strip()
    return service


def tensorboard_steps(base: str, task_id: int, trial_id: int, secret: str) -> list[int]:
    """The steps of the validation loss curve, from TensorBoard's own scalars API."""
    query = urllib.parse.urlencode({"run": f"trial_{trial_id}", "tag": TAG})
    answer = httpx.get(f"{base}/proxy/{task_id}/data/plugin/scalars/scalars?{query}",
                       headers={"Authorization": f"token {secret}"}, timeout=10)
    if answer.status_code != 200:  # the run is not loaded yet
        return []
    return [int(step) for _, step, _ in answer.json()]


def start_tensorboard(master: LiveMaster, exp_id: int) -> int:
    """``det tensorboard start`` (waits until it serves); the task's id."""
    # The job imports hpcdet from this checkout (the venv's may be another checkout's).
    started = master.det("tensorboard", "start", str(exp_id), "--no-browser", "--config",
                         f"environment.environment_variables=[PYTHONPATH={REPO}]", timeout=400)
    assert started.returncode == 0, (started.stdout, started.stderr,
                                     master.log.read_text()[-3000:])
    url = started.stdout.strip()
    assert url.startswith(f"{master.url}/proxy/") and url.endswith("/"), started.stdout
    return int(url.rstrip("/").rsplit("/", 1)[1])


def test_tensorboard_shows_the_experiments_points_as_they_come(
        master: LiveMaster, tmp_path: Path) -> None:
    gate = tmp_path / "go"
    exp_id, trial_id = create_gated(master, tmp_path, gate)
    wait_for(lambda: api_validation_steps(master, trial_id), "the first validation", 300)
    task_id = start_tensorboard(master, exp_id)

    service = service_of(master, task_id)
    base, secret = f"http://{service['host']}:{service['port']}", service["secret"]
    assert httpx.get(f"{base}/proxy/{task_id}/", timeout=10).status_code == 401
    first = wait_for(lambda: tensorboard_steps(base, task_id, trial_id, secret),
                     "TensorBoard to show the first point", 60)
    assert first == api_validation_steps(master, trial_id)  # the trial waits at the gate
    assert len(first) < EPOCHS

    gate.touch()  # the trial trains on while TensorBoard runs: new points appear
    final = wait_for_experiment(master, exp_id)
    assert final == "COMPLETED", master.det("trial", "logs", str(trial_id)).stdout[-3000:]
    expected = api_validation_steps(master, trial_id)
    assert len(expected) == EPOCHS
    wait_for(lambda: tensorboard_steps(base, task_id, trial_id, secret) == expected,
             "TensorBoard to show every validation", 60)
    assert tensorboard_steps(base, task_id, trial_id, secret) == expected  # once each

    listed = load_json(master.det("tensorboard", "list", "--json", check=True).stdout)
    [mine] = [t for t in listed["tasks"] if t["id"] == task_id]
    assert (mine["state"], mine["kind"], mine["config"]["experiment_ids"]) == (
        "RUNNING", "tensorboard", [exp_id])
    jobs = wait_for(lambda: [j for j in master.api("/jobs")["jobs"]
                             if j.get("task_id") == task_id], "det job list's row", 60)
    assert jobs[0]["type"] == "TENSORBOARD"
    logs = master.det("tensorboard", "logs", str(task_id), check=True).stdout
    assert "TensorBoard serves /proxy/" in logs

    killed = master.det("tensorboard", "kill", str(task_id), check=True)
    assert "STOPPING_KILLED" in killed.stdout
    task = wait_for_state(master, task_id, "CANCELED", "COMPLETED", "ERROR")
    assert task["state"] == "CANCELED"


def wait_for_experiment(master: LiveMaster, exp_id: int) -> str:
    ended = ("COMPLETED", "CANCELED", "ERROR")
    state: str = wait_for(
        lambda: (s if (s := master.api(f"/experiments/{exp_id}")["experiment"]["state"])
                 in ended else None), "the experiment to end", 600)
    return state


@pytest.mark.browser
def test_tensorboard_in_chromium_through_the_proxy(master: LiveMaster, tmp_path: Path,
                                                   browser: Any) -> None:
    """The validation loss in TensorBoard's page, through the master's proxy, with as many
    points as the API reports."""
    gate = tmp_path / "go"
    gate.touch()
    exp_id, trial_id = create_gated(master, tmp_path, gate)
    assert wait_for_experiment(master, exp_id) == "COMPLETED"
    expected = api_validation_steps(master, trial_id)
    task_id = start_tensorboard(master, exp_id)

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": "hpcdet_user", "value": "tester", "url": master.url}])
    page = context.new_page()
    page.goto(f"{master.url}/proxy/{task_id}/#timeseries")
    # Only the validation loss's card: the training cards fill the first screen.
    page.locator("input[placeholder='Filter tags (regex)']").first.fill(TAG)
    page.locator("card-view", has_text=TAG).first.wait_for(timeout=60_000)
    query = urllib.parse.urlencode({"run": f"trial_{trial_id}", "tag": TAG})
    points = page.evaluate(
        "url => fetch(url).then(r => r.json())",
        f"/proxy/{task_id}/data/plugin/scalars/scalars?{query}")
    assert [int(step) for _, step, _ in points] == expected
    context.close()


def sleeping_experiment(master: LiveMaster, tmp_path: Path) -> int:
    """An experiment whose one trial sleeps (a script entrypoint: no torch)."""
    context = tmp_path / "sleepy"
    context.mkdir()
    (context / "train.py").write_text("import time\ntime.sleep(300)\n")
    config = {"name": "it-sleepy", "entrypoint": "python3 train.py",
              "searcher": {"name": "single", "metric": "loss",
                           "max_length": {"batches": 1}},
              "resources": {"slots_per_trial": 1}, "max_restarts": 0}
    path = tmp_path / "sleepy.yaml"
    path.write_text(yaml.safe_dump(config))
    out = master.det("experiment", "create", str(path), str(context), check=True)
    return int(next(li for li in out.stdout.splitlines()
                    if li.startswith("Created")).split()[-1])


@pytest.mark.browser
def test_the_tasks_page_lists_and_kills(master: LiveMaster, browser: Any,
                                        tmp_path: Path) -> None:
    sleeper = master.det("cmd", "run", "-d", "--config", "description=it-page-sleeper", "--",
                         "sleep", "300", check=True)
    task_id = int(sleeper.stdout.strip())
    exp_id = sleeping_experiment(master, tmp_path)
    wait_for_state(master, task_id, "RUNNING")

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": "hpcdet_user", "value": "tester", "url": master.url}])
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda dialog: dialog.accept())

    # The experiment page's button starts a TensorBoard of it and shows it on the Tasks page.
    page.goto(f"{master.url}/experiments/{exp_id}")
    page.get_by_role("button", name="Open TensorBoard").click()
    page.wait_for_url(re.compile(r".*/tasks\?kind=tensorboard#task-\d+$"), timeout=30_000)
    board_id = int(page.url.rsplit("-", 1)[1])
    board = master.api(f"/tasks/{board_id}")["task"]
    assert (board["kind"], board["config"]["experiment_ids"]) == ("tensorboard", [exp_id])
    assert page.locator(f"#task-{board_id}").count() == 1

    page.goto(f"{master.url}/tasks")
    row = page.locator(f"#task-{task_id}")
    assert "it-page-sleeper" in row.inner_text() and "Running" in row.inner_text()
    assert "command" in row.inner_text() and "tester" in row.inner_text()
    row.locator("button[data-kill]").click()
    # The page refreshes its table after the kill and while the task is active.
    page.locator(f"#task-{task_id} .state-CANCELED").wait_for(timeout=90_000)
    assert page.locator(f"#task-{task_id} button[data-kill]").count() == 0
    task = wait_for_state(master, task_id, "CANCELED")
    deadline = time.monotonic() + 60
    while not sacct_state(task["job_id"], master.env).startswith("CANCELLED"):
        assert time.monotonic() < deadline, sacct_state(task["job_id"], master.env)
        time.sleep(1)
    assert errors == []
    context.close()
