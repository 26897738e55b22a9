"""The pages on a munge master in real headless Chromium: ``det user web-login`` (run as
user_a) signs the browser in through a one-time link; user_a pauses their own experiment
from its page, is refused on user_b's, and neither a cross-site form nor a same-site
request without the page's CSRF token changes anything; intruder's own sign-in link, opened
for user_a by another site or behind her back, never replaces her session."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from it_helpers import LiveMaster, wait_for
from it_users import as_user, check_users, fresh_home, ok, sleeper_experiment

pytestmark = [pytest.mark.multiuser, pytest.mark.browser, pytest.mark.slurm]


@pytest.fixture
def master_settings() -> dict[str, Any]:
    return {"auth": {"mode": "munge"}}


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    check_users()
    ctx = browser.new_context()
    yield ctx
    ctx.close()


def create_as(master: LiveMaster, user: str, name: str) -> int:
    path = sleeper_experiment(user, name)
    return int(ok(as_user(master, user, "experiment", "create", str(path),
                          str(path.parent))).split()[-1])


def state_of(master: LiveMaster, exp_id: int, owner: str = "user_a") -> str:
    """The experiment's state, as its owner reads it (nobody else sees it)."""
    token = json.loads(ok(as_user(master, owner, "user", "token", "create", "--json",
                                  "--expires-days", "1")))["token"]
    answer = httpx.get(f"{master.url}/api/v1/experiments/{exp_id}",
                       headers={"Authorization": f"Bearer {token}"}).json()
    return str(answer["experiment"]["state"])


def post_from_page(page: Any, url: str, csrf: str | None) -> int:
    """A same-origin fetch POST from the signed-in page, with or without the CSRF header."""
    return int(page.evaluate("""async ([url, csrf]) => {
        const headers = {"Accept": "application/json"};
        if (csrf) { headers["X-CSRF-Token"] = csrf; }
        const response = await fetch(url, {method: "POST", headers: headers});
        return response.status;
    }""", [url, csrf]))


def test_one_time_link_csrf_and_ownership(master: LiveMaster, context: Any) -> None:
    for user in ("user_a", "user_b"):
        fresh_home(user)
    mine, theirs = create_as(master, "user_a", "web-mine"), create_as(master, "user_b", "web-b")
    link = ok(as_user(master, "user_a", "user", "web-login")).strip()
    assert link.startswith(f"{master.url}/login/")

    page = context.new_page()
    page.goto(link)
    assert page.url.rstrip("/") == master.url
    assert page.locator("[data-web-user]").inner_text() == "user_a"
    cookie = next(c for c in context.cookies() if c["name"] == "hpcdet_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    csrf = page.locator('meta[name="csrf-token"]').get_attribute("content")
    assert csrf

    # The link is used up: a second browser gets nothing.
    other = context.browser.new_context()
    assert other.new_page().goto(link).status == 401
    other.close()

    # Cross-site: a form on another origin posting to the master changes nothing.
    page.goto("about:blank")
    page.set_content(f'<form method="post" action="{master.url}/api/v1/experiments/{mine}/kill">'
                     '<button>go</button></form>')
    page.click("button")
    page.wait_for_load_state()
    # Same site, but without the page's CSRF token: refused before anything happens.
    page.goto(f"{master.url}/experiments/{mine}")
    kill = f"{master.url}/api/v1/experiments/{mine}/kill"
    assert post_from_page(page, kill, None) == 403
    assert post_from_page(page, kill, "forged") == 403
    assert state_of(master, mine) == "ACTIVE"

    # Another user's experiment: its page is the 404 page (not even its name shows), and
    # the API refuses even with the CSRF token, as for an experiment that does not exist.
    shown = page.goto(f"{master.url}/experiments/{theirs}")
    assert shown is not None and shown.status == 404
    assert page.locator("[data-actions]").count() == 0
    assert post_from_page(page, f"{master.url}/api/v1/experiments/{theirs}/pause", csrf) == 404
    assert state_of(master, theirs, "user_b") == "ACTIVE"

    # Their own: the page's Pause button (it sends the CSRF token) works.
    page.goto(f"{master.url}/experiments/{mine}")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button[data-action=pause]")
    wait_for(lambda: state_of(master, mine) != "ACTIVE" or None, "the pause to take effect")
    for user, exp_id in (("user_a", mine), ("user_b", theirs)):
        as_user(master, user, "experiment", "kill", str(exp_id))


def test_another_users_link_never_replaces_the_session(master: LiveMaster, context: Any) -> None:
    """Issue 28, finding 4: a cross-site navigation to intruder's link (user_a's cookie
    present) swapped user_a's session for intruder's."""
    for user in ("user_a", "intruder"):
        fresh_home(user)
    page = context.new_page()
    page.goto(ok(as_user(master, "user_a", "user", "web-login")).strip())
    assert page.locator("[data-web-user]").inner_text() == "user_a"
    trap = ok(as_user(master, "intruder", "user", "web-login")).strip()

    page.goto("about:blank")  # another site's page links to intruder's link
    page.set_content(f'<a href="{trap}">a dataset you will like</a>')
    page.click("a")
    page.wait_for_load_state()
    assert "another site" in page.content()
    page.goto(master.url)
    assert page.locator("[data-web-user]").inner_text() == "user_a"

    page.goto(trap)  # opened directly: asked first, nothing switched
    assert page.locator("[data-link-user]").inner_text() == "intruder"
    page.goto(master.url)
    assert page.locator("[data-web-user]").inner_text() == "user_a"
