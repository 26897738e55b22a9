"""The queue, cluster and nodes pages and the health banner in real headless Chromium.

- The queue filtered to "mine" with both priorities, on a seeded queue, and the whole queue
  (links, owners, reasons, times; fitting 1280/1440/390 px); the cluster page
  saying whose jobs use a pool's slots; the per-node page (desktop and phone).
- An action from the queue page (move a job ahead of another) changing Slurm's order, seen
  in ``squeue``: two tiny real jobs that wait (``--begin``), cancelled at the end. Run it
  under ``flock /tmp/hpcdet-cluster.lock``.
- A master whose ``SLURM_CONF`` names no file: the banner on the pages, ``det master info``
  and ``det experiment list`` warn.

Every page: no console errors or page errors, no horizontal overflow of the document, and
screenshots ``test-output/web/<page>-<desktop|phone>.png``.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from seed_queue import (
    add_trial_jobs,
    entry,
    node,
    set_node_state,
    store_cluster,
    wait_first_refresh,
)
from sqlalchemy.orm import Session

from hpcdet.master.models import Job
from hpcdet.master.queue.pools import Pool

SIZES = ("desktop", "phone")


@pytest.fixture
def web_master_settings(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """The conftest's resource manager, reading the cluster every ``param`` seconds
    (default an hour: the seeded snapshots stay)."""
    return {"resource_manager": {
        "master_host": "127.0.0.1", "cluster_name": "web", "slot_type": "cpu",
        "job_storage_root": str(tmp_path / "jobs"),
        "pool_refresh_seconds": getattr(request, "param", 3600)}}


class Tab:
    """A page that records console errors and uncaught exceptions."""

    def __init__(self, context: Any, base: str, user: str) -> None:
        context.add_cookies([{"name": "hpcdet_user", "value": user, "url": base}])
        self.base, self.page, self.errors = base, context.new_page(), []
        self.page.on("console", lambda msg: self.errors.append(f"console: {msg.text}")
                     if msg.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.errors.append(f"exception: {exc}"))

    def open(self, path: str) -> Tab:
        response = self.page.goto(self.base + path)
        assert response is not None and response.status == 200, path
        self.page.wait_for_load_state("networkidle")
        return self

    def check(self, shots: Path, name: str) -> None:
        """No errors, no horizontal overflow of the document; a screenshot."""
        overflow = self.page.evaluate(
            "document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name} is {overflow}px wider than the screen"
        assert self.errors == [], self.errors
        self.page.screenshot(path=str(shots / f"{name}.png"), full_page=True)

    def polled(self) -> None:
        """Until the page's poller has re-rendered its table from the API once."""
        self.page.wait_for_function(
            "document.querySelector('[data-poll-status]').textContent.trim() !== ''")

    def rows(self) -> list[str]:
        return list(self.page.eval_on_selector_all(
            "tbody tr[data-job-id]", "rows => rows.map(r => r.dataset.jobId)"))


def seed_queue(web_db: Callable[[], Session]) -> None:
    """ann's two waiting trial jobs (priorities 5 and 42), bob's (run as bob: owner mode;
    ann may not see his experiment), and a job from outside hpcdet
    running on node1 in batch; debug shares batch's nodes and has no job."""
    wait_first_refresh(web_db)
    with web_db() as session:
        ann = add_trial_jobs(session, name="ann-resnet", owner="ann", priority=5,
                             job_ids=["9001", "9002"])
        bob = add_trial_jobs(session, name="bob-bert", owner="bob", priority=42,
                             job_ids=["9003"])
        pools = [Pool("batch", "batch", nodes_up=2, nodes_total=2, slots_used=4,
                      slots_total=8, default_compute=True),
                 Pool("debug", "debug", nodes_up=2, nodes_total=2, slots_used=4, slots_total=8)]
        nodes = [node("node1", allocated=4, partitions=["batch", "debug"]),
                 node("node2", allocated=0, partitions=["batch", "debug"], state="idle")]
        store_cluster(session, pools, nodes, [
            entry("9000", priority=5000, name="outside-analysis", user="carol", running=True,
                  cpus=4, nodes=["node1"], times=(3723, 93784, None)),
            entry("9001", priority=4900, user="root", name="det-1-1-1", comment=ann[0],
                  reason="Resources", times=(0, 3600, "2026-11-30T14:50:38+00:00")),
            entry("9003", priority=4800, name="det-2-3-1", comment=bob[0], user="bob",
                  reason="QOSMaxGRESPerUser"),
            entry("9002", priority=4700, name="det-1-2-1", comment=ann[1],
                  reason="QOSMaxJobsPerUserLimit")])
        session.commit()


