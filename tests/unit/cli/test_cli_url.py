"""hpcdet.client_url gives what urllib.parse gives (which the client used before): the same
escaped paths and queries, the same scheme, host, port, path and query of a URL, and the
same ValueError for a bad port or IPv6 address, on plain URLs (its own fast path) and on
everything else (handed to urllib.parse).
"""

from __future__ import annotations

import urllib.parse

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hpcdet.client_url import PATH_SAFE, quote_path, split_url, urlencode

# Plain characters and the ones that make a URL not plain: escapes, marks urlsplit splits
# at or removes, IPv6 brackets, userinfo, spaces and non-ASCII (digits among them).
_ALPHABET = st.sampled_from(list("aZ09.-_~/:@!$&'()*+,;=%?#[] \t\r\néÄ٣²ǅ"))
_TEXT = st.text(_ALPHABET, max_size=24)
_PORT = st.one_of(st.just(""), st.integers(0, 70000).map(str), _TEXT)
_HOST = st.one_of(st.sampled_from(["localhost", "Master.Example.ORG", "127.0.0.1", "m",
                                   "[::1]", "[fe80::1%eth0]", "[nope]", "u:p@h", ""]), _TEXT)


def _urlsplit(url: str) -> tuple[str, str, int | None, str, str] | str:
    try:
        parts = urllib.parse.urlsplit(url)
        return parts.scheme, parts.hostname or "", parts.port, parts.path, parts.query
    except ValueError as exc:
        return f"ValueError: {exc}"


def _split_url(url: str) -> tuple[str, str, int | None, str, str] | str:
    try:
        return split_url(url)
    except ValueError as exc:
        return f"ValueError: {exc}"


@settings(max_examples=400, deadline=None)
@given(_TEXT)
@example("/api/v1/experiments/7")
@example("/templates/my template")
@example("/a%2Fb/~x")
@example("/é/ǅ?#")
def test_quote_path_is_urllibs(path: str) -> None:
    assert quote_path(path) == urllib.parse.quote(path, safe=PATH_SAFE)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_TEXT, _TEXT), max_size=4))
@example([("limit", "100"), ("owner", "alice")])
@example([("name", "a b&c=d"), ("label", "é%")])
def test_urlencode_is_urllibs(pairs: list[tuple[str, str]]) -> None:
    assert urlencode(pairs) == urllib.parse.urlencode(pairs)


@settings(max_examples=1000, deadline=None)
@given(st.sampled_from(["http", "https", "HTTP", "ftp", ""]), _HOST, _PORT, _TEXT, _TEXT)
def test_split_url_is_urlsplits(scheme: str, host: str, port: str, path: str,
                                query: str) -> None:
    url = f"{scheme}://{host}" + (f":{port}" if port else "") + f"/{path}?{query}"
    assert _split_url(url) == _urlsplit(url)


@pytest.mark.parametrize("url", [
    "http://localhost:8080/api/v1/experiments?limit=100&offset=0",
    "https://Master.Example.org/api/v1/x", "http://127.0.0.1:0080/", "http://m:65535",
    "http://m:65536/", "http://m:8o80/", "http://m:/x", "http://[::1]:8080/a?b=c",
    "http://[::1/", "http://u:p@m:1/x", "http://m/a#b", "http://m/a\tb", "http://m?x/y",
    "http://m:80?x/y", "http://m:٣/", "http://é.example/", "http:///x", "http://",
])
def test_split_url_examples(url: str) -> None:
    assert _split_url(url) == _urlsplit(url)
