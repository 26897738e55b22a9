"""The SDK's connection to the master: ``det``'s client and login, errors translated."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from hpcdet.errors import MasterError
from hpcdet.experimental.errors import translate

if TYPE_CHECKING:
    import httpx

    from hpcdet.client import MasterClient
    from hpcdet.client_http import Response


class Session:
    """Calls ``/api/v1`` as ``det`` does (same token cache, ``DET_USER_TOKEN``, TLS) and
    raises :mod:`hpcdet.experimental.errors` exceptions instead of ``MasterError``."""

    def __init__(self, master: str, *, user: str | None = None, cert_file: str | None = None,
                 transport: httpx.BaseTransport | None = None, encode: Any = None) -> None:
        from hpcdet.cli import session

        try:
            self.client: MasterClient = session.open_client(
                master, user=user, transport=transport, encode=encode, cert_file=cert_file)
        except MasterError as exc:
            raise translate(exc) from None
        self.url = self.client.url

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET ``path``; the decoded JSON answer."""
        return self._call("get", path, params)

    def post(self, path: str, body: Any = None) -> Any:
        """POST ``body``; the decoded JSON answer."""
        return self._call("post", path, body)

    def patch(self, path: str, body: Any = None) -> Any:
        """PATCH ``body``; the decoded JSON answer."""
        return self._call("patch", path, body)

    def delete(self, path: str, body: Any = None) -> Any:
        """DELETE (with ``body``); the decoded JSON answer."""
        return self._call("delete", path, body)

    @contextlib.contextmanager
    def stream(self, path: str) -> Iterator[Response]:
        """GET ``path`` without reading the body."""
        try:
            with self.client.stream(path) as response:
                yield response
        except MasterError as exc:
            raise translate(exc) from None

    def _call(self, method: str, path: str, arg: Any) -> Any:
        try:
            return getattr(self.client, method)(path, arg)
        except MasterError as exc:
            # ``from None``: the caller sees the master's message, not the HTTP layer's.
            raise translate(exc) from None

    def close(self) -> None:
        """Close the connection."""
        self.client.close()