def test_queue_mine_with_priorities_cluster_and_nodes(web_master: Any, web_db: Any,
                                                      desktop: Any, phone: Any,
                                                      shots: Path) -> None:
    seed_queue(web_db)
    for size, context in zip(SIZES, (desktop, phone), strict=True):
        tab = Tab(context, web_master.url, "ann").open("/queue?mine=1")
        tab.polled()  # the rows below are the poller's, asked with the same filters
        assert tab.rows() == ["9001", "9002"]
        first = tab.page.locator('tr[data-job-id="9001"]')
        assert first.locator('[data-label="Priority"]').inner_text() == "5"
        assert first.locator('[data-label="Slurm priority"]').inner_text() == "4900"
        assert first.locator('[data-label="Type"]').inner_text() == "Trial"
        why = first.locator("td.why")
        assert "free resources" in why.inner_text() and why.is_visible()
        box = why.bounding_box()
        assert box is not None and box["x"] + box["width"] <= tab.page.viewport_size["width"]
        assert tab.page.locator("input[name=mine]").is_checked()
        tab.check(shots, f"queue-{size}")
        check_whole_queue(tab, size, shots)

        tab.open("/queue?q=outside")
        assert tab.rows() == ["9000"]
        assert tab.page.locator('tr[data-job-id="9000"] [data-label="Type"]').inner_text() \
            == "Outside hpcdet"
        tab.open("/queue?pool=debug")
        assert "by jobs of pools sharing its nodes (batch" in tab.page.inner_text(
            "[data-pool-sharing]")
        tab.check(shots, f"queue-pool-{size}")

        tab.open("/cluster")
        tab.polled()
        debug = tab.page.locator('tr[data-pool="debug"]')
        assert debug.locator("td").nth(5).inner_text() == "0"  # by its own jobs
        assert debug.locator("td").nth(6).inner_text() == "batch"
        tab.check(shots, f"cluster-{size}")

        tab.open("/cluster/nodes")
        node1 = tab.page.locator('tr[data-node="node1"]')
        assert "4/4" in node1.inner_text() and "9000" in node1.inner_text()
        assert "outside-analysis" in node1.inner_text()
        node2 = tab.page.locator('tr[data-node="node2"]')
        assert "—" in node2.locator("td.node-jobs").inner_text()
        assert node2.locator("[data-node-state]").inner_text() == "idle"
        tab.check(shots, f"nodes-{size}")
        if size == "phone":  # last: live, a new snapshot's state shows without a reload
            set_node_state(web_db, "node2", "down*")
            # the poll runs every pool_refresh_seconds (an hour here): ask it now
            tab.page.evaluate("document.dispatchEvent(new Event('hpcdet:changed'))")
            tab.page.wait_for_function(
                "document.querySelector('tr[data-node=node2] [data-node-state]')"
                ".textContent === 'down (not responding)'")
            assert "takes no jobs" in node2.inner_text()
            assert tab.errors == []
        tab.page.close()


