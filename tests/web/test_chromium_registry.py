"""The model registry's pages in real Chromium against a live det-master (issue 33, item 6):
register a version through the checkpoint picker, see its download link and the Python that
loads it, edit the model's description, labels and metadata. One master; rows are seeded
(tests/web/seed_records.py), nothing is submitted to the cluster."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from it_helpers import LiveMaster
from seed_records import seed_records
from sqlalchemy.orm import Session
from test_chromium_records import assert_fits, open_page


def api(master: LiveMaster, method: str, path: str, body: Any = None) -> Any:
    response = httpx.request(method, f"{master.url}/api/v1{path}", json=body, timeout=30,
                             headers={"X-Hpcdet-User": "tester"})
    assert response.status_code < 300, response.text
    return response.json()


def test_register_by_picker_download_snippet_and_edit(web_master: LiveMaster,
                                                      web_db: Callable[[], Session],
                                                      desktop: Any, phone: Any) -> None:
    seeded = seed_records(web_db, web_master.job_root / "ckpts")
    api(web_master, "POST", "/models", {"name": "digits", "metadata": {"old": 1}})
    page, errors = open_page(desktop, web_master, f"/models/digits?experiment={seeded.exp_id}")
    picker = page.locator("select[data-checkpoint-picker]")
    assert picker.locator("option").first.get_attribute("value") == seeded.best  # best first
    assert "validation_loss 0.2" in picker.locator("option").first.inner_text()
    picker.select_option(seeded.best)
    page.fill("form[data-register-version] input[name=comment]", "the best one")
    with page.expect_navigation():
        page.click("[data-register-submit]")
    row = page.locator('tr[data-version="1"]')
    assert row.get_attribute("data-checkpoint") == seeded.best
    assert "Active" in row.inner_text() and "ACTIVE" not in row.inner_text()
    link = row.locator("a[data-download]")
    assert link.get_attribute("href") == f"/checkpoints/{seeded.best}/download"
    page.click('details[data-snippet="1"] summary')
    snippet = page.locator('details[data-snippet="1"] code')
    assert snippet.is_visible()
    assert "client.get_model('digits').get_version(1)" in snippet.inner_text()

    page.fill("form[data-edit-model] input[name=description]", "MLP <b>for</b> digits")
    page.fill("form[data-edit-model] input[name=labels]", "prod, small")
    page.fill("form[data-edit-model] textarea[name=metadata]", "acc = 0.97\nteam = ml")
    with page.expect_navigation():
        page.click("form[data-edit-model] button[type=submit]")
    assert page.inner_text('[data-fact="description"]') == "MLP <b>for</b> digits"
    assert page.locator('[data-fact="labels"] .label-tag').all_inner_texts() == ["prod",
                                                                                 "small"]
    assert page.inner_text('[data-metadata-key="team"] td') == "ml"
    model = api(web_master, "GET", "/models/digits")["model"]
    assert model["metadata"] == {"acc": 0.97, "team": "ml"}  # "old" removed, 0.97 a number
    assert_fits(page)
    assert errors == []

    small, small_errors = open_page(phone, web_master, "/models/digits")
    assert small.locator('tr[data-version="1"] a[data-download]').count() == 1
    small.click('details[data-snippet="1"] summary')  # the code scrolls in its own box
    assert_fits(small)
    assert small_errors == []
