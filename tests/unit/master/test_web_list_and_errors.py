"""``/`` and ``GET /api/v1/experiments``: sorting and name search; browser paths answer
HTML error pages, the API JSON; batch checkboxes only on rows the user may change."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

import pytest
from flask import Flask
from flask.testing import FlaskClient
from test_web_experiments import add, api, page, row_ids, sessions

from hpcdet.master.app import create_app
from hpcdet.master.db import session_scope
from hpcdet.master.models import Experiment, Workspace, WorkspaceMember
from hpcdet.master.settings.core import MasterSettings


def seed_names(app: Flask) -> dict[str, int]:
    rows = [("bert_base", "alice", "COMPLETED", 0.3, 0.9),
            ("ResNet-50%", "bob", "ACTIVE", 0.1, 0.2),
            ("bert-large", "carol", "PAUSED", 0.2, 0.5), ("no-metric", "dave", "ERROR", None, 0)]
    with session_scope(sessions(app)) as session:
        return {name: add(session, name=name, owner=owner, state=state, progress=progress,
                          values=[] if loss is None else [loss])
                for name, owner, state, loss, progress in rows}


@pytest.mark.parametrize(("query", "order"), [
    ("", ["no-metric", "bert-large", "ResNet-50%", "bert_base"]),
    ("sort=id&order=asc", ["bert_base", "ResNet-50%", "bert-large", "no-metric"]),
    ("sort=name", ["bert-large", "bert_base", "no-metric", "ResNet-50%"]),
    ("sort=owner&order=desc", ["no-metric", "bert-large", "ResNet-50%", "bert_base"]),
    ("sort=state", ["ResNet-50%", "bert_base", "no-metric", "bert-large"]),
    ("sort=progress", ["bert_base", "bert-large", "ResNet-50%", "no-metric"]),
    ("sort=best&order=asc", ["ResNet-50%", "bert-large", "bert_base", "no-metric"]),
    ("sort=best", ["bert_base", "bert-large", "ResNet-50%", "no-metric"]),
    ("name=BERT", ["bert-large", "bert_base"]),
    ("name=_", ["bert_base"]),          # LIKE's wildcards are taken literally
    ("name=50%25", ["ResNet-50%"]),
    ("name=bert&sort=best&order=asc", ["bert-large", "bert_base"]),
])
def test_the_list_sorts_and_searches_alike_on_the_page_and_the_api(
        app: Flask, client: FlaskClient, query: str, order: list[str]) -> None:
    ids = seed_names(app)
    expected = [ids[name] for name in order]
    html = page(client, f"/?{query}")
    if query.startswith("sort=name"):  # SQL sorts by code point: capitals first
        expected = [ids[n] for n in sorted(ids)]
    assert row_ids(html) == expected
    assert [e["id"] for e in api(client, f"?{query}")["experiments"]] == expected
    # The poll asks for the same order and filter.
    url = re.search(r'data-api="([^"]*)"', html)
    assert url and all(part in url.group(1).replace("&amp;", "&")
                       for part in query.replace("%25", "%").split("&") if part
                       and not part.startswith("order=desc") and part != "sort=id")


def test_headers_link_to_their_sort_and_flip_the_current_one(app: Flask,
                                                            client: FlaskClient) -> None:
    seed_names(app)
    html = page(client, "/?sort=name&order=asc&name=b")
    assert ('<th data-col="name" aria-sort="ascending"><a class="sort" '
            'href="/?name=b&amp;sort=name&amp;order=desc"') in html
    assert 'href="/?name=b&amp;sort=best&amp;order=desc" data-sort="best"' in html
    assert 'href="/?name=b" data-sort="id"' in html  # the default order: no parameters
    assert '<input type="hidden" name="sort" value="name">' in html


@pytest.mark.parametrize(("query", "message"), [
    ("sort=size", "sort: unknown column &#39;size&#39; (allowed: id, name, state, owner, "
                  "progress, start, end, best)"),
    ("order=up", "order: must be asc or desc (got &#39;up&#39;)"),
])
def test_a_bad_sort_is_a_400_page_and_a_400_answer(client: FlaskClient, query: str,
                                                   message: str) -> None:
    assert message in page(client, f"/?{query}", 400)
    response = client.get(f"/api/v1/experiments?{query}")
    assert response.status_code == 400 and response.json["error"]["code"] == "bad_request"


@pytest.mark.parametrize(("path", "status", "text"), [
    ("/experiments/abc", 404, "No experiment at /experiments/abc"),
    ("/experiments/99999999999999999999999", 404, "experiment ids are whole numbers"),
    ("/trials/99999999999999999999999", 404, "trial ids are whole numbers from 0 to"),
    ("/trials/-1", 404, "No trial at /trials/-1"),
    ("/nowhere/%3Cb%3E", 404, "There is no page at /nowhere/&lt;b&gt;."),
    ("/login", 405, "/login does not take DELETE requests."),
])
def test_browser_paths_answer_html_error_pages_with_the_status_kept(
        client: FlaskClient, path: str, status: int, text: str) -> None:
    method = "DELETE" if status == 405 else "GET"
    response = client.open(path, method=method)
    assert response.status_code == status and response.mimetype == "text/html"
    html = response.get_data(as_text=True)
    assert text in html and f'data-error-page="{status}"' in html
    assert '<nav aria-label="main">' in html and "<b>" not in html


def test_the_api_keeps_its_json_errors(client: FlaskClient) -> None:
    for path in ("/api/v1/experiments/abc", "/api/v1/experiments/99999999999999999999999",
                 "/api/v1/nope"):
        response = client.get(path)
        assert response.status_code == 404 and response.mimetype == "application/json"
        assert response.json["error"]["code"] == "not_found"


def test_a_page_past_the_end_says_so_and_links_to_the_last(app: Flask,
                                                           client: FlaskClient) -> None:
    seed_names(app)
    html = page(client, "/?page=99999&per_page=3&sort=name")
    assert "<span data-range>This page is past the end: 4 experiments in all.</span>" in html
    assert ('<a href="/?sort=name&amp;order=asc&amp;per_page=3&amp;page=2" '
            'data-page-link="last">Go to the last page (2)</a>') in html


@pytest.fixture
def named_client(settings: MasterSettings) -> Iterator[FlaskClient]:
    app = create_app(replace(settings, require_user=True, admins=("root",)))
    app.config["TESTING"] = True
    yield app.test_client()
    app.config["HPCDET_ENGINE"].dispose()


def test_only_rows_the_user_may_change_have_a_batch_checkbox(
        app: Flask, named_client: FlaskClient) -> None:
    with session_scope(sessions(app)) as session:
        mine = add(session, owner="alice")
        anyones = add(session, owner="anonymous")
    named_client.set_cookie("hpcdet_user", "alice")
    html = page(named_client, "/")
    assert f'data-pick="{mine}"' in html and f'data-pick="{anyones}"' in html
    assert '"actor": "alice", "admin": false' in html
    named_client.set_cookie("hpcdet_user", "bob")  # sees (and may change) anonymous's only
    html = page(named_client, "/")
    assert row_ids(html) == [anyones] and f'data-pick="{anyones}"' in html
    # In a workspace: its viewer sees the row without a checkbox, its editor with one.
    with session_scope(sessions(app)) as session:
        space = Workspace(name="team", created_by="alice")
        session.add(space)
        session.flush()
        session.add_all([WorkspaceMember(workspace_id=space.id, user="bob", role="viewer"),
                         WorkspaceMember(workspace_id=space.id, user="carol", role="editor")])
        shared = add(session, owner="alice")
        session.get_one(Experiment, shared).workspace_id = space.id
    html = page(named_client, "/")
    assert shared in row_ids(html) and f'data-pick="{shared}"' not in html
    named_client.set_cookie("hpcdet_user", "carol")
    html = page(named_client, "/")
    assert f'data-pick="{shared}"' in html and f'"workspaces": [{space.id}]' in html
