"""A small HTTP client for the master's REST API, shared by the CLI and the harness.

It imports neither Flask, SQLAlchemy nor an HTTP package (sockets and a small HTTP/1.1
layer, see :mod:`hpcdet.client_http`): the CLI runs on login nodes, where every
millisecond of ``det``'s start shows, and the harness on compute nodes, where only this
package's light dependencies are installed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from hpcdet import __version__
from hpcdet.client_http import (
    BodyReadError,
    HttpxTransport,
    Response,
    StdlibTransport,
    Transport,
    build_url,
    json_body,
)
from hpcdet.client_tls import cert_file_from_env, is_verify_failure, verify_failure, verify_setting
from hpcdet.errors import MasterError

if TYPE_CHECKING:
    import httpx

DEFAULT_MASTER = "http://localhost:8080"
# 401 codes after which a fresh login may help (see ``MasterClient(relogin=...)``).
RELOGIN_CODES = frozenset({"login_required", "token_expired", "token_revoked", "unauthorized"})
# The master's own health on the answers whose states may be stale when it is degraded
# (``degraded; scheduler unreachable since ...``); see hpcdet.master.scheduling.health.
HEALTH_HEADER = "X-Hpcdet-Health"


def normalize_master_url(url: str) -> str:
    """Accept ``host:port`` or an ``http://``/``https://`` URL; return it without a trailing /."""
    url = url.strip()
    if "://" not in url:
        url = "http://" + url
    scheme = url.split("://", 1)[0].lower()
    if scheme not in ("http", "https"):
        raise MasterError(f"master address {url}: the scheme must be http or https")
    return scheme + url[len(scheme):].rstrip("/")


def master_url_from_env(explicit: str | None = None) -> str:
    """The master address from ``explicit``, else ``$DET_MASTER``, else the default."""
    return normalize_master_url(explicit or os.environ.get("DET_MASTER") or DEFAULT_MASTER)


