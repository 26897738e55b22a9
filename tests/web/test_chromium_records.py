"""Checkpoints, logs and fork/continue on the pages (issue 19, points 2, 7 and 11) in real
Chromium against a live det-master, at desktop and phone size.

The checkpoint and log tests seed the database (nothing is submitted). The fork and
continue tests (``-k from_the_page``) make the master submit trials to the dev Slurm
cluster: run them under ``flock /tmp/hpcdet-cluster.lock``. They kill what they started.
"""

from __future__ import annotations

import re
import tarfile
import uuid as uuid_lib
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from it_helpers import LiveMaster, wait_for, write_experiment
from seed_records import NEEDLE, Seeded, seed_records
from sqlalchemy.orm import Session

from hpcdet.master.models import Checkpoint, Experiment

RED = "rgb(207, 34, 46)"
# The one time format of the pages, in the browser's zone (named after the time).
TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d( \S+)?$")


def open_page(ctx: Any, master: LiveMaster, path: str, user: str = "tester"
              ) -> tuple[Any, list[str]]:
    """A page signed in as ``user``, with a list that collects its console and page errors."""
    ctx.add_cookies([{"name": "hpcdet_user", "value": user, "url": master.url}])
    page = ctx.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(master.url + path)
    page.wait_for_load_state("networkidle")
    return page, errors


def assert_fits(page: Any) -> None:
    """No horizontal overflow of the document (wide tables scroll in their own box)."""
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.fixture
def seeded(web_master: LiveMaster, web_db: Callable[[], Session]) -> Seeded:
    return seed_records(web_db, web_master.job_root / "ckpts")


def api_bytes(master: LiveMaster, path: str) -> bytes:
    response = httpx.get(f"{master.url}/api/v1{path}", headers={"X-Hpcdet-User": "tester"},
                         timeout=30)
    assert response.status_code == 200, response.text
    return response.content


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_trial_checkpoints_marks_and_download(request: pytest.FixtureRequest,
                                              web_master: LiveMaster, seeded: Seeded,
                                              shots: Path, size: str) -> None:
    ctx = request.getfixturevalue(size)
    page, errors = open_page(ctx, web_master, f"/trials/{seeded.trial_id}")
    rows = page.locator("#checkpoints tr[data-checkpoint]")
    assert rows.count() == 3
    gone = page.locator(f'tr[data-checkpoint="{seeded.deleted}"]')
    assert "ckpt-deleted" in (gone.get_attribute("class") or "")
    assert gone.locator("a[data-download]").count() == 0
    assert "files deleted" in gone.inner_text()
    # Deleted rows look different: greyed text, struck-through uuid.
    assert gone.locator("code.uuid").evaluate(
        "n => getComputedStyle(n).textDecorationLine") == "line-through"
    best = page.locator(f'tr[data-checkpoint="{seeded.best}"]')
    latest = page.locator(f'tr[data-checkpoint="{seeded.latest}"]')
    assert best.locator('[data-mark="best"]').count() == 1
    assert best.locator('[data-mark="latest"]').count() == 0
    assert latest.locator('[data-mark="latest"]').count() == 1
    assert latest.locator('[data-mark="best"]').count() == 0
    assert str(web_master.job_root / "ckpts" / seeded.best) in best.inner_text()
    assert "KiB" in best.inner_text() and "validation_loss 0.2" in best.inner_text()
    page.screenshot(path=str(shots / f"trial-checkpoints-{size}.png"), full_page=True)

    link = best.locator("a[data-download]")
    with page.expect_download() as info:
        link.click()
    got = Path(info.value.path()).read_bytes()
    assert got == api_bytes(web_master, f"/checkpoints/{seeded.best}/download")
    names = tarfile.open(fileobj=BytesIO(got)).getnames()
    assert "state/model.bin" in names and "metadata.json" in names
    # The live refresh re-renders the table with the same rows, marks and links.
    page.evaluate("document.dispatchEvent(new Event('hpcdet:changed'))")
    page.wait_for_load_state("networkidle")
    assert page.locator("#checkpoints a[data-download]").count() == 2
    assert page.locator('#checkpoints [data-mark="best"]').count() == 1
    assert_fits(page)
    assert errors == []


