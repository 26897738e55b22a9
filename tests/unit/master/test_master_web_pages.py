"""The web status pages (``/``, ``/cluster``, ``/queue``) and their static assets."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient
from queue_helpers import FakeJob, FakeSlurmQueue, add_experiment, trial_comment
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.db import session_scope
from hpcdet.master.queue.job_queue import read_queue_snapshot
from hpcdet.master.queue.pools import Pool
from hpcdet.master.queue.snapshots import POOLS, QUEUE, store_snapshot

PAGES = ("/", "/cluster", "/queue")
STATIC = {"/static/hpcdet.css": "text/css",
          **{f"/static/{name}.js": "text/javascript" for name in (
              "hpcdet", "poll", "chart", "experiments", "experiment", "trial")}}
# The SVG namespace is a name, not a place anything is loaded from.
EXTERNAL = re.compile(rb"https?://(?!www\.w3\.org/2000/svg\b)")
NASTY = "<b>x</b>&\"'"
POOL_SNAPSHOT = {"pools": [
    Pool("batch", "batch", slot_type="cpu", nodes_up=3, nodes_total=3, slots_used=5,
         slots_total=12, jobs_pending=2, default_compute=True, default_aux=True).to_json(),
    Pool("gpus", "batch", slot_type="cuda", nodes_up=1, nodes_total=2, slots_used=1,
         slots_total=4, gpu_types=("a100", "h100"), is_custom=True).to_json()]}


def sessions(app: Flask) -> sessionmaker[Session]:
    factory: sessionmaker[Session] = app.config["HPCDET_SESSION_FACTORY"]
    return factory


def store_pools(app: Flask) -> None:
    with session_scope(sessions(app)) as session:
        store_snapshot(session, POOLS, POOL_SNAPSHOT)


def store_queue(app: Flask, *jobs: FakeJob) -> None:
    """What the reconciler's refresher stores, read from a scripted squeue."""
    backend = SlurmBackend(runner=FakeSlurmQueue(jobs))
    data = read_queue_snapshot(backend, app.config["HPCDET_SETTINGS"])
    with session_scope(sessions(app)) as session:
        store_snapshot(session, QUEUE, data)


def table_rows(html: str) -> list[str]:
    """The body rows of the page's table, line breaks between cells and the phone layout's
    cell labels removed."""
    flat = re.sub(r' data-label="[^"]*"', "", html.replace("\n", ""))
    return re.findall(r"<tr(?: data-[a-z-]+=\"[^\"]*\")?><td>(.*?)</tr>", flat)


def page(client: FlaskClient, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.data
    assert response.mimetype == "text/html"
    return response.get_data(as_text=True)


@pytest.mark.parametrize("url", PAGES)
def test_every_page_has_the_layout_and_no_external_url(client: FlaskClient, url: str) -> None:
    html = page(client, url)
    assert '<meta name="viewport"' in html
    assert all(f'href="{link}"' in html for link in PAGES)
    assert re.search(r'<link rel="stylesheet" href="/static/hpcdet\.css\?v=[0-9a-f]{12}">', html)
    assert re.search(r'<script src="/static/hpcdet\.js\?v=[0-9a-f]{12}" defer></script>', html)
    assert not EXTERNAL.search(html.encode())


@pytest.mark.parametrize(("url", "mimetype"), sorted(STATIC.items()))
def test_static_assets_are_served_with_their_type_and_load_nothing_external(
        client: FlaskClient, url: str, mimetype: str) -> None:
    response = client.get(url)
    assert response.status_code == 200 and response.mimetype == mimetype
    assert response.data and not EXTERNAL.search(response.data)
    response.close()


def test_experiments_page_lists_experiments_with_state_in_words(app: Flask,
                                                                client: FlaskClient) -> None:
    with session_scope(sessions(app)) as session:
        add_experiment(session, name=NASTY, owner="ann")
    html = page(client, "/")
    assert '<span class="state state-ACTIVE" title="ACTIVE">Active</span>' in html
    assert "&lt;b&gt;x&lt;/b&gt;&amp;" in html and NASTY not in html
    assert 'aria-current="page">Experiments' in html


def test_cluster_before_the_first_refresh_says_slurm_was_not_read(client: FlaskClient) -> None:
    html = page(client, "/cluster")
    assert "not read from Slurm yet" in html
    assert "No pools yet" in html
    assert 'data-poll="/api/v1/resource-pools"' in html and 'data-every="15"' in html


def test_cluster_shows_each_pools_counts_gpu_types_and_defaults(app: Flask,
                                                                client: FlaskClient) -> None:
    store_pools(app)
    html = page(client, "/cluster")
    assert "not read from Slurm yet" not in html and " UTC</time></span>" in html
    rows = table_rows(html)
    batch = next(row for row in rows if ">batch</a>" in row)
    gpus = next(row for row in rows if ">gpus</a>" in row)
    assert "<td>3/3</td><td>5/12</td>" in batch and "<td>2</td>" in batch
    assert "compute, aux" in batch and 'href="/queue?pool=batch"' in batch
    assert "<td>cuda</td><td>1/2</td><td>1/4</td>" in gpus and "<td>a100, h100</td>" in gpus


def test_queue_before_the_first_refresh_is_empty(client: FlaskClient) -> None:
    html = page(client, "/queue")
    assert "not read from Slurm yet" in html and "No jobs in the queue." in html
    assert 'data-poll="/api/v1/jobs?arrays=grouped"' in html  # a job array polls as one row


def test_queue_shows_the_merged_rows_with_the_reason_in_words(app: Flask,
                                                              client: FlaskClient) -> None:
    with session_scope(sessions(app)) as session:
        add_experiment(session, name=NASTY, owner="ann", resources={"priority": 5},
                       jobs=[("101", 1)])
        comment = trial_comment(session, "101")
    store_queue(app, FakeJob("101", 900, comment=comment, reason="Resources"),
                FakeJob("102", 950, state="RUNNING", reason="None", gpus=2, name="other"))
    html = page(client, "/queue")
    rows = table_rows(html)
    assert [re.match(r"\d+", row).group() for row in rows] == ["1", "2"]  # type: ignore[union-attr]
    assert '<td>102</td><td title="EXTERNAL">Outside hpcdet</td><td>other</td>' in rows[0]
    assert '<span class="state state-SCHEDULED" title="SCHEDULED">Running</span>' in rows[0]
    assert "<td>2/2 gpu</td>" in rows[0]
    assert "&lt;b&gt;x&lt;/b&gt;" in rows[1] and NASTY not in html
    assert ("<td>0/1 cpu</td><td>5</td><td>900</td><td>batch / normal</td><td>ann</td>"
            in rows[1])
    assert re.search(r'<td><a href="/trials/\d+">&lt;b&gt;x', rows[1])  # the row links
    assert "waiting for free resources (Resources)" in rows[1]
    assert '<script type="application/json" id="reason-words">' in html


def test_queue_of_one_pool_and_of_an_unknown_pool(app: Flask, client: FlaskClient) -> None:
    store_pools(app)
    store_queue(app, FakeJob("201", 10, partition="debug", name="elsewhere"),
                FakeJob("202", 20, partition="batch", name="here"))
    html = page(client, "/queue?pool=batch")
    assert ">here<" in html and ">elsewhere<" not in html
    assert 'data-poll="/api/v1/jobs?resource_pool=batch&amp;arrays=grouped"' in html
    unknown = page(client, "/queue?pool=%3Cnosuch%3E", status=400)
    assert "unknown resource pool &#39;&lt;nosuch&gt;&#39; (known: batch, gpus)" in unknown
    assert "data-poll=" not in unknown
