"""The web Tasks page (``/tasks``) and the experiment page's Open TensorBoard button.

A named master (``root`` its admin) on the scripted scheduler (fake_scheduler.py); the
browser's user is the sign-in cookie. Real Chromium presses Kill in
tests/integration/test_it_tensorboard.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from log_seed import sessions
from master_helpers import create
from test_failure_summary import GPU_OOM

from hpcdet.dispatcher import JobPhase
from hpcdet.master.app import create_app
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import CommandTask
from hpcdet.master.scheduling.tasks import TASK_ERROR_LOG, TASK_OUTPUT_LOG
from hpcdet.master.settings.core import MasterSettings

pytestmark = pytest.mark.interactive
ALICE = {"X-Hpcdet-User": "alice"}


@pytest.fixture
def named_app(settings: MasterSettings, fake: FakeSchedulerBackend) -> Iterator[Flask]:
    app = create_app(replace(settings, require_user=True, admins=("root",)), backend=fake)
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def web(named_app: Flask) -> FlaskClient:
    return named_app.test_client()


def page(client: FlaskClient, user: str, url: str = "/tasks") -> str:
    client.set_cookie("hpcdet_user", user)
    response = client.get(url)
    assert response.status_code == 200, response.data
    return response.get_data(as_text=True)


def rows(html: str) -> dict[int, str]:
    """The table's rows by task id, line breaks removed."""
    flat = html.replace("\n", "")
    return {int(m.group(1)): m.group(0)
            for m in re.finditer(r'<tr id="task-(\d+)".*?</tr>', flat)}


def test_the_page_lists_tasks_with_open_and_kill(named_app: Flask, web: FlaskClient,
                                                 fake: FakeSchedulerBackend) -> None:
    command = web.post("/api/v1/commands", json={"entrypoint": ["sleep", "100"]},
                       headers=ALICE).json["task"]
    exp_id = create(web).get_json()["experiment"]["id"]
    board = web.post("/api/v1/tensorboards", json={"experiment_ids": [exp_id]},
                     headers=ALICE).json["task"]
    fake.phases[board["job_id"]] = JobPhase.RUNNING
    make_reconciler(named_app.config["HPCDET_SETTINGS"],
                    make_session_factory(named_app.config["HPCDET_ENGINE"]), fake).cycle()

    html = page(web, "alice")
    assert 'href="/tasks" data-key="t" aria-current="page"' in html  # in the navigation
    shown = rows(html)
    assert list(shown) == [board["id"], command["id"]]  # newest first
    tb, cmd = shown[board["id"]], shown[command["id"]]
    assert '<td title="tensorboard">TensorBoard</td>' in tb and "RUNNING" in tb
    assert "<td>alice</td>" in tb
    assert f'href="/proxy/{board["id"]}/"' in tb and "data-kill" in tb
    assert f'data-action-url="/api/v1/tasks/{board["id"]}/kill"' in tb
    assert '<td title="command">command</td>' in cmd and "QUEUED" in cmd
    assert "/proxy/" not in cmd and "data-kill" in cmd  # no service to open; killable

    assert rows(page(web, "bob")) == {}  # alice's private tasks are not bob's to see
    admin = rows(page(web, "root"))
    assert set(admin) == {board["id"], command["id"]} and "data-kill" in admin[board["id"]]

    only = rows(page(web, "alice", "/tasks?kind=tensorboard"))
    assert list(only) == [board["id"]]

    # Killed: no Kill button any more (the reconciler cancels the job next).
    assert web.post(f"/api/v1/tasks/{command['id']}/kill", headers=ALICE).status_code == 200
    assert "data-kill" not in rows(page(web, "alice"))[command["id"]]


def test_the_page_escapes_names_and_has_its_script(web: FlaskClient) -> None:
    web.post("/api/v1/commands", headers=ALICE, json={
        "entrypoint": ["true"], "config": {"description": "<b>x</b>"}})
    html = page(web, "alice")
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    assert '/static/tasks.js' in html
    with web.get("/static/tasks.js") as script:
        assert script.status_code == 200 and b"DOMParser" in script.data
    assert "No tasks yet" in page(web, "bob")


