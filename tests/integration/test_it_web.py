"""The web pages in real headless Chromium, following a real experiment on the dev cluster.

One paced trial trains on Slurm while the browser watches (the stand-in trial,
``standin/standin.py``: the digits trial's reports on the standard library, printing a line
per batch; the pages, not the training, are under test): the experiment page lists
the trial and draws its validation metric live, the trial page's log view grows as the trial
prints, Pause and Activate (with their confirmation dialogs) change the state shown, and at the
end the chart has exactly as many points as the trial reported validations. Every page is
checked for console errors, for horizontal overflow on a phone-sized screen, and photographed
(desktop and phone) into ``test-output/web/`` (``HPCDET_TEST_OUTPUT`` moves it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from it_helpers import STANDIN_ENTRYPOINT, LiveMaster, standin_context, trials_of, wait_for

pytestmark = [pytest.mark.slurm, pytest.mark.browser]

USER = "tester"  # the master fixture's DET_USER: the experiment's owner
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


class WatchedPage:
    """A browser tab that records console errors and uncaught exceptions."""

    def __init__(self, context: Any) -> None:
        self.page = context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda msg: self.errors.append(f"console: {msg.text}")
                     if msg.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.errors.append(f"exception: {exc}"))

    def open(self, url: str) -> WatchedPage:
        response = self.page.goto(url)
        assert response is not None and response.ok, f"{url}: {response and response.status}"
        return self

    def number(self, selector: str, attribute: str) -> int:
        value = self.page.locator(selector).first.get_attribute(attribute)
        return int(value or 0)

    def count(self, selector: str) -> int:
        return int(self.page.locator(selector).count())


@pytest.fixture
def master_settings() -> dict[str, Any]:
    # Named users: pages ask for a sign-in and only the owner (or an admin) gets the buttons.
    return {"auth": {"require_user": True, "admins": ["site-admin"]}}


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport=DESKTOP)
    yield ctx
    ctx.close()



def create(master: LiveMaster, tmp_path: Path) -> tuple[int, int]:
    context = standin_context(tmp_path / "context")
    config = {
        "name": "web-watched", "entrypoint": STANDIN_ENTRYPOINT,
        "labels": ["browser"],
        "hyperparameters": {"lr": 0.01, "hidden_size": 32, "global_batch_size": 64},
        "min_validation_period": {"epochs": 1}, "min_checkpoint_period": {"epochs": 1},
        "searcher": {"name": "single", "metric": "validation_loss", "smaller_is_better": True,
                     "max_length": {"epochs": 8}},
        "resources": {"slots_per_trial": 2}, "slurm": {"slots_per_node": 2},
        # A line per batch (logs to follow) and a little sleep (time to press Pause).
        "environment": {"environment_variables": ["STANDIN_PRINT_BATCHES=1",
                                                  "STANDIN_BATCH_SLEEP=0.08"]},
        "max_restarts": 0,
    }
    path = tmp_path / "web.yaml"
    path.write_text(yaml.safe_dump(config))
    out = master.det("experiment", "create", str(path), str(context), check=True)
    assert "Watch it in a browser: " in out.stderr
    exp_id = int(next(li for li in out.stdout.splitlines() if li.startswith("Created")).split()[-1])
    trial = wait_for(lambda: (trials_of(master, exp_id) or [None])[0],
                     "the trial to exist", 60)
    return exp_id, int(trial["id"])


def sign_in(context: Any, url: str, name: str) -> None:
    tab = WatchedPage(context).open(f"{url}/login")
    tab.page.fill("#name", name)
    tab.page.click("form.stack button[type=submit]")
    tab.page.wait_for_url(f"{url}/")
    assert tab.page.locator("[data-web-user]").inner_text() == name
    assert tab.errors == []
    tab.page.close()


def validations(master: LiveMaster, trial_id: int) -> int:
    entries = master.api(f"/trials/{trial_id}/metrics?group=validation")["metrics"]
    return sum(1 for e in entries if "validation_loss" in e["metrics"])


# One database is enough here: the pages' queries are covered on both by the unit tier.
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_pages_follow_a_training_experiment(master: LiveMaster, tmp_path: Path, context: Any,
                                            browser: Any, test_output: Path) -> None:
    shots = test_output / "web"
    shots.mkdir(exist_ok=True)
    sign_in(context, master.url, USER)
    exp_id, trial_id = create(master, tmp_path)
    experiment = WatchedPage(context).open(f"{master.url}/experiments/{exp_id}")
    trial = WatchedPage(context).open(f"{master.url}/trials/{trial_id}")

    _logs_follow_live(trial)
    experiment.page.locator(f'tr[data-trial-id="{trial_id}"]').wait_for()
    wait_for(lambda: experiment.number("#validation-chart svg", "data-points") >= 2,
             "the chart to draw two validations without a reload", 180)
    _pause_and_activate(master, experiment, exp_id, trial_id)
    _logs_filter_by_rank(trial)

    state = experiment.page.locator("[data-experiment-state]").first
    wait_for(lambda: state.get_attribute("title") == "COMPLETED", "the page to show COMPLETED", 300)
    wait_for(lambda: "Finished" in experiment.page.locator("[data-poll-status]").first
             .inner_text(), "polling to stop for the finished experiment", 30)
    expected = validations(master, trial_id)
    assert expected >= 8
    assert experiment.number("#validation-chart svg", "data-points") == expected
    experiment.page.reload()
    assert experiment.number("#validation-chart svg", "data-points") == expected
    assert experiment.errors == [] and trial.errors == []

    pages = {"experiments": "/", "experiment": f"/experiments/{exp_id}",
             "trial": f"/trials/{trial_id}", "cluster": "/cluster", "queue": "/queue"}
    _photograph_every_page(browser, context, master.url, pages, shots)
    _others_see_no_actions(browser, master.url, exp_id)


def _logs_follow_live(trial: WatchedPage) -> None:
    """Lines arrive in the log view while the page stays open (no reload)."""
    lines = "#logs [data-log-id]"
    first = wait_for(lambda: trial.count(lines), "the first log lines", 180)
    wait_for(lambda: trial.count(lines) > first, "more log lines without a reload", 120)
    # The first lines may all be the ranks' start-up lines: the training's come later.
    wait_for(lambda: "epoch" in trial.page.locator("#logs").inner_text(),
             "an epoch line in the live log view", 120)


def _logs_filter_by_rank(trial: WatchedPage) -> None:
    def ranks() -> set[str]:
        return set(trial.page.locator("#logs [data-log-id]").evaluate_all(
            "nodes => nodes.map(n => n.dataset.rank)"))

    trial.page.select_option("#log-rank", "1")
    # The unfiltered lines stay until the filtered answer replaces them (CI saw both ranks).
    wait_for(lambda: ranks() == {"1"}, "rank 1's lines alone", 60)


def _pause_and_activate(master: LiveMaster, experiment: WatchedPage, exp_id: int,
                        trial_id: int) -> None:
    """The buttons ask first, then the state shown changes without a reload."""
    page = experiment.page
    state = page.locator("[data-experiment-state]").first
    asked: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.on("dialog", answer)
    page.click('[data-actions] button[data-action="pause"]')
    wait_for(lambda: state.get_attribute("title") == "PAUSED", "the page to show PAUSED", 30)
    assert asked and f"Pause experiment {exp_id}?" in asked[0]
    assert page.locator('button[data-action="activate"]').is_visible()
    assert not page.locator('button[data-action="pause"]').is_visible()
    wait_for(lambda: master.api(f"/trials/{trial_id}")["trial"]["state"] == "PAUSED",
             "the trial to checkpoint and pause", 180)
    page.click('[data-actions] button[data-action="activate"]')
    wait_for(lambda: state.get_attribute("title") == "ACTIVE", "the page to show ACTIVE", 30)
    assert len(asked) == 2


def _photograph_every_page(browser: Any, context: Any, url: str, pages: dict[str, str],
                           shots: Path) -> None:
    phone = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True,
                                storage_state=context.storage_state())
    try:
        for name, path in pages.items():
            for label, ctx in (("desktop", context), ("phone", phone)):
                tab = WatchedPage(ctx).open(url + path)
                tab.page.wait_for_load_state("networkidle")
                tab.page.screenshot(path=str(shots / f"{name}-{label}.png"), full_page=True)
                overflow = tab.page.evaluate(
                    "document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 1, f"{path} is {overflow}px wider than the {label} screen"
                assert tab.errors == [], f"{path} ({label}): {tab.errors}"
                tab.page.close()
    finally:
        phone.close()


def _others_see_no_actions(browser: Any, url: str, exp_id: int) -> None:
    """Another user, outside any workspace of the owner's, gets the not-found page: no
    buttons, nothing of the experiment (docs/admin/security.md)."""
    other = browser.new_context(viewport=DESKTOP)
    try:
        sign_in(other, url, "somebody-else")
        page = other.new_page()
        response = page.goto(f"{url}/experiments/{exp_id}")
        assert response is not None and response.status == 404
        assert page.locator("[data-actions] button").count() == 0
        text = page.inner_text("main")
        assert f"Experiment {exp_id} not found" in text and "web-watched" not in text
        listing = page.goto(f"{url}/")
        assert listing is not None and listing.ok
        assert "web-watched" not in page.inner_text("main")
        page.close()
    finally:
        other.close()
