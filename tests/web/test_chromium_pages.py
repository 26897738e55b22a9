"""The "pages" area of issue 19 in real Chromium: lists that stay live, sorting, name
search and batch actions on ``/``, HTML error pages, state and time words, and every page at
desktop and phone size (no console errors, no sideways overflow outside scroll containers
that say they scroll), with screenshots in test-output/web/.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from seed_pages import (
    Sessions,
    add_experiment,
    add_task,
    api_post,
    experiment_states,
    first_trial,
)

USER = "tester"
WAIT_MS = 30_000
# Elements sticking out of the viewport that are not inside a scroll container (or a <pre>,
# which scrolls itself): what a phone user would have to pan the whole page for.
OVERFLOW_JS = """() => {
  const width = window.innerWidth;
  const out = [];
  document.querySelectorAll('body *').forEach((el) => {
    if (el.closest('.scroll, pre')) { return; }
    const box = el.getBoundingClientRect();
    if (box.width && box.right > width + 1) { out.push(el.tagName + '.' + el.className); }
  });
  return {scroll: document.documentElement.scrollWidth, width: width, out: out.slice(0, 5)};
}"""


@pytest.fixture
def web_master_settings(tmp_path: Path) -> dict[str, Any]:
    """The fixture's resource manager, rereading Slurm every 2 s: the lists poll that often."""
    return {"resource_manager": {"master_host": "127.0.0.1", "cluster_name": "web",
                                 "job_storage_root": str(tmp_path / "jobs"), "slot_type": "cpu",
                                 "pool_refresh_seconds": 2}}


class Watched:
    """A page with its console errors and uncaught exceptions collected."""

    def __init__(self, context: Any, base: str) -> None:
        context.add_cookies([{"name": "hpcdet_user", "value": USER, "url": base}])
        self.page = context.new_page()
        self.base = base
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error"
                     else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, path: str, status: int = 200) -> Any:
        response = self.page.goto(self.base + path)
        assert response is not None and response.status == status, (path, response)
        return response


@pytest.fixture
def watched(web_master: Any, desktop: Any) -> Iterator[Watched]:
    yield Watched(desktop, web_master.url)


def row_ids(page: Any) -> list[int]:
    return [int(i) for i in page.eval_on_selector_all(
        "#experiments tr[data-experiment-id]", "rows => rows.map(r => r.dataset.experimentId)")]


def test_the_list_picks_up_a_new_experiment_after_every_listed_one_ended(
        watched: Watched, web_db: Sessions) -> None:
    done = add_experiment(web_db, name="finished", state="COMPLETED")
    page = watched.page
    watched.open("/")
    page.wait_for_function("document.querySelector('[data-poll-status]').textContent"
                           ".startsWith('Live')", timeout=WAIT_MS)
    assert row_ids(page) == [done]
    later = add_experiment(web_db, name="submitted-later", state="ACTIVE")
    page.wait_for_selector(f'#experiments tr[data-experiment-id="{later}"]', timeout=WAIT_MS)
    assert row_ids(page) == [later, done]
    assert "no longer refreshing" not in page.inner_text("main")
    assert page.inner_text("[data-range]") == "Showing 1–2 of 2"
    assert watched.errors == []


def test_the_tasks_list_picks_up_a_new_task_when_none_is_active(watched: Watched,
                                                                  web_db: Sessions) -> None:
    ended = add_task(web_db, name="ended")
    page = watched.page
    watched.open("/tasks")
    page.wait_for_function("document.querySelector('[data-poll-status]').textContent"
                           ".startsWith('Live')", timeout=WAIT_MS)
    later = add_task(web_db, name="started-later", state="COMPLETED")
    page.wait_for_selector(f"#task-{later}", timeout=WAIT_MS)
    assert page.is_visible(f"#task-{ended}")
    assert "no longer refreshing" not in page.inner_text("main")
    assert page.inner_text(f"#task-{later} .state") == "Completed"
    assert watched.errors == []


