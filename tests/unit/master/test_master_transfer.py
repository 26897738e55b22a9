"""Page weight (hpcdet/master/transfer): gzip, ETag/304 for polled reads, fingerprinted
static URLs with a year's cache lifetime, and every template's static reference through
``static_url``."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient
from master_helpers import create

from hpcdet.master.transfer import static_urls, wire

GZIP = {"Accept-Encoding": "gzip, deflate, br"}
TEMPLATES = Path(static_urls.__file__).parents[1] / "templates"


def test_a_page_is_gzipped_only_for_a_client_that_takes_it(client: FlaskClient) -> None:
    plain = client.get("/")
    packed = client.get("/", headers=GZIP)
    assert "Content-Encoding" not in plain.headers
    assert packed.headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in packed.headers["Vary"] and "Accept-Encoding" in plain.vary
    assert gzip.decompress(packed.get_data()) == plain.get_data()
    assert len(packed.get_data()) * 2 < len(plain.get_data())


def test_an_unchanged_poll_is_a_bodiless_304(client: FlaskClient) -> None:
    assert create(client).status_code == 201
    first = client.get("/api/v1/experiments", headers=GZIP)
    etag = first.headers["ETag"]
    assert etag.startswith('W/"') and first.headers["Cache-Control"] == "private, no-cache"
    again = client.get("/api/v1/experiments", headers={**GZIP, "If-None-Match": etag})
    assert again.status_code == 304 and again.get_data() == b""
    assert "Content-Encoding" not in again.headers
    assert create(client).status_code == 201  # a change: the whole list again
    changed = client.get("/api/v1/experiments", headers={**GZIP, "If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag


def test_a_streamed_answer_is_neither_compressed_nor_tagged(app: Flask) -> None:
    def lines() -> object:
        yield "x" * (wire.MIN_BYTES * 4)

    app.add_url_rule("/streamed", "streamed",
                     lambda: app.response_class(lines(), mimetype="text/plain"))
    answer = app.test_client().get("/streamed", headers=GZIP)
    assert answer.status_code == 200 and answer.is_streamed
    assert "Content-Encoding" not in answer.headers and "ETag" not in answer.headers


def test_a_fingerprinted_static_url_is_immutable_and_pregzipped(client: FlaskClient,
                                                                app: Flask) -> None:
    with app.test_request_context():
        url = static_urls.static_url("hpcdet.js")
        digest = static_urls.lookup("hpcdet.js").digest  # type: ignore[union-attr]
    assert url == f"/static/hpcdet.js?v={digest}"
    assert url in client.get("/").get_data(as_text=True)
    fresh = client.get(url, headers=GZIP)
    assert fresh.headers["Cache-Control"] == static_urls.IMMUTABLE
    assert fresh.headers["Content-Encoding"] == "gzip"
    with client.get("/static/hpcdet.js") as plain:  # a file answer: close it
        assert "immutable" not in plain.headers.get("Cache-Control", "")
        assert gzip.decompress(fresh.get_data()) == plain.get_data()
    again = client.get("/static/hpcdet.js", headers={"If-None-Match": plain.headers["ETag"]})
    assert again.status_code == 304 and again.get_data() == b""


def test_every_template_names_static_files_through_static_url() -> None:
    raw = re.compile(r"url_for\(\s*['\"]static['\"]|[\"'(]/static/")
    found = [path.name for path in TEMPLATES.rglob("*.html") if raw.search(path.read_text())]
    assert found == []
    used = {m for path in TEMPLATES.rglob("*.html")
            for m in re.findall(r"static_url\('([^']+)'\)", path.read_text())}
    assert used and all((TEMPLATES.parent / "static" / name).is_file() for name in used)