def test_checkpoint_download_route_checks_the_page_user(web_master: LiveMaster,
                                                        seeded: Seeded) -> None:
    """The page route needs the sign-in cookie (a plain link from elsewhere has none) and
    answers HTML errors: deleted is 410, unknown 404; never the tar without a user."""
    url = f"{web_master.url}/checkpoints/{seeded.best}/download"
    anonymous = httpx.get(url, timeout=30)
    assert anonymous.status_code == 302 and "/login" in anonymous.headers["location"]
    cookies = {"hpcdet_user": "tester"}
    deleted = httpx.get(f"{web_master.url}/checkpoints/{seeded.deleted}/download",
                        cookies=cookies, timeout=30)
    assert deleted.status_code == 410 and deleted.headers["content-type"].startswith(
        "text/html")
    unknown = httpx.get(f"{web_master.url}/checkpoints/{'x' * 500}/download",
                        cookies=cookies, timeout=30)
    assert unknown.status_code == 404 and "<html" in unknown.text


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_experiment_checkpoint_list_best_first(request: pytest.FixtureRequest,
                                               web_master: LiveMaster, seeded: Seeded,
                                               shots: Path, size: str) -> None:
    ctx = request.getfixturevalue(size)
    page, errors = open_page(ctx, web_master, f"/experiments/{seeded.exp_id}")
    order = page.locator("#experiment-checkpoints tr").evaluate_all(
        "rows => rows.map(r => r.dataset.checkpoint)")
    assert order == [seeded.best, seeded.latest, seeded.deleted]  # best first, deleted last
    assert page.locator('#experiment-checkpoints [data-mark="best"]').count() == 1
    assert page.locator("[data-fork-experiment]").count() == 1
    page.locator("#checkpoints-title").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / f"experiment-checkpoints-{size}.png"), full_page=True)
    assert_fits(page)
    assert errors == []


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_logs_timestamps_levels_search_and_download(request: pytest.FixtureRequest,
                                                     web_master: LiveMaster, seeded: Seeded,
                                                     shots: Path, size: str) -> None:
    ctx = request.getfixturevalue(size)
    page, errors = open_page(ctx, web_master, f"/trials/{seeded.trial_id}")
    lines = page.locator("#logs .line")
    assert lines.count() == 200
    stamps = page.locator("#logs .line time.at").all_inner_texts()
    assert len(stamps) == 200 and all(TIME.match(s) for s in stamps)
    colour = "n => getComputedStyle(n).color"
    info = page.locator("#logs .line", has_text="INFO: harness done")
    error = page.locator("#logs .line", has_text="ERROR: checkpoint upload failed")
    assert "stderr" in (info.get_attribute("class") or "")
    assert info.evaluate(colour) != RED  # stderr alone is not an error
    assert error.evaluate(colour) == RED

    with page.expect_download() as got:
        page.locator("#log-download").click()
    text = Path(got.value.path()).read_text()
    assert len(text.splitlines()) == seeded.log_lines
    assert text.splitlines()[0].startswith("2026-11-26T09:00:00+00:00 [rank 0 node1 stderr]")
    assert "INFO: <script>x</script>\n" in text  # plain text, as logged

    page.locator("#log-search").fill("BOOM")  # case-insensitive, older than the shown tail
    page.wait_for_function("document.getElementById('logs-note').textContent"
                           ".includes('1 line match')")
    assert page.locator("#logs .line").all_inner_texts()[0].strip().endswith(NEEDLE.lower())
    assert lines.count() == 1
    assert "q=BOOM" in page.url
    page.screenshot(path=str(shots / f"trial-logs-{size}.png"), full_page=True)
    with page.expect_download() as got:
        page.locator("#log-download").click()
    assert Path(got.value.path()).read_text().count("\n") == 1
    page.locator("#log-search").fill("no such text")
    page.wait_for_function("document.getElementById('logs-note').textContent"
                           ".includes('0 lines match')")
    assert page.locator("#logs .empty").inner_text().startswith("No line matches")
    assert_fits(page)
    assert errors == []