def test_columns_sort_and_names_are_searched(watched: Watched, web_db: Sessions) -> None:
    ids = {name: add_experiment(web_db, name=name, losses=(loss,), state=state)
           for name, loss, state in [("bert-base", 0.3, "COMPLETED"), ("resnet", 0.1, "ACTIVE"),
                                     ("bert-large", 0.2, "PAUSED")]}
    page = watched.page
    watched.open("/")
    assert row_ids(page) == sorted(ids.values(), reverse=True)  # newest first
    page.click('th a[data-sort="name"]')
    page.wait_for_url(re.compile(r"sort=name&order=asc"))
    assert row_ids(page) == [ids["bert-base"], ids["bert-large"], ids["resnet"]]
    assert page.get_attribute('th:has(a[data-sort="name"])', "aria-sort") == "ascending"
    page.click('th a[data-sort="name"]')  # again: the other way
    page.wait_for_url(re.compile(r"order=desc"))
    assert row_ids(page) == [ids["resnet"], ids["bert-large"], ids["bert-base"]]
    page.click('th a[data-sort="best"]')  # best loss, smallest first (smaller is better)
    page.wait_for_url(re.compile(r"sort=best"))
    page.click('th a[data-sort="best"]')
    page.wait_for_url(re.compile(r"sort=best&order=asc"))
    assert row_ids(page) == [ids["resnet"], ids["bert-large"], ids["bert-base"]]
    page.fill('input[name="name"]', "BERT")
    page.click('#experiment-filters button[type="submit"]')
    page.wait_for_url(re.compile(r"name=BERT"))
    assert row_ids(page) == [ids["bert-large"], ids["bert-base"]]  # still by best loss
    # The poll asks for the same order and filter: the rows stay as they are.
    page.wait_for_function("document.querySelector('[data-poll-status]').textContent"
                           ".startsWith('Live')", timeout=WAIT_MS)
    assert row_ids(page) == [ids["bert-large"], ids["bert-base"]]
    assert watched.errors == []


def test_without_javascript_the_list_still_sorts_searches_and_reads_in_utc(
        browser: Any, web_master: Any, web_db: Sessions) -> None:
    ids = [add_experiment(web_db, name=name, state="STOPPING_COMPLETED")
           for name in ("beta", "alpha")]
    context = browser.new_context(java_script_enabled=False)
    page = Watched(context, web_master.url).page
    page.goto(web_master.url + "/?sort=name&order=asc&name=A")
    assert row_ids(page) == [ids[1], ids[0]]
    assert page.inner_text(f'tr[data-experiment-id="{ids[0]}"] .state') == "Stopping"
    assert page.inner_text(f'tr[data-experiment-id="{ids[0]}"] time').endswith(" UTC")
    # No script: no checkboxes or batch bar that could do nothing.
    assert not page.is_visible("[data-batch]") and not page.is_visible("input[data-pick]")
    context.close()


def test_two_selected_experiments_are_paused_at_once(watched: Watched,
                                                     web_db: Sessions) -> None:
    mine = [add_experiment(web_db, name=f"mine-{n}") for n in range(3)]
    theirs = add_experiment(web_db, name="theirs", owner="someone-else")
    page = watched.page
    questions: list[str] = []
    page.on("dialog", lambda d: (questions.append(d.message), d.accept()))
    watched.open("/")
    assert page.is_visible("[data-batch]")
    # Only rows the user may change can be selected.
    assert page.query_selector(f'tr[data-experiment-id="{theirs}"] input[data-pick]') is None
    assert page.is_disabled('button[data-batch-action="pause"]')
    for exp_id in mine[:2]:
        page.check(f'input[data-pick="{exp_id}"]')
    assert page.inner_text("[data-batch-count]") == "2 selected:"
    assert page.is_disabled('button[data-batch-action="activate"]')
    page.click('button[data-batch-action="pause"]')
    page.wait_for_selector("[data-action-status]:not([hidden])", timeout=WAIT_MS)
    assert questions == [f"Pause 2 experiments ({mine[0]}, {mine[1]})? Their trials checkpoint "
                         "and free their Slurm allocations."]
    assert page.inner_text("[data-action-status]") == "Pause requested for 2 experiments."
    assert experiment_states(web_db, [*mine, theirs]) == {
        mine[0]: "PAUSED", mine[1]: "PAUSED", mine[2]: "ACTIVE", theirs: "ACTIVE"}
    for exp_id in mine[:2]:
        page.wait_for_selector(f'tr[data-experiment-id="{exp_id}"] .state-PAUSED',
                               timeout=WAIT_MS)
    assert watched.errors == []


@pytest.mark.parametrize(("path", "status", "text"), [
    ("/experiments/abc", 404, "experiment ids are whole numbers"),
    ("/experiments/99999999999999999999999", 404, "experiment ids are whole numbers"),
    ("/trials/99999999999999999999999", 404, "trial ids are whole numbers"),
    ("/no/such/page", 404, "There is no page at /no/such/page."),
    ("/?sort=%3Cscript%3E", 400, "sort: unknown column"),
])
def test_bad_paths_answer_html_error_pages_in_the_layout(
        watched: Watched, path: str, status: int, text: str) -> None:
    page = watched.page
    response = watched.open(path, status)
    assert response.headers["content-type"].startswith("text/html")
    assert text in page.inner_text("main")
    assert page.is_visible('nav[aria-label="main"] a.brand')
    assert not page.query_selector("main script")


def test_a_page_past_the_end_says_so_and_links_to_the_last(watched: Watched,
                                                           web_db: Sessions) -> None:
    ids = [add_experiment(web_db, name=f"e{n}", state="COMPLETED") for n in range(3)]
    page = watched.page
    watched.open("/?page=99999&per_page=2")
    assert page.inner_text("[data-range]") == "This page is past the end: 3 experiments in all."
    page.click('a[data-page-link="last"]')
    page.wait_for_url(re.compile(r"page=2"))
    assert row_ids(page) == [ids[0]]
    api = page.request.get(watched.base + "/api/v1/experiments/abc")
    assert api.status == 404 and api.json()["error"]["code"] == "not_found"


