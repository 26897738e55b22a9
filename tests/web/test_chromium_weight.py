"""Page weight in real Chromium (issue 33, item 5): no page asks for the same URL twice
while it loads, and every static file it loads is a fingerprinted URL.

The page's clock is Playwright's fake one, never advanced: the pollers' intervals never
fire, so what is counted is exactly what the page asks for on load however slow the
machine is (a poll repeating a URL later is polling, not a duplicate).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from seed_charts import OWNER, seed_search
from seed_pages import Sessions
from test_chromium_pages import seed_every_page


def load_requests(context: Any, base: str, user: str, path: str) -> list[str]:
    """The URLs (path and query) a fresh tab asks for while ``path`` loads."""
    context.add_cookies([{"name": "hpcdet_user", "value": user, "url": base}])
    page = context.new_page()
    urls: list[str] = []
    page.on("request", lambda r: urls.append(r.url.removeprefix(base)))
    page.clock.install()
    try:
        answer = page.goto(base + path)
        assert answer is not None and answer.status == 200, path
        page.wait_for_load_state("networkidle")
    finally:
        page.close()
    return urls


@pytest.mark.parametrize("size", ["desktop"])
def test_no_page_asks_for_a_url_twice_on_load(request: pytest.FixtureRequest, web_master: Any,
                                              web_db: Sessions, size: str) -> None:
    pages = {name: ("tester", path) for name, path in
             seed_every_page(web_master.url, web_db).items() if name != "login"}
    seeded = seed_search(web_db)  # a trial with profiler samples; a search to compare
    pages["profiled trial"] = (OWNER, f"/trials/{seeded.long_trial_id}")
    pages["search"] = (OWNER, f"/experiments/{seeded.experiment_id}")
    context = request.getfixturevalue(size)
    for name, (user, path) in pages.items():
        urls = load_requests(context, web_master.url, user, path)
        twice = {url: n for url, n in Counter(urls).items() if n > 1}
        assert twice == {}, (name, twice)
        static = [url for url in urls if url.startswith("/static/")]
        assert static and all("?v=" in url for url in static), (name, static)
