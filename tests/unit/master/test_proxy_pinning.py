"""A job cannot point the master's proxy anywhere but at its own node (issue 28, finding 3).

``service.json`` is the job's to write: each test is one way it could name another host
(another name, a name the job's owner controls, an address, the master's localhost, a
cloud's metadata address, a privileged or the master's own port), and each is refused. The
address is resolved once at registration and the proxy dials that address, never the name
again (:mod:`hpcdet.master.proxy.pinning`). The resolver is replaced by a table: what the
master's DNS would answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from test_master_proxy import upstream  # noqa: F401  (a fixture: an echoing HTTP service)

from hpcdet.dispatcher import JobPhase
from hpcdet.master.app import create_app
from hpcdet.master.db import make_session_factory, session_scope
from hpcdet.master.models import CommandTask
from hpcdet.master.proxy import registration
from hpcdet.master.proxy.asgi import create_asgi_app
from hpcdet.master.settings.core import MasterSettings

pytestmark = pytest.mark.interactive

ALICE = {"X-Hpcdet-User": "alice"}
MASTER_PORT = 8080
# What the scheduler reports (scontrol's NodeName, NodeHostName, NodeAddr).
NODES = {"node1": ("node1", "node1.cluster", "10.0.0.11"), "node2": ("node2", "10.0.0.12")}
# What the master's DNS answers.
DNS = {
    "node1": ["10.0.0.11"], "node1.cluster": ["10.0.0.11"], "node2": ["10.0.0.12"],
    "node1.evil.example": ["10.0.0.11"],  # the owner's domain: even at the node's address
    "db.internal": ["10.0.0.50"], "localhost": ["127.0.0.1", "::1"],
    "metadata.google.internal": ["169.254.169.254"],
}


def resolver(table: dict[str, list[str]]) -> Any:
    return lambda host: list(table.get(host, []))


def check(host: str, port: int = 8888, nodes: dict[str, tuple[str, ...]] | None = None,
          dns: dict[str, list[str]] | None = None) -> Any:
    """The registration's verdict on ``{"host": host, "port": port}``."""
    return registration.check_address(registration.ServiceAddress(host, port),
                                       NODES if nodes is None else nodes,
                                       frozenset({MASTER_PORT}),
                                       resolver(DNS if dns is None else dns))


def refused(host: str, port: int = 8888, **kwargs: Any) -> str:
    from hpcdet.master.proxy.pinning import Refused

    with pytest.raises(Refused) as why:
        check(host, port, **kwargs)
    return str(why.value)


# ---- the host must be one of the job's own nodes, named exactly ---------------------------


def test_the_nodes_own_names_and_addresses_are_pinned_to_their_address() -> None:
    for host in ("node1", "NODE1", "node1.cluster", "10.0.0.11", "::ffff:10.0.0.11"):
        pinned = check(host)
        assert (pinned.host, pinned.address, pinned.port) == (host, "10.0.0.11", 8888)
    assert check("node2").address == "10.0.0.12"


def test_another_hostname_is_refused() -> None:
    assert "none of its job's nodes" in refused("db.internal")
    assert not registration.host_allowed("db.internal", NODES)


def test_a_name_that_only_starts_like_a_node_is_refused() -> None:
    # Its first label is a node's and it even resolves to that node's address: the old rule
    # (first label) took it; a name the job's owner controls is never the node's.
    assert not registration.host_allowed("node1.evil.example", NODES)
    assert "none of its job's nodes" in refused("node1.evil.example")
    for near in ("node1x", "xnode1", "node1.", "node1.cluster.evil.example"):
        assert not registration.host_allowed(near, NODES), near


def test_an_ip_literal_that_is_no_nodes_is_refused() -> None:
    for address in ("10.0.0.50", "10.0.0.011", "0.0.0.0", "10.0.0.11.nip.io"):
        assert not registration.host_allowed(address, NODES), address
        refused(address)


def test_an_ipv6_literal_is_refused() -> None:
    for address in ("::1", "fe80::1", "2001:db8::11", "::ffff:127.0.0.1", "::"):
        assert not registration.host_allowed(address, NODES), address
        refused(address)