class MasterClient:
    """Calls ``/api/v1`` on one master and turns error answers into :class:`MasterError`.

    An ``https://`` master's certificate is verified against ``cert_file`` (default
    ``$DET_MASTER_CERT_FILE``; ``noverify`` skips the check) and the system's CAs.
    ``transport`` (tests) answers the requests instead of the network: an httpx transport
    such as ``httpx.MockTransport`` or ``httpx.WSGITransport``.
    """

    def __init__(
        self,
        url: str,
        *,
        user: str | None = None,
        token: str | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        relogin: Callable[[MasterError], str | None] | None = None,
        cert_file: str | None = None,
        on_degraded: Callable[[str], None] | None = None,
    ) -> None:
        """``on_degraded`` is called with the master's health header (once per client)
        when an answer says the master is degraded. ``relogin`` is called once on a 401
        that a new session token may cure; the request is repeated with the token it
        returns (None: the error stands)."""
        self.url = normalize_master_url(url)
        self._relogin = relogin
        self._on_degraded = on_degraded
        self.cert_file = cert_file or cert_file_from_env()
        verify = verify_setting(self.cert_file) if self.url.startswith("https:") else True
        self._headers = {"Accept": "application/json", "User-Agent": f"hpcdet/{__version__}"}
        if user:
            self._headers["X-Hpcdet-User"] = user
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._http: Transport = (StdlibTransport(timeout=timeout, verify=verify)
                                 if transport is None else HttpxTransport(transport))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MasterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET ``path`` (relative to ``/api/v1``) and return the decoded JSON body."""
        return self._request("GET", path, params=params)

    def post(self, path: str, body: Any = None) -> Any:
        """POST ``body`` as JSON to ``path`` and return the decoded JSON body."""
        return self._request("POST", path, body=body)

    def put(self, path: str, body: Any = None) -> Any:
        """PUT ``body`` as JSON to ``path`` and return the decoded JSON body."""
        return self._request("PUT", path, body=body)

    def patch(self, path: str, body: Any = None) -> Any:
        """PATCH ``body`` as JSON to ``path`` and return the decoded JSON body."""
        return self._request("PATCH", path, body=body)

    def delete(self, path: str, body: Any = None) -> Any:
        """DELETE ``path`` (with ``body`` as JSON, if any); the decoded JSON body or None."""
        return self._request("DELETE", path, body=body)

    def status_of(self, path: str) -> int:
        """The HTTP status of ``GET path``, a path on the master outside ``/api/v1`` (a
        proxied service's, ``/proxy/<task id>/...``), sent with this client's identity."""
        response = self._send("GET", self.url + path)
        return response.status_code

    def set_token(self, token: str) -> None:
        """Send ``token`` as ``Authorization: Bearer`` from now on."""
        self._headers["Authorization"] = f"Bearer {token}"

    @contextlib.contextmanager
    def stream(self, path: str, params: dict[str, Any] | None = None) -> Iterator[Response]:
        """GET ``path`` without reading the body (for large downloads: ``iter_bytes()``)."""
        for attempt in (1, 2):
            response = self._send("GET", path, params=params, stream=True)
            try:
                if response.status_code >= 400:
                    error = _error_from_response(response)
                    if attempt == 1 and self._renewed(error):
                        continue
                    raise error
                yield response
                return
            except BodyReadError as exc:  # the connection broke while the body was read
                raise self._unreachable(exc) from exc
            finally:
                response.close()

    def _unreachable(self, exc: BaseException) -> MasterError:
        if is_verify_failure(exc):
            return verify_failure(self.url, exc, self.cert_file)
        return MasterError(f"cannot reach the master at {self.url}: {exc}")

    def _request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                 body: Any = None) -> Any:
        response = self._send(method, path, params=params, body=body)
        if response.status_code >= 400:
            error = _error_from_response(response)
            if not self._renewed(error):
                raise error
            response = self._send(method, path, params=params, body=body)
            if response.status_code >= 400:
                raise _error_from_response(response)
        self._check_health(response)
        if not response.content:
            return None
        return response.json()

    def _check_health(self, response: Response) -> None:
        """Tell ``on_degraded`` (once) what a degraded master's answer said of its health."""
        health = response.headers.get(HEALTH_HEADER)
        if self._on_degraded is not None and health and health.startswith("degraded"):
            report, self._on_degraded = self._on_degraded, None
            report(health)

    def _send(self, method: str, path: str, *, params: dict[str, Any] | None = None,
              body: Any = None, stream: bool = False) -> Response:
        """One request to ``/api/v1`` + ``path`` (or to the whole URL ``path``)."""
        headers = dict(self._headers)
        content = None
        if body is not None:
            content = json_body(body)
            headers["Content-Type"] = "application/json"
        url = build_url(self.url + "/api/v1", path, params)
        try:
            return self._http.send(method, url, headers, content, stream=stream)
        except OSError as exc:
            raise self._unreachable(exc) from exc

    def _renewed(self, error: MasterError) -> bool:
        """After a 401 a login may cure, log in (once) and keep the new token."""
        if self._relogin is None or error.status != 401 or error.code not in RELOGIN_CODES:
            return False
        relogin, self._relogin = self._relogin, None
        token = relogin(error)
        if not token:
            return False
        self.set_token(token)
        return True


def _error_from_response(response: Response) -> MasterError:
    """Build a MasterError from the common error shape (or whatever came back)."""
    try:
        body = response.json()
        error = body["error"]
        message = str(error["message"])
        details = [str(d) for d in error.get("details") or []]
        if details:
            message += "\n  " + "\n  ".join(details)
        return MasterError(message, status=response.status_code, code=str(error["code"]))
    except (ValueError, KeyError, TypeError):
        text = response.text.strip().splitlines()[0] if response.text.strip() else ""
        message = f"master answered {response.status_code} {response.reason_phrase}"
        return MasterError(f"{message}: {text}" if text else message, status=response.status_code)


# ``GET /experiments/<id>/trials`` answers at most this many trials a page (its maximum).
TRIAL_PAGE_SIZE = 1000


def experiment_trials(client: MasterClient, experiment_id: int, *,
                      page_size: int = TRIAL_PAGE_SIZE) -> list[dict[str, Any]]:
    """Every trial of the experiment in id order, read page by page (the master pages them).

    Id order keeps the pages stable while the searcher adds trials: new ones come last.
    """
    trials: list[dict[str, Any]] = []
    while True:
        answer = client.get(f"/experiments/{experiment_id}/trials",
                            params={"offset": len(trials), "limit": page_size,
                                    "sortBy": "id"})
        page = answer.get("trials") or []
        trials += page
        total = (answer.get("pagination") or {}).get("total", len(trials))
        if not page or len(trials) >= total:
            return trials


def first_trial_id(client: MasterClient, experiment_id: int) -> int | None:
    """The experiment's first trial (lowest id), or None before it has any."""
    answer = client.get(f"/experiments/{experiment_id}/trials",
                        params={"limit": 1, "sortBy": "id"})
    trials = answer.get("trials") or []
    return int(trials[0]["id"]) if trials else None