def test_the_experiment_page_has_open_tensorboard(web: FlaskClient) -> None:
    exp_id = create(web).get_json()["experiment"]["id"]
    html = page(web, "alice", f"/experiments/{exp_id}")
    assert f'data-open-tensorboard="{exp_id}"' in html and "Open TensorBoard" in html
    assert "/static/tensorboard.js" in html
    with web.get("/static/tensorboard.js") as script:
        assert script.status_code == 200 and b"/api/v1/tensorboards" in script.data


def errored_task(app: Flask, job_dir: Path, **columns: Any) -> int:
    """A task of alice's that ended ERROR, its log files in ``job_dir``."""
    with sessions(app).begin() as session:
        task = CommandTask(owner="alice", name="train", state="ERROR", job_id="303",
                           job_dir=str(job_dir), options=[], args=[], cwd="/", workdir="/",
                           output_pattern="out.txt", **columns)
        session.add(task)
        session.flush()
        return int(task.id)


def test_the_task_page_says_why_and_links_to_the_line(named_app: Flask, web: FlaskClient,
                                                       tmp_path: Path) -> None:
    (tmp_path / TASK_OUTPUT_LOG).write_text("epoch 1\n<b>step</b>\n")
    before = "Traceback (most recent call last):\n"
    (tmp_path / TASK_ERROR_LOG).write_text(
        f"{before}{GPU_OOM}\nsrun: error: node1: task 0: Exited with exit code 1\n")
    task_id = errored_task(named_app, tmp_path, native_state="FAILED", exit_code=1)
    html = page(web, "alice", f"/tasks/{task_id}")
    assert 'data-failure="oom_gpu"' in html and "ran out of GPU memory" in html
    # The summary links to the OOM line in the error file, which the page shows, red.
    anchor = f"log-{len(before)}"
    assert f'href="/tasks/{task_id}?stream=error#{anchor}" data-failure-line' in html
    assert re.search(rf'class="line level-error" id="{anchor}"', html)
    assert html.index("data-failure=") < html.index('id="facts"')
    assert "<dd data-fact=\"owner\">alice</dd>" in html and "/static/tasks.js" in html
    assert "data-active" not in html and "Finished." in html
    output = page(web, "alice", f"/tasks/{task_id}?stream=output")
    assert "&lt;b&gt;step&lt;/b&gt;" in output and "<b>step</b>" not in output
    assert f'href="/tasks/{task_id}"' in rows(page(web, "alice"))[task_id]  # the list links


def test_a_task_without_exit_code_says_what_is_known(named_app: Flask, web: FlaskClient,
                                                      tmp_path: Path) -> None:
    task_id = errored_task(named_app, tmp_path / "gone", native_state=None, exit_code=None)
    html = page(web, "alice", f"/tasks/{task_id}")
    assert "failed; the scheduler gave no exit code" in html
    assert "cannot be read" in html or "No log lines yet" in html


def test_a_missing_or_unseen_task_page_is_404(named_app: Flask, web: FlaskClient,
                                              tmp_path: Path) -> None:
    task_id = errored_task(named_app, tmp_path, native_state="FAILED", exit_code=2)
    for user, url in (("bob", f"/tasks/{task_id}"), ("alice", "/tasks/999999")):
        web.set_cookie("hpcdet_user", user)
        response = web.get(url)
        assert response.status_code == 404
        assert "not found" in response.get_data(as_text=True)
        assert "train" not in response.get_data(as_text=True)
    assert web.get("/tasks/x").status_code == 404
    # As the API answers bob.
    assert web.get(f"/api/v1/tasks/{task_id}", headers={"X-Hpcdet-User": "bob"}
                   ).status_code == 404


def test_an_active_task_page_refreshes_until_the_task_ends(web: FlaskClient) -> None:
    task = web.post("/api/v1/commands", json={"entrypoint": ["sleep", "100"]},
                    headers=ALICE).json["task"]
    html = page(web, "alice", f"/tasks/{task['id']}")
    assert re.search(r'<div id="task-live" data-every="\d+" data-active>', html)
    assert "Why it ended" not in html and "QUEUED" in html
    with web.get("/static/tasks.js") as script:
        assert b"task-live" in script.data and b"data-active" in script.data
