"""``det notebook`` on the dev cluster behind a munge master, in real headless Chromium.

user_a starts JupyterLab as a Slurm job; the browser, signed in as user_a through
``det user web-login``, opens it through the master's proxy and runs a cell printing the
node's hostname and ``SLURM_JOB_ID``, and the page shows them (HTTP and the kernel's
WebSocket both cross the proxy); ``det user whoami`` in the kernel answers user_a although
the job runs as the master's account. user_b is refused at the proxy. The master is killed
with SIGKILL and started again: the notebook's job runs on and the proxy works again. A
notebook with a short ``idle_timeout`` ends by itself, COMPLETED.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from it_helpers import REPO, LiveMaster, wait_for
from it_users import as_user, check_users, fresh_home, ok

pytestmark = [pytest.mark.interactive, pytest.mark.slurm, pytest.mark.browser,
              pytest.mark.multiuser, pytest.mark.parametrize("master", ["sqlite"],
                                                             indirect=True)]

# The kernel also asks the master who it is, with det (hpcdet's client) as the kernel runs
# it: the job runs as the master's account, but det acts as the notebook's owner.
CELL = ("import os, socket, subprocess\n"
        "try:\n"
        "    who = subprocess.run(['det', 'user', 'whoami'], capture_output=True, text=True,\n"
        "                         timeout=120)\n"
        "    answer = who.stdout.strip() or who.stderr.strip()\n"
        "except Exception as error:  # shown on the page, so a failure names itself\n"
        "    answer = repr(error)\n"
        "print('HOST', socket.gethostname(), 'JOB', os.environ['SLURM_JOB_ID'], 'AS', answer)")
PAGE_TIMEOUT_MS = 180_000
PRESSES = 5
PRESS_TIMEOUT_MS = 20_000


@pytest.fixture
def master_settings() -> dict[str, Any]:
    return {"auth": {"mode": "munge"}}


@pytest.fixture
def browser_context(browser: Any) -> Iterator[Any]:
    check_users()
    ctx = browser.new_context()
    yield ctx
    ctx.close()


def notebook_dir(user: str, name: str, idle_timeout: str | None = None) -> Path:
    """A context with one notebook (the cell above) and the notebook config, in ``user``'s
    home and owned by them; the job finds this checkout's hpcdet through PYTHONPATH."""
    entry = pwd.getpwnam(user)
    directory = Path(entry.pw_dir) / "hpcdet-it" / name
    shutil.rmtree(directory, ignore_errors=True)
    (directory / "context").mkdir(parents=True)
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "id": "c1",
                           "metadata": {}, "outputs": [], "source": CELL}],
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                            "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    (directory / "context" / "where.ipynb").write_text(json.dumps(notebook))
    config: dict[str, Any] = {"description": name, "environment": {
        "environment_variables": [f"PYTHONPATH={REPO}"]}}
    if idle_timeout is not None:
        config["idle_timeout"] = idle_timeout
    (directory / "notebook.yaml").write_text(yaml.safe_dump(config))
    for item in (directory.parent, directory, *directory.rglob("*")):
        os.chown(item, entry.pw_uid, entry.pw_gid)
    return directory


def start_notebook(master: LiveMaster, user: str, directory: Path) -> int:
    out = ok(as_user(master, user, "notebook", "start", "-d", "--config-file",
                     str(directory / "notebook.yaml"), "--context",
                     str(directory / "context")))
    return int(out.strip().splitlines()[-1])


def token_of(master: LiveMaster, user: str) -> str:
    return str(json.loads(ok(as_user(master, user, "user", "token", "create", "--json",
                                     "--expires-days", "1")))["token"])


def task_of(master: LiveMaster, token: str, task_id: int) -> dict[str, Any]:
    answer = httpx.get(f"{master.url}/api/v1/tasks/{task_id}",
                       headers={"Authorization": f"Bearer {token}"}, timeout=30)
    task: dict[str, Any] = answer.json()["task"]
    return task


def proxy_status(master: LiveMaster, token: str, task_id: int) -> int:
    try:
        return httpx.get(f"{master.url}/proxy/{task_id}/api/status", timeout=30,
                         headers={"Authorization": f"Bearer {token}"}).status_code
    except httpx.TransportError:
        return 0


def node_host_name(master: LiveMaster, node: str) -> str:
    out = subprocess.run(["scontrol", "show", "node", "-o", node], env=master.env,
                         capture_output=True, text=True, check=True).stdout
    fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
    return fields["NodeHostName"]


def sign_in(master: LiveMaster, context: Any, user: str) -> Any:
    link = ok(as_user(master, user, "user", "web-login")).strip()
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.goto(link)
    return page


