"""The chief's key-value store (hpcdet.core._kvstore) and the collectives over it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from hang_guard import HANG_GUARD_S

from hpcdet.core._collectives import StoreCollectives
from hpcdet.core._kvstore import SET, KeyValueClient, KeyValueServer, StoreError

SECRET = b"s" * 32


@pytest.fixture
def clients() -> Iterator[list[KeyValueClient]]:
    """The clients a test made, closed after it."""
    made: list[KeyValueClient] = []
    yield made
    for made_client in made:
        made_client.close()


@pytest.fixture
def server(clients: list[KeyValueClient]) -> Iterator[KeyValueServer]:
    store = KeyValueServer(0, secret=SECRET, wait_timeout_s=5)
    yield store
    store.close()


@pytest.fixture
def client(server: KeyValueServer,
           clients: list[KeyValueClient]) -> Callable[..., KeyValueClient]:
    def connect(secret: bytes = SECRET) -> KeyValueClient:
        clients.append(KeyValueClient("127.0.0.1", server.port, secret=secret, timeout_s=5))
        return clients[-1]
    return connect


def test_set_get_delete(client: Callable[..., KeyValueClient]) -> None:
    one, two = client(), client()
    one.set("k", b"\x00\xffpickled")
    assert two.get("k") == b"\x00\xffpickled"
    two.delete_key("k")
    one.set("other", b"")
    assert one.get("other") == b""


def test_get_waits_until_another_rank_sets_the_key(client: Callable[..., KeyValueClient]) -> None:
    reader, writer = client(), client()
    started = threading.Event()

    def read() -> bytes:
        started.set()
        return reader.get("late")

    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(read)
        started.wait(5)
        assert not future.done()
        writer.set("late", b"here")
        assert future.result(timeout=HANG_GUARD_S) == b"here"


def test_a_get_nobody_answers_times_out_with_a_message(
        clients: list[KeyValueClient]) -> None:
    store = KeyValueServer(0, wait_timeout_s=0.2)
    try:
        clients.append(KeyValueClient("127.0.0.1", store.port, timeout_s=5))
        with pytest.raises(StoreError, match="timed out waiting for key 'never'"):
            clients[-1].get("never")
    finally:
        store.close()


def test_a_client_without_the_trials_secret_is_refused(
        client: Callable[..., KeyValueClient]) -> None:
    client().set("k", b"v")
    with pytest.raises(StoreError, match="refused this rank: its secret differs"):
        client(secret=b"another user's guess")


def test_a_chief_that_never_opens_its_store_is_reported() -> None:
    store = KeyValueServer(0, wait_timeout_s=1)
    port = store.port
    store.close()  # nobody listens there now
    with pytest.raises(StoreError, match=f"cannot reach the chief's store at 127.0.0.1:{port}"):
        KeyValueClient("127.0.0.1", port, timeout_s=0.5)


def test_collectives_of_three_ranks_over_the_store() -> None:
    port = _free_port()

    def rank(number: int) -> tuple[object, ...]:
        ranks = StoreCollectives(rank=number, size=3, host="127.0.0.1", port=port,
                                 timeout_s=10, secret=SECRET)
        results = (ranks.allgather(number), ranks.broadcast(f"from {number}", src=1),
                   ranks.gather({"rank": number}, dst=2))
        ranks.barrier()
        ranks.close()
        return results

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(rank, range(3)))
    for number, (gathered, broadcast, gathered_at_2) in enumerate(results):
        assert gathered == [0, 1, 2]
        assert broadcast == "from 1"
        assert gathered_at_2 == ([{"rank": 0}, {"rank": 1}, {"rank": 2}] if number == 2
                                 else None)


def test_a_chief_that_ends_before_answering_the_last_acknowledgement_cuts_no_rank_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The race of a busy host, made certain: the chief has every acknowledgement, leaves
    # its last collective and exits before its store's thread answers rank 1's.
    apply = KeyValueServer._apply

    def apply_then_end(store: KeyValueServer, op: bytes, key: bytes,
                       value: bytes) -> tuple[bytes, bytes]:
        answer = apply(store, op, key, value)
        if op == SET and b"/ack/" in key:
            raise ConnectionError("the chief's process ended")  # before the answer goes out
        return answer

    monkeypatch.setattr(KeyValueServer, "_apply", apply_then_end)
    port = _free_port()

    def rank(number: int) -> list[object]:
        ranks = StoreCollectives(rank=number, size=2, host="127.0.0.1", port=port,
                                 timeout_s=HANG_GUARD_S, secret=SECRET)
        try:
            return ranks.allgather(number)
        finally:
            ranks.close()

    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(rank, range(2))) == [[0, 1], [0, 1]]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