def test_states_and_times_read_as_words_in_local_time(browser: Any, web_master: Any,
                                                      web_db: Sessions) -> None:
    stopping = add_experiment(web_db, name="stopping", state="STOPPING_COMPLETED")
    # A reader in India (UTC+05:30, no daylight saving): local time is not UTC.
    context = browser.new_context(viewport={"width": 1440, "height": 900},
                                  timezone_id="Asia/Kolkata", bypass_csp=True)
    watched = Watched(context, web_master.url)
    page = watched.page
    watched.open("/")
    badge = page.locator(f'tr[data-experiment-id="{stopping}"] .state')
    assert badge.inner_text() == "Stopping"
    assert badge.get_attribute("title") == "STOPPING_COMPLETED"
    watched.open(f"/trials/{first_trial(web_db, stopping)}")
    page.wait_for_function("document.querySelector('[data-poll-status]').textContent"
                           ".startsWith('Live')", timeout=WAIT_MS)
    trial_badge = page.locator("[data-trial-state]")
    assert trial_badge.inner_text() == "Running" and trial_badge.get_attribute("title") == "RUNNING"
    # Times: the script's local text (no "UTC" left), the ISO UTC moment on hover.
    times = page.eval_on_selector_all("time[datetime]",
                                      "ts => ts.map(t => [t.textContent, t.title])")
    assert times
    for text, title in times:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", title), title
        utc = dt.datetime.fromisoformat(title.replace("Z", "+00:00"))
        local = utc.astimezone(dt.timezone(dt.timedelta(hours=5, minutes=30)))
        assert text == local.strftime("%Y-%m-%d %H:%M:%S ") + "GMT+5:30", (text, title)
    # The poll status says when in the same format (not "8:36:31 PM").
    assert re.search(r"Live: updated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d GMT\+5:30\.",
                     page.inner_text("[data-poll-status]"))
    assert watched.errors == []
    context.close()


def seed_every_page(base: str, web_db: Sessions) -> dict[str, str]:
    """Data for every page; the pages to visit by screenshot name."""
    exp_id = add_experiment(web_db, name="digits-search", losses=(0.42, 0.31, 0.55),
                            labels=("baseline", "cnn"))
    const_id = add_experiment(web_db, name="digits-const", state="COMPLETED", losses=(0.2,))
    add_experiment(web_db, name="a-very-long-experiment-name-for-the-phone-layout",
                   state="STOPPING_COMPLETED", owner="someone-else")
    api_post(base, "/api/v1/models", {"name": "digits-model", "description": "the best one"})
    return {"experiments": "/", "experiment": f"/experiments/{exp_id}",
            "trial": f"/trials/{first_trial(web_db, exp_id)}", "models": "/models",
            "model": "/models/digits-model", "cluster": "/cluster", "queue": "/queue",
            "tasks": "/tasks", "login": "/login",
            "compare": f"/compare?trials={first_trial(web_db, exp_id)},"
                       f"{first_trial(web_db, const_id)}"}


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_every_page_renders_cleanly_at_desktop_and_phone_size(
        request: pytest.FixtureRequest, web_master: Any, web_db: Sessions, shots: Path,
        size: str) -> None:
    pages = seed_every_page(web_master.url, web_db)
    watched = Watched(request.getfixturevalue(size), web_master.url)
    page = watched.page
    for name, path in pages.items():
        if name == "login":  # the sign-in page as whoever needs it sees it: signed out
            page.context.clear_cookies()
            path = "/login"
        watched.open(path)
        page.wait_for_load_state("networkidle")
        # The sign-in link (or who is signed in) shares the brand's line, never alone.
        brand, who = (page.locator(f"nav {s}").bounding_box() for s in (".brand", ".who"))
        assert brand and who and abs(brand["y"] - who["y"]) < brand["height"], name
        layout = page.evaluate(OVERFLOW_JS)
        assert layout["scroll"] <= layout["width"] and not layout["out"], (name, layout)
        # Every scroll container can be reached from the keyboard and says what it holds.
        for box in page.query_selector_all(".scroll"):
            assert box.get_attribute("tabindex") == "0" and box.get_attribute("aria-label")
        # Every empty cell shows a dash (written, or drawn by the stylesheet).
        empty = page.evaluate("""() => [...document.querySelectorAll('td')].filter(td =>
            td.offsetParent && !td.classList.contains('pick') && !td.textContent.trim() &&
            !td.querySelector('input, button, a, svg, span') &&
            getComputedStyle(td, '::after').content !== '"\u2014"').length""")
        assert empty == 0, name
        page.screenshot(path=str(shots / f"{name}-{size}.png"), full_page=True)
    assert watched.errors == []