def check_whole_queue(tab: Tab, size: str, shots: Path) -> None:
    """The whole queue as ann sees it, re-rendered by the poller: her rows link to their
    trials; bob's job (which ann may not see) is still a trial, of bob's, unlinked; the
    limit reasons say "your" and "bob's"; time used / limit and the expected start shown;
    no sideways scrolling of the table at 1280 and 1440 px, nor of a phone's page."""
    tab.open("/queue")
    tab.polled()

    def cell(job: str, label: str) -> str:
        return tab.page.locator(f'tr[data-job-id="{job}"] td[data-label="{label}"]').inner_text()

    link = tab.page.locator('tr[data-job-id="9001"] td[data-label="Name"] a')
    assert re.fullmatch(r"/trials/\d+", link.get_attribute("href") or ""), link
    assert cell("9001", "Time / limit") == "0:00 / 1:00:00"
    assert tab.page.locator('tr[data-job-id="9001"] td.start time').get_attribute(
        "datetime") == "2026-11-30T14:50:38Z"
    assert cell("9000", "Time / limit") == "1:02:03 / 1-02:03:04"
    assert cell("9000", "Expected start") == "\u2014"
    assert (cell("9003", "Type"), cell("9003", "User")) == ("Trial", "bob")
    assert tab.page.locator('tr[data-job-id="9003"] td[data-label="Name"] a').count() == 0
    assert "bob's QOS allows no more GPUs" in cell("9003", "Why waiting")
    assert "your QOS allows no more running jobs" in cell("9002", "Why waiting")
    for width in (1280, 1440) if size == "desktop" else (390,):
        tab.page.set_viewport_size({"width": width, "height": 844})
        spare = tab.page.evaluate("(() => { const box = document.querySelector("
                                  "'table.queue').closest('.scroll');"
                                  " return box.clientWidth - box.scrollWidth; })()")
        assert size == "phone" or spare >= 0, f"the table is {-spare}px too wide at {width}px"
        tab.check(shots, f"queue-all-{size}-{width}")


# ---- an action from the queue page, seen in squeue ---------------------------------------


def sbatch(env: dict[str, str], tmp_path: Path, name: str, comment: str) -> str:
    """A tiny job that waits an hour before it may start (so it stays in the queue)."""
    out = subprocess.run(
        ["sbatch", "--parsable", "-p", "batch", "-J", name, "--begin=now+1hour",
         f"--comment={comment}", f"--output={tmp_path}/{name}-%j.out", "--wrap", "true"],
        env=env, capture_output=True, text=True, check=True).stdout
    return out.strip().split(";")[0]


def squeue_order(env: dict[str, str], job_ids: list[str]) -> list[str]:
    out = subprocess.run(["squeue", "-h", "--sort=-p,i", "-j", ",".join(job_ids), "-o", "%i"],
                         env=env, capture_output=True, text=True, check=True).stdout
    return out.split()


@pytest.mark.parametrize("web_master_settings", [1], indirect=True)
def test_moving_a_job_ahead_from_the_queue_page_changes_slurms_order(
        web_master: Any, web_db: Any, desktop: Any, phone: Any, shots: Path,
        tmp_path: Path) -> None:
    env = web_master.env
    jobs: list[str] = []
    try:
        with web_db() as session:  # the trials first: the jobs' comments name them
            comments = add_trial_jobs(session, name="ann-order", owner="ann", priority=42,
                                      job_ids=["pending-a", "pending-b"])
            session.commit()
        jobs = [sbatch(env, tmp_path, f"web-order-{n}", c) for n, c in enumerate(comments)]
        with web_db() as session:
            for placeholder, job_id in zip(("pending-a", "pending-b"), jobs, strict=True):
                session.query(Job).filter(Job.job_id == placeholder).update({"job_id": job_id})
            session.commit()
        first, second = jobs
        assert squeue_order(env, jobs) == [first, second]  # the older first
        tab = Tab(desktop, web_master.url, "ann")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the master's queue snapshot has both
            tab.open("/queue?mine=1")
            if tab.rows() == [first, second]:
                break
            time.sleep(1)
        assert tab.rows() == [first, second]
        # Read in the same squeue: a job waiting for its --begin time expects to start then.
        assert tab.page.locator(f'tr[data-job-id="{first}"] td.start time').count() == 1
        tab.page.click(f'button[data-change="{second}"]')
        tab.page.select_option("select[name=ahead_of]", first)
        tab.page.click("form[data-job-update] button[type=submit]")
        tab.page.wait_for_function(
            "document.querySelector('[data-action-status]').textContent.includes('updated')")
        assert squeue_order(env, jobs) == [second, first]
        tab.page.wait_for_function(
            f"document.querySelector('tbody tr[data-job-id]').dataset.jobId === '{second}'")
        tab.check(shots, "queue-action-desktop")
        small = Tab(phone, web_master.url, "ann").open("/queue?mine=1")
        small.page.click(f'button[data-change="{first}"]')
        small.check(shots, "queue-action-phone")
    finally:
        if jobs:
            subprocess.run(["scancel", *jobs], env=env, check=False)