def test_a_nodes_name_that_resolves_to_the_masters_localhost_is_never_dialed() -> None:
    # The master's DNS (or its /etc/hosts) says 127.0.0.1: that would be the master's own
    # host. The scheduler's address for the node is pinned instead, where it has one...
    dns = {**DNS, "node1": ["127.0.0.1"], "node1.cluster": ["::1"]}
    assert check("node1", dns=dns).address == "10.0.0.11"
    assert check("node1.cluster", dns=dns).address == "10.0.0.11"
    # ...and where it reports none (PBS names moms only), the scheduler's own name for the
    # node is reached where it resolves, as the scheduler reaches it: a cluster on one host.
    nodes = {"node3": ("node3", "node3.cluster")}
    dns = {"node3": ["127.0.0.2"], "node3.cluster": ["127.0.1.1", "::1"]}
    assert check("node3", nodes=nodes, dns=dns).address == "127.0.0.2"
    assert check("node3.cluster", nodes=nodes, dns=dns).address == "127.0.1.1"
    assert not registration.host_allowed("localhost", NODES)
    refused("localhost")
    refused("127.0.0.1")


def test_a_link_local_address_is_refused() -> None:
    refused("169.254.169.254")
    refused("metadata.google.internal")
    dns = {"node3": ["169.254.169.254", "fe80::1"]}
    assert "link-local" in refused("node3", nodes={"node3": ("node3",)}, dns=dns)
    assert check("node2", dns={"node2": ["169.254.169.254"]}).address == "10.0.0.12"


def test_a_name_resolving_to_several_addresses_pins_the_nodes_own() -> None:
    dns = {**DNS, "node1": ["127.0.0.1", "10.0.0.11"]}
    assert check("node1", dns=dns).address == "10.0.0.11"
    assert check("node1", dns={}).address == "10.0.0.11"  # the scheduler's, unresolved
    assert "does not resolve" in refused("node3", nodes={"node3": ("node3",)}, dns={})


def test_a_dev_cluster_on_loopback_is_taken_because_the_scheduler_says_so() -> None:
    # scripts/dev-cluster: NodeHostName=vm NodeAddr=127.0.0.1 for every node.
    nodes = {"node1": ("node1", "vm", "127.0.0.1")}
    dns = {"vm": ["127.0.0.1"], "node1": []}
    assert check("vm", nodes=nodes, dns=dns).address == "127.0.0.1"
    assert check("127.0.0.1", nodes=nodes, dns=dns).address == "127.0.0.1"
    # A Debian host's own name resolves to 127.0.1.1: the scheduler's 127.0.0.1 is pinned.
    assert check("vm", nodes=nodes, dns={"vm": ["127.0.1.1"]}).address == "127.0.0.1"


@pytest.mark.parametrize("port", [1, 22, 80, 443, 1023, MASTER_PORT, 65536])
def test_a_port_no_job_may_own_or_the_masters_is_refused(port: int) -> None:
    refused("node1", port)


@pytest.mark.parametrize("port", [1024, 8888, 65535])
def test_unprivileged_ports_are_taken(port: int) -> None:
    assert check("node1", port).port == port


def test_the_master_protects_its_own_ports(settings: MasterSettings) -> None:
    from hpcdet.master.proxy.pinning import protected_ports

    rm = replace(settings.resource_manager, master_port=9443)
    assert protected_ports(replace(settings, port=8081, resource_manager=rm)) == {8081, 9443}


# ---- through the reconciler and the proxy --------------------------------------------------


@pytest.fixture
def pinned_app(settings: MasterSettings, fake: FakeSchedulerBackend,
               monkeypatch: pytest.MonkeyPatch) -> Iterator[Flask]:
    from hpcdet.master.proxy import pinning

    app = create_app(replace(settings, require_user=True), backend=fake)
    app.config["TESTING"] = True
    monkeypatch.setattr(fake, "node_hosts", lambda nodes: {"node1": ("node1", "vm", "127.0.0.1")})
    monkeypatch.setattr(pinning, "resolve", resolver({
        "vm": ["127.0.0.1"], "node1.evil.example": ["127.0.0.1"]}))
    yield app
    app.config["HPCDET_ENGINE"].dispose()


