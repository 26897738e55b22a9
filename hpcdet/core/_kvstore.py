"""A small key-value store over TCP, served by the chief, for the Core API's collectives.

:class:`~hpcdet.core._collectives.StoreCollectives` exchanges the ranks' objects through
it when the ranks share no ``torch.distributed`` process group, so a multi-rank trial that
never imports torch does not load it for its collectives (Determined uses ZMQ sockets for
the same purpose). The standard library only.

The store keeps bytes and never interprets them. Each connection starts with a challenge:
the server sends a random nonce, the client answers with its HMAC-SHA256 under the
trial's secret (derived from the master's token for the trial, which only the trial's user
can read), and the server answers ``0`` (welcome) or ``1`` (refused, and closes). So
another user on the node can neither read the trial's keys nor plant a value that a rank
would unpickle. Without a secret (an unmanaged run) the proof is the HMAC under an empty
key, which proves nothing.

Frames: a request is ``op`` (1 byte), the key and the value (each a 4-byte big-endian
length and the bytes); an answer is a status byte (``0`` ok, ``1`` error) and a value.
``g`` (get) waits until the key is set.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import struct
import threading
import time
from typing import Final

NONCE_BYTES: Final = 32
_LENGTH = struct.Struct(">I")
_MAX_FRAME = 1 << 31
OK, ERROR = b"\x00", b"\x01"
SET, GET, DELETE = b"s", b"g", b"d"
_CONNECT_RETRY_S = 0.2
HANDSHAKE_TIMEOUT_S = 30.0


class StoreError(RuntimeError):
    """The store could not be reached, refused this client, or timed out."""


class StoreGone(StoreError):
    """The chief's store closed this connection (the chief is ending, or has crashed)."""


def proof(secret: bytes, nonce: bytes) -> bytes:
    """The answer to a challenge: HMAC-SHA256 of the nonce under the secret."""
    return hmac.new(secret, nonce, hashlib.sha256).digest()


def _read_exact(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the store's peer closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_blob(sock: socket.socket) -> bytes:
    (size,) = _LENGTH.unpack(_read_exact(sock, _LENGTH.size))
    if size > _MAX_FRAME:
        raise ConnectionError(f"a frame of {size} bytes is over the store's limit")
    return _read_exact(sock, size)


def _blob(data: bytes) -> bytes:
    return _LENGTH.pack(len(data)) + data


class KeyValueServer:
    """The chief's store: a thread per client, values kept until deleted."""

    def __init__(self, port: int, *, secret: bytes = b"", wait_timeout_s: float) -> None:
        family = socket.AF_INET6 if socket.has_dualstack_ipv6() else socket.AF_INET
        self._listener = socket.create_server(("", port), family=family, reuse_port=False,
                                              dualstack_ipv6=family == socket.AF_INET6)
        self._secret = secret
        self._wait_timeout_s = wait_timeout_s
        self._values: dict[bytes, bytes] = {}
        self._changed = threading.Condition()
        self._closed = False
        threading.Thread(target=self._accept, name="hpcdet-store", daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def close(self) -> None:
        self._closed = True
        # shutdown first: a thread blocked in accept() keeps a closed socket listening.
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        with self._changed:
            self._changed.notify_all()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="hpcdet-store-client",
                             daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                # A peer that connects and says nothing does not hold its thread for ever.
                conn.settimeout(HANDSHAKE_TIMEOUT_S)
                nonce = os.urandom(NONCE_BYTES)
                conn.sendall(nonce)
                if not hmac.compare_digest(_read_exact(conn, 32), proof(self._secret, nonce)):
                    conn.sendall(ERROR)  # not one of the trial's ranks
                    return
                conn.sendall(OK)
                conn.settimeout(None)  # a rank may wait long between two collectives
                while not self._closed:
                    op = _read_exact(conn, 1)
                    key, value = _read_blob(conn), _read_blob(conn)
                    status, answer = self._apply(op, key, value)
                    conn.sendall(status + _blob(answer))
            except (ConnectionError, OSError):
                return

    def _apply(self, op: bytes, key: bytes, value: bytes) -> tuple[bytes, bytes]:
        with self._changed:
            if op == SET:
                self._values[key] = value
                self._changed.notify_all()
                return OK, b""
            if op == DELETE:
                self._values.pop(key, None)
                return OK, b""
            if op == GET:
                found = self._changed.wait_for(
                    lambda: key in self._values or self._closed, self._wait_timeout_s)
                if not found or key not in self._values:
                    return ERROR, f"timed out waiting for key {key.decode()!r}".encode()
                return OK, self._values[key]
        return ERROR, f"unknown operation {op!r}".encode()


class KeyValueClient:
    """One rank's connection to the chief's store; retries the connection until ``timeout_s``."""

    def __init__(self, host: str, port: int, *, secret: bytes = b"", timeout_s: float) -> None:
        self._sock = _connect(host, port, timeout_s)
        self._lock = threading.Lock()
        try:
            nonce = _read_exact(self._sock, NONCE_BYTES)
            self._sock.sendall(proof(secret, nonce))
            accepted = _read_exact(self._sock, 1) == OK
        except (ConnectionError, OSError) as exc:
            self._sock.close()
            raise StoreError(f"the chief's store at {host}:{port} did not answer: {exc}") from None
        if not accepted:
            self._sock.close()
            raise StoreError(f"the chief's store at {host}:{port} refused this rank: its "
                             "secret differs (do all ranks read the same job directory?)")

    def set(self, key: str, value: bytes) -> None:
        self._call(SET, key, value)

    def get(self, key: str) -> bytes:
        """The key's value, waiting (on the server) until a rank sets it."""
        return self._call(GET, key)

    def wait(self, keys: list[str]) -> None:
        for key in keys:
            self._call(GET, key)

    def delete_key(self, key: str) -> None:
        self._call(DELETE, key)

    def close(self) -> None:
        self._sock.close()

    def _call(self, op: bytes, key: str, value: bytes = b"") -> bytes:
        with self._lock:
            try:
                self._sock.sendall(op + _blob(key.encode()) + _blob(value))
                status = _read_exact(self._sock, 1)
                answer = _read_blob(self._sock)
            except (ConnectionError, OSError) as exc:
                raise StoreGone(f"the chief's store is gone: {exc}") from None
        if status != OK:
            raise StoreError(answer.decode(errors="replace"))
        return answer


def _connect(host: str, port: int, timeout_s: float) -> socket.socket:
    """Connect, retrying while the chief has not opened its store yet."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=max(1.0, timeout_s))
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise StoreError(f"cannot reach the chief's store at {host}:{port} within "
                                 f"{timeout_s:.0f} s: {exc}") from None
            time.sleep(_CONNECT_RETRY_S)
            continue
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