# ---- the health banner -------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def sick_master(slurm: dict[str, str], tmp_path: Path) -> Iterator[Any]:
    """det-master as conftest's web_master, but on a cluster whose controller is down: its
    SLURM_CONF is a copy of the dev cluster's naming a controller port nobody listens on.
    (Each Slurm command then fails after MessageTimeout's retries, 10 s; with a missing
    slurm.conf instead, squeue retried for 60 s.)"""
    from it_helpers import BIN, LiveMaster

    dead_conf = tmp_path / "controller-down-slurm.conf"
    conf = Path(slurm["SLURM_CONF"]).read_text()
    dead_conf.write_text(re.sub(r"(?m)^SlurmctldPort=.*$", f"SlurmctldPort={_free_port()}", conf))
    port = _free_port()
    config = {
        "port": port, "host": "127.0.0.1", "db": {"url": f"sqlite:///{tmp_path / 'm.sqlite'}"},
        "reconciler": {"interval_seconds": 1}, "webserver": {"workers": 1, "threads": 4},
        "resource_manager": {"master_host": "127.0.0.1", "cluster_name": "web-sick",
                             "job_storage_root": str(tmp_path / "jobs"), "slot_type": "cpu",
                             "pool_refresh_seconds": 1},
        "auth": {"mode": "open", "require_user": True, "admins": ["site-admin"]},
    }
    (tmp_path / "master.yaml").write_text(yaml.safe_dump(config))
    url = f"http://127.0.0.1:{port}"
    env = {**slurm, "SLURM_CONF": str(dead_conf), "DET_MASTER": url, "DET_USER": "tester"}
    live = LiveMaster(url=url, env=env, job_root=tmp_path / "jobs", log=tmp_path / "master.log",
                      argv=(str(BIN / "det-master"), "--config", str(tmp_path / "master.yaml")))
    try:
        live.start()
        yield live
    finally:
        # Its reconciler may be in a command's retries: a plain stop would wait for them.
        live.kill9()


def test_an_unreachable_scheduler_shows_a_banner_and_det_warns(
        sick_master: Any, desktop: Any, phone: Any, shots: Path) -> None:
    deadline = time.monotonic() + 240  # each Slurm command retries the controller for 10 s
    health: dict[str, Any] = {}
    while time.monotonic() < deadline:
        health = sick_master.api("/master/health")
        if health.get("status") == "degraded":
            break
        time.sleep(2)
    assert health.get("status") == "degraded", health
    assert any(p.startswith("scheduler unreachable since") for p in health["problems"])
    for size, context in zip(SIZES, (desktop, phone), strict=True):
        tab = Tab(context, sick_master.url, "ann")
        for path, name in (("/", "experiments-degraded"), ("/queue", "queue-degraded")):
            tab.open(path)
            banner = tab.page.locator("[data-health-banner]")
            assert banner.is_visible() and "scheduler unreachable since" in banner.inner_text()
            # A moment, not "since 3 min ago": the exact local time (data-exact-times).
            assert re.search(r"since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", banner.inner_text())
            tab.check(shots, f"{name}-{size}")
    info = sick_master.det("master", "info")
    assert info.returncode == 0, info.stderr
    assert "Health: degraded" in info.stdout and "scheduler unreachable since" in info.stdout
    assert "warning: the master reports itself degraded" in info.stderr
    listing = sick_master.det("experiment", "list")
    assert listing.returncode == 0, listing.stderr
    warnings = [line for line in listing.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "scheduler unreachable" in warnings[0]
    log = Path(sick_master.log).read_text()
    assert log.count("Traceback") == 1, "one traceback, then a line now and then"
    assert json.dumps(health)  # the API's answer is plain JSON