def test_logs_search_without_javascript(web_master: LiveMaster, seeded: Seeded) -> None:
    """The search is a plain GET form: the server filters and counts."""
    html = httpx.get(f"{web_master.url}/trials/{seeded.trial_id}?q=boom",
                     cookies={"hpcdet_user": "tester"}, timeout=30).text
    assert "1 line match “boom”" in html and NEEDLE.lower() in html
    assert f'href="/trials/{seeded.trial_id}/logs.txt?q=boom"' in html


# ---- fork (submits to the dev cluster: run under the cluster lock) --------------------


def _experiment_ids(master: LiveMaster) -> list[int]:
    return sorted(e["id"] for e in master.api("/experiments?limit=100")["experiments"])


def _kill_and_wait(master: LiveMaster, exp_id: int) -> None:
    # Not checked: the experiment may have ended on its own meanwhile (a seeded one has no
    # model definition, so its requeued trial fails at once); it must end either way.
    master.det("experiment", "kill", str(exp_id))
    wait_for(lambda: master.api(f"/experiments/{exp_id}")["experiment"]["state"]
             in ("CANCELED", "COMPLETED", "ERROR"), f"experiment {exp_id} to end")


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_fork_from_the_page(request: pytest.FixtureRequest, web_master: LiveMaster,
                            tmp_path: Path, shots: Path, size: str) -> None:
    config = {"name": "fork-source", "entrypoint": "python3 sleeper.py", "max_restarts": 0,
              "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}}}
    path = write_experiment(tmp_path / "exp", config, {"sleeper.py": "import time\n"
                                                       "time.sleep(60)\n"})
    created = web_master.det("experiment", "create", str(path), str(path.parent), check=True)
    source = int(created.stdout.split("Created experiment")[1].split()[0])
    _kill_and_wait(web_master, source)
    ctx = request.getfixturevalue(size)
    page, errors = open_page(ctx, web_master, f"/experiments/{source}")
    page.locator("[data-fork-experiment]").click()
    page.wait_for_url(f"**/experiments/{source}/fork")
    area = page.locator("#config-text")
    original = area.input_value()
    assert yaml.safe_load(original)["name"] == "fork-source"
    before = _experiment_ids(web_master)

    area.fill(original + "\nsearcher: [unclosed\n")  # not YAML: refused, nothing created
    page.locator("[data-config-submit]").click()
    box = page.locator("[data-config-error]")
    box.wait_for(state="visible")
    assert "YAML" in box.inner_text()
    area.fill(original.replace("max_restarts: 0", "max_restarts: -5"))  # invalid value
    page.locator("[data-config-submit]").click()
    page.wait_for_function("document.querySelector('[data-config-error]').textContent"
                           ".includes('max_restarts')")
    page.screenshot(path=str(shots / f"fork-error-{size}.png"), full_page=True)
    assert _experiment_ids(web_master) == before
    assert_fits(page)
    # The browser logs each refused POST (400) as a failed resource; nothing else.
    assert len(errors) == 2 and all("status of 400" in e for e in errors), errors
    errors.clear()

    area.fill(original.replace("name: fork-source", "name: forked-from-page"))
    page.locator("[data-config-submit]").click()
    page.wait_for_url(re.compile(r".*/experiments/\d+$"))
    forked = int(page.url.rsplit("/", 1)[1])
    try:
        assert forked not in before
        described = web_master.api(f"/experiments/{forked}")["experiment"]
        assert described["name"] == "forked-from-page" and described["parent_id"] == source
        assert errors == []
    finally:
        _kill_and_wait(web_master, forked)


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_continue_and_fork_trial_pages(request: pytest.FixtureRequest,
                                       web_master: LiveMaster, seeded: Seeded, shots: Path,
                                       size: str) -> None:
    """The forms render with their config; submitting is the fork test's path."""
    ctx = request.getfixturevalue(size)
    page, errors = open_page(ctx, web_master, f"/trials/{seeded.trial_id}")
    page.locator("[data-continue-trial]").click()
    page.wait_for_url(f"**/trials/{seeded.trial_id}/continue")
    overrides = yaml.safe_load(page.locator("#config-text").input_value())
    assert overrides == {"searcher": {"max_length": {"batches": 300}}}
    page.screenshot(path=str(shots / f"continue-trial-{size}.png"), full_page=True)
    assert_fits(page)
    page.goto(f"{web_master.url}/trials/{seeded.trial_id}/fork")
    forked = yaml.safe_load(page.locator("#config-text").input_value())
    assert forked["hyperparameters"] == {"lr": {"type": "const", "val": 0.01}}
    assert forked["searcher"]["name"] == "single"
    assert_fits(page)
    assert errors == []


def test_experiment_checkpoint_list_follows_a_running_experiment(
        desktop: Any, web_master: LiveMaster, web_db: Callable[[], Session],
        seeded: Seeded) -> None:
    """While the experiment has not ended, a new checkpoint appears without a reload.
    (PAUSED: not ended, and nothing for the reconciler to submit.)"""
    with web_db() as session, session.begin():
        session.get_one(Experiment, seeded.exp_id).state = "PAUSED"
    page, errors = open_page(desktop, web_master, f"/experiments/{seeded.exp_id}")
    assert page.locator("#experiment-checkpoints tr").count() == 3
    with web_db() as session, session.begin():
        session.add(Checkpoint(uuid=str(uuid_lib.uuid4()), trial_id=seeded.trial_id,
                               steps_completed=400, validation_metrics={"validation_loss": 0.1}))
    page.wait_for_function("document.querySelectorAll('#experiment-checkpoints tr')"
                           ".length === 4", timeout=30_000)
    first = page.locator("#experiment-checkpoints tr").first
    assert first.locator('[data-mark="best"]').count() == 1  # the new best
    assert errors == []


def test_continue_from_the_page(desktop: Any, web_master: LiveMaster, seeded: Seeded,
                                shots: Path) -> None:
    """Continue trial: an override the master refuses is shown and changes nothing; a
    longer max_length reopens the experiment and requeues the trial (submitted to the
    dev cluster: killed at once)."""
    page, errors = open_page(desktop, web_master, f"/trials/{seeded.trial_id}/continue")
    area = page.locator("#config-text")
    area.fill("searcher:\n  name: random\n")
    page.locator("[data-config-submit]").click()
    page.wait_for_function("document.querySelector('[data-config-error]').textContent"
                           ".includes('fork the experiment')")
    assert web_master.api(f"/experiments/{seeded.exp_id}")["experiment"]["state"] == \
        "COMPLETED"
    assert len(errors) == 1 and "status of 400" in errors[0], errors
    errors.clear()
    area.fill("searcher:\n  max_length:\n    batches: 600\n")
    page.locator("[data-config-submit]").click()
    page.wait_for_url(f"**/trials/{seeded.trial_id}")
    try:
        described = web_master.api(f"/experiments/{seeded.exp_id}")["experiment"]
        # Reopened (it may already have ended again: its trial has no model definition).
        assert [h["to"] for h in described["history"]
                if h["cause"] == "continue requested"] == ["ACTIVE"]
        assert described["config"]["searcher"]["max_length"] == {"batches": 600}
        assert page.locator("#logs", has_text="experiment continued by tester").count() == 1
        page.screenshot(path=str(shots / "continue-trial-done-desktop.png"), full_page=True)
        assert errors == []
    finally:
        _kill_and_wait(web_master, seeded.exp_id)
