"""A fuzz over every page route and its query parameters (hypothesis, Flask test client).

The routes come from the app's URL map (every GET route of the ``web`` blueprint), the
query parameter names from the page modules' source (every ``args.get("...")``) plus
made-up ones; the values are very long, negative, huge, unicode, HTML and NUL. No answer
may be a 5xx, and an HTML value must never come back unescaped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_web_experiments import add, sessions

from hpcdet.master import web
from hpcdet.master.db import session_scope
from hpcdet.master.models import Trial

MARKER = "<script>fuzz()</script>"
NASTY = [MARKER, "\x00", "a\x00b", "'\"><img src=x onerror=fuzz()>", "-1", "0", "1",
         "99999999999999999999999", "9223372036854775808", "-9223372036854775809", "1e309",
         "NaN", "inf", "☃", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "\u202e", "ACTIVE", "true", "", " ", "%", "../..",
         "x" * 10_000]
WEB_SOURCE = Path(web.__file__).parent
EXTRA_SOURCES = [Path(web.__file__).parents[1] / "experiments" / "experiment_list.py"]


def query_names() -> list[str]:
    """Every query parameter a page reads (``args.get("x")``, ``values.get("x")``)."""
    names: set[str] = set()
    for path in [*WEB_SOURCE.glob("*.py"), *EXTRA_SOURCES]:
        names.update(re.findall(r'(?:args|values)\.get\("([A-Za-z_]+)"', path.read_text()))
    return sorted(names)


values = st.one_of(
    st.sampled_from(NASTY),
    st.text(max_size=40),
    st.integers(min_value=-10**30, max_value=10**30).map(str),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=200, max_size=3000),
    st.builds(lambda a, b: a + MARKER + b, st.text(max_size=5), st.text(max_size=5)))


@pytest.fixture
def seeded(app: Flask) -> Iterator[Flask]:
    """Two experiments (one with trials) so that small ids reach real pages."""
    add_seeded(app)
    yield app


def add_seeded(app: Flask) -> None:
    with session_scope(sessions(app)) as session:
        add(session, name=MARKER, labels=[MARKER], values=[0.5, None])
        add(session, name="plain", state="COMPLETED")
        session.add(Trial(experiment_id=1, state="COMPLETED", hparams={"x": MARKER}, seed=1,
                          token="t"))


def page_rules(app: Flask) -> list[Any]:
    """Every GET page route (the ``web`` blueprint's), from the URL map."""
    rules = [r for r in app.url_map.iter_rules()
             if r.endpoint.startswith("web.") and "GET" in (r.methods or ())]
    assert len(rules) >= 8, rules  # /, experiments, trials, models, model, cluster, queue...
    return rules


def build_path(rule: Any, parts: list[str]) -> str:
    """The rule's path with each ``<converter:name>`` replaced by a (quoted) value."""
    pieces = iter(parts)
    return re.sub(r"<[^>]+>", lambda _: quote(next(pieces), safe="") or "x", rule.rule)


def check(client: FlaskClient, path: str, query: dict[str, str]) -> None:
    response = client.get(path, query_string=query)
    body = response.get_data(as_text=True)
    assert response.status_code < 500, (path, query, body[:500])
    assert MARKER not in body and "<img src=x onerror" not in body, (path, query)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_no_page_route_or_query_value_gives_a_500_or_unescaped_html(seeded: Flask) -> None:
    rules = page_rules(seeded)
    names = query_names()
    assert {"page", "per_page", "sort", "name", "rank", "stream", "pool"} <= set(names)
    client = seeded.test_client()
    client.set_cookie("hpcdet_user", "alice")
    path_values = st.one_of(values, st.integers(min_value=0, max_value=3).map(str))

    @settings(max_examples=1500, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(rule=st.sampled_from(rules), parts=st.lists(path_values, min_size=3, max_size=3),
           query=st.dictionaries(st.one_of(st.sampled_from(names), st.text(max_size=10)),
                                 values, max_size=4))
    def fuzz(rule: Any, parts: list[str], query: dict[str, str]) -> None:
        check(client, build_path(rule, parts), query)

    fuzz()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_every_page_route_answers_each_nasty_value_in_every_parameter(seeded: Flask) -> None:
    """The fixed list, exhaustively: each value in each path part and each query name."""
    client = seeded.test_client()
    client.set_cookie("hpcdet_user", "alice")
    for rule in page_rules(seeded):
        for value in NASTY:
            check(client, build_path(rule, [value] * 3), {})
            for name in query_names():
                check(client, build_path(rule, ["1"] * 3), {name: value})
