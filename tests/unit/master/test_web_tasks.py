"""The web Tasks page (``/tasks``) and the experiment page's Open TensorBoard button.

A named master (``root`` its admin) on the scripted scheduler (fake_scheduler.py); the
browser's user is the sign-in cookie. Real Chromium presses Kill in
tests/integration/test_it_tensorboard.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import create

from hpcdet.dispatcher import JobPhase
from hpcdet.master.app import create_app
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
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
    assert "<td>tensorboard</td>" in tb and "RUNNING" in tb and "<td>alice</td>" in tb
    assert f'href="/proxy/{board["id"]}/"' in tb and "data-kill" in tb
    assert f'data-action-url="/api/v1/tasks/{board["id"]}/kill"' in tb
    assert "<td>command</td>" in cmd and "QUEUED" in cmd
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