def _running_notebook(app: Flask, fake: FakeSchedulerBackend) -> dict[str, Any]:
    answer = app.test_client().post("/api/v1/notebooks", json={"config": {}}, headers=ALICE)
    assert answer.status_code == 201, answer.json
    task: dict[str, Any] = answer.json["task"]
    fake.phases[task["job_id"]] = JobPhase.RUNNING
    return task


def _cycle(app: Flask, fake: FakeSchedulerBackend) -> None:
    from hpcdet.master.composition import make_reconciler

    make_reconciler(app.config["HPCDET_SETTINGS"],
                    make_session_factory(app.config["HPCDET_ENGINE"]), fake).cycle()


def _service(app: Flask, task_id: int) -> tuple[Any, ...]:
    with session_scope(make_session_factory(app.config["HPCDET_ENGINE"])) as session:
        row = session.get(CommandTask, task_id)
        assert row is not None
        return (row.service_host, getattr(row, "service_address", "(no column)"),
                row.service_port)


@pytest.mark.parametrize("service", [
    '{"host": "node1.evil.example", "port": 8888}', '{"host": "10.0.0.5", "port": 8888}',
    '{"host": "::1", "port": 8888}', '{"host": "localhost", "port": 8888}',
    '{"host": "169.254.169.254", "port": 80}', '{"host": "vm", "port": 22}',
    '{"host": "vm", "port": 8080}'])
def test_the_reconciler_registers_no_address_but_the_nodes(
        pinned_app: Flask, fake: FakeSchedulerBackend, service: str) -> None:
    task = _running_notebook(pinned_app, fake)
    (Path(task["job_dir"]) / "service.json").write_text(service)
    _cycle(pinned_app, fake)
    assert _service(pinned_app, task["id"])[0::2] == (None, None)


def test_the_proxy_dials_the_address_pinned_at_registration(
        pinned_app: Flask, fake: FakeSchedulerBackend, upstream: int,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    from hpcdet.master.proxy import pinning

    task = _running_notebook(pinned_app, fake)
    (Path(task["job_dir"]) / "service.json").write_text(
        f'{{"host": "vm", "port": {upstream}}}')
    _cycle(pinned_app, fake)
    assert _service(pinned_app, task["id"]) == ("vm", "127.0.0.1", upstream)
    # The name now resolves elsewhere (DNS rebinding); the name is not even looked up again.
    monkeypatch.setattr(pinning, "resolve", resolver({"vm": ["10.9.9.9"]}))
    with session_scope(make_session_factory(pinned_app.config["HPCDET_ENGINE"])) as session:
        row = session.get(CommandTask, task["id"])
        assert row is not None
        row.service_host = "rebound.invalid"  # a name no resolver answers
    answer = _call(pinned_app, f"/proxy/{task['id']}/api/status")
    assert answer.status_code == 200, answer.text
    assert answer.json()["path"] == f"/proxy/{task['id']}/api/status"


def test_the_address_is_cleared_when_the_task_ends(
        pinned_app: Flask, fake: FakeSchedulerBackend) -> None:
    task = _running_notebook(pinned_app, fake)
    (Path(task["job_dir"]) / "service.json").write_text('{"host": "vm", "port": 8888}')
    _cycle(pinned_app, fake)
    assert _service(pinned_app, task["id"]) == ("vm", "127.0.0.1", 8888)
    fake.phases[task["job_id"]] = JobPhase.COMPLETED
    _cycle(pinned_app, fake)
    assert _service(pinned_app, task["id"]) == (None, None, None)


def _call(app: Flask, path: str) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_asgi_app(app, 2), client=("10.1.2.3", 5))
        async with httpx.AsyncClient(transport=transport, base_url="http://master") as client:
            return await client.get(path, headers=ALICE)

    return asyncio.run(go())
