"""URL escaping and splitting for :mod:`hpcdet.client_http`, as ``urllib.parse`` does them,
without importing it for the URLs ``det`` sends nearly always.

Importing ``urllib.parse`` costs a ``det`` command ~1.5 ms (it loads ``ipaddress`` too).
The master's URLs are mostly plain: a host name or IPv4 address, a port, a path and a
query of letters, digits and a few marks. For those, each function below gives exactly
what ``urllib.parse`` gives, by the rules ``urllib.parse`` itself follows (``quote`` leaves
a string of safe characters as it is; ``urlsplit`` of such a URL is its partition at
``://``, ``/``, ``:`` and ``?``); anything else is handed to ``urllib.parse``.
``tests/unit/cli/test_cli_url.py`` checks the two agree on generated URLs.
"""

from __future__ import annotations

from collections.abc import Iterable

# What urllib.parse.quote never escapes (its _ALWAYS_SAFE), and what a path may hold as it
# is (RFC 3986 pchar, "/" and "%" of escapes already made).
_ALWAYS_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")
PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_PLAIN_PATH = _ALWAYS_SAFE | frozenset(PATH_SAFE)
_PLAIN_HOST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-")
# What urlsplit removes or splits at, so that a URL holding one is not plain.
_NOT_PLAIN_IN_URL = ("\t", "\r", "\n", "#")


def quote_path(path: str) -> str:
    """``urllib.parse.quote(path, safe=PATH_SAFE)``."""
    if _PLAIN_PATH.issuperset(path):
        return path
    from urllib.parse import quote

    return quote(path, safe=PATH_SAFE)


def urlencode(pairs: Iterable[tuple[str, str]]) -> str:
    """``urllib.parse.urlencode(pairs)`` for text keys and values."""
    return "&".join(f"{_quote_plus(str(key))}={_quote_plus(str(value))}" for key, value in pairs)


def _quote_plus(text: str) -> str:
    if _ALWAYS_SAFE.issuperset(text):
        return text
    from urllib.parse import quote_plus

    return quote_plus(text)


def split_url(url: str) -> tuple[str, str, int | None, str, str]:
    """``(scheme, hostname or "", port, path, query)`` of ``url``, as
    ``urllib.parse.urlsplit`` gives them (and its ValueErrors for a bad port or IPv6
    address)."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, tail = rest.partition("/")
    host, colon, port = netloc.partition(":")
    plain = (sep and scheme in ("http", "https") and host and _PLAIN_HOST.issuperset(host)
             and (not colon or (port.isdigit() and port.isascii() and int(port) <= 65535))
             and not any(mark in url for mark in _NOT_PLAIN_IN_URL))
    if plain:
        path, _, query = (slash + tail).partition("?")
        return scheme, host.lower(), int(port) if colon else None, path, query
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme, parts.hostname or "", parts.port, parts.path, parts.query