def run_the_cell(page: Any, url: str) -> str:
    """Open the notebook in JupyterLab, run its cell, return the output the page shows.

    Shift+Enter runs the cell only if the notebook has the keyboard focus; while JupyterLab
    is still restoring its layout it can take the focus away (seen once on a loaded CI
    machine: the key went nowhere). So the key is pressed again until the cell's prompt
    shows it was taken (``[*]`` queued or running, ``[1]`` done).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(f"{url}lab/tree/where.ipynb")
    cell = page.locator(".jp-Notebook .jp-CodeCell").first
    prompt = cell.locator(".jp-InputPrompt")
    for _ in range(PRESSES):
        cell.locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        try:
            page.wait_for_function("el => /\\[(\\*|\\d+)\\]/.test(el.textContent)",
                                   arg=prompt.element_handle(), timeout=PRESS_TIMEOUT_MS)
            break
        except PlaywrightTimeout:
            continue
    output = cell.locator(".jp-OutputArea-output")
    try:
        output.filter(has_text="AS").wait_for()
    except PlaywrightTimeout:
        status = page.locator(".jp-StatusBar-Widget, .jp-Toolbar-kernelStatus")
        print("cell prompt:", prompt.inner_text(timeout=5000), "| output:",
              output.all_inner_texts(), "| status bar:", status.all_inner_texts())
        raise
    return str(output.inner_text())


def test_a_notebook_through_the_proxy_in_chromium(
        master: LiveMaster, browser_context: Any, browser: Any, test_output: Path) -> None:
    for user in ("user_a", "user_b"):
        fresh_home(user)
    task_id = start_notebook(master, "user_a", notebook_dir("user_a", "it-notebook"))
    token_a, token_b = token_of(master, "user_a"), token_of(master, "user_b")
    wait_for(lambda: proxy_status(master, token_a, task_id) == 200,
             "the notebook to answer through the proxy", timeout=300)
    url = ok(as_user(master, "user_a", "notebook", "open", str(task_id),
                     "--no-browser")).strip()
    assert url == f"{master.url}/proxy/{task_id}/"
    # JupyterLab starts the notebook's kernel without a "Select Kernel" dialog (hpcdet's
    # default: that dialog, shown when the lab opens a notebook before it has read the
    # kernel specs, held this test's cell once on a loaded CI machine).
    tracker = httpx.get(f"{url}lab/api/settings/@jupyterlab/notebook-extension:tracker",
                        headers={"Authorization": f"Bearer {token_a}"}, timeout=30)
    assert tracker.status_code == 200, tracker.text
    # (JupyterLab serves default overrides as the schema's defaults.)
    schema = tracker.json()["schema"]["properties"]
    assert schema["autoStartDefaultKernel"]["default"] is True
    task = task_of(master, token_a, task_id)
    assert (task["kind"], task["state"]) == ("notebook", "RUNNING")
    wait_for(lambda: any(job.get("task_id") == task_id and job["type"] == "NOTEBOOK"
                         for job in json.loads(ok(as_user(master, "user_a", "job", "list",
                                                          "--json")))["jobs"]),
             "det job list to show the notebook as NOTEBOOK", timeout=90)
    expected = (f"HOST {node_host_name(master, task['nodes'])} JOB {task['job_id']} "
                "AS user_a")

    page = sign_in(master, browser_context, "user_a")
    try:
        assert run_the_cell(page, url).strip() == expected
    except Exception:
        # What the job said (Jupyter's own log) shows why a cell did not run.
        print(as_user(master, "user_a", "notebook", "logs", str(task_id)).stdout)
        raise
    finally:
        page.screenshot(path=str(test_output / "notebook-through-proxy.png"))

    # user_b: refused at the proxy, in the browser and with a token, as for no such task.
    other = browser.new_context()
    try:
        answer = sign_in(master, other, "user_b").goto(url)
        assert answer is not None and answer.status == 404
    finally:
        other.close()
    assert proxy_status(master, token_b, task_id) == 404
    assert httpx.get(f"{master.url}/proxy/{task_id}/api/status", timeout=30).status_code == 401

    # The master dies with SIGKILL and comes back: the job ran on, the proxy works again.
    master.kill9()
    master.start()
    wait_for(lambda: proxy_status(master, token_a, task_id) == 200,
             "the proxy to answer again after the restart", timeout=120)
    assert run_the_cell(page, url).strip() == expected
    assert task_of(master, token_a, task_id)["job_id"] == task["job_id"]

    ok(as_user(master, "user_a", "notebook", "kill", str(task_id)))
    wait_for(lambda: task_of(master, token_a, task_id)["state"] == "CANCELED",
             "the notebook's job to be cancelled")
    assert proxy_status(master, token_a, task_id) == 410


def test_an_idle_notebook_ends_by_itself(master: LiveMaster) -> None:
    check_users()
    fresh_home("user_a")
    task_id = start_notebook(master, "user_a",
                             notebook_dir("user_a", "it-idle", idle_timeout="10s"))
    token = token_of(master, "user_a")
    wait_for(lambda: proxy_status(master, token, task_id) == 200,
             "the notebook to answer through the proxy", timeout=300)
    # Jupyter checks for inactivity once a minute.
    final = wait_for(lambda: (lambda t: t if t["state"] not in ("QUEUED", "RUNNING")
                              else None)(task_of(master, token, task_id)),
                     "the idle notebook to end", timeout=240)
    assert (final["state"], final["exit_code"]) == ("COMPLETED", 0)
    logs = ok(as_user(master, "user_a", "notebook", "logs", str(task_id)))
    assert "stops after 10 s idle" in logs and "exited with code 0" in logs
