"""One connection to slurmrestd: JWT headers, the data_parser version, errors by meaning.

Every request goes through :meth:`SlurmRestClient.request`, which

* adds ``X-SLURM-USER-NAME``/``X-SLURM-USER-TOKEN`` from the :class:`~.tokens.TokenSource`
  (the master's own token, or a user's in run-as-owner mode) and, when slurmrestd refuses
  a token, gets a new one and tries once more (a token file renewed meanwhile);
* counts itself (:attr:`count`, like :attr:`CommandRunner.count`: the poll benchmark);
* turns what went wrong into the dispatcher's errors, never an HTTP status: no answer (refused,
  timed out, the controller unreachable behind slurmrestd) is a
  :class:`~hpcdet.dispatcher.transport.base.TransportUnavailableError`, Slurm's own
  ``errors[]`` a :class:`~hpcdet.errors.SchedulerError` carrying Slurm's message.

The data_parser version is picked once, from what ``GET /openapi/v3`` lists: hpcdet reads
v0.0.44's field shapes (Slurm 25.11's default), so a server without it is refused clearly.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from hpcdet.dispatcher.slurm.rest.tokens import TokenSource
from hpcdet.dispatcher.transport.base import TransportUnavailableError
from hpcdet.errors import SchedulerError

logger = logging.getLogger(__name__)
# httpx logs every request at INFO: a line per poll cycle in the master's log. What matters
# (a refusal, no answer) is raised as an error instead; the proxy quiets it the same way.
logging.getLogger("httpx").setLevel(logging.WARNING)

#: The data_parser versions this client reads, preferred first.
VERSIONS = ("v0.0.44",)
# Slurm's error numbers for "cannot talk to slurmctld/slurmdbd" (slurm_errno.h):
# SLURM_COMMUNICATIONS_*_ERROR 1001-1005, SLURMCTLD_COMMUNICATIONS_* 1800-1803,
# ESLURM_DB_CONNECTION 7000, ESLURM_DB_CONNECTION_INVALID 7001.
_UNREACHABLE_ERRNOS = frozenset({1001, 1002, 1003, 1004, 1005, 1800, 1801, 1802, 1803,
                                 7000, 7001})
# slurmrestd answers a bad or expired token with 401 or 511 ("Network Authentication
# Required"), a user it may not act for with 403.
_AUTH_FAILED = (401, 403, 511)

Json = dict[str, Any]
# Query parameters: pairs, so that a name may repeat (slurmdb's ``step=1&step=2``: its CSV
# form of several ids fails in 25.11.7 with "Unspecified error").
Params = Sequence[tuple[str, str]]


class SlurmRestClient:
    """slurmrestd at ``url`` as ``user`` (its tokens from ``tokens``)."""

    def __init__(self, url: str, tokens: TokenSource, user: str, *, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self.tokens = tokens
        self.user = user
        #: Requests sent so far (the poll benchmark compares it before and after a cycle).
        self.count = 0
        self._http = httpx.Client(base_url=self.url, timeout=timeout, transport=transport,
                                  headers={"Accept": "application/json"})
        self._version: str | None = None
        self._lock = threading.Lock()

    @property
    def version(self) -> str:
        """The data_parser version of every path (``v0.0.44``), read once from the server."""
        if self._version is None:
            offered = self.request("GET", "/openapi/v3").get("paths", {})
            for version in VERSIONS:
                if any(f"/slurm/{version}/" in path for path in offered):
                    self._version = version
                    break
            else:
                raise SchedulerError(["slurmrestd"], 1, "", f"slurmrestd at {self.url} offers "
                                     "none of the data_parser versions hpcdet reads "
                                     f"({', '.join(VERSIONS)})")
        return self._version

    def slurm(self, path: str) -> str:
        """``/slurm/<version>/<path>``."""
        return f"/slurm/{self.version}/{path}"

    def slurmdb(self, path: str) -> str:
        """``/slurmdb/<version>/<path>``."""
        return f"/slurmdb/{self.version}/{path}"

    @staticmethod
    def segment(value: str) -> str:
        """``value`` as one path segment (ids and names are validated before; this is the
        second fence)."""
        return quote(value, safe="")

    def get(self, path: str, params: Params | None = None, *,
            as_user: str | None = None) -> Json:
        return self.request("GET", path, params=params, as_user=as_user)

    def post(self, path: str, body: Json, *, as_user: str | None = None) -> Json:
        return self.request("POST", path, body=body, as_user=as_user)

    def delete(self, path: str, body: Json | None = None, *, as_user: str | None = None) -> Json:
        return self.request("DELETE", path, body=body, as_user=as_user)

    def request(self, method: str, path: str, *, params: Params | None = None,
                body: Json | None = None, as_user: str | None = None) -> Json:
        """One request (two if the token was refused); the reply's JSON."""
        where = [f"slurmrestd {method} {path}"]
        for attempt in (1, 2):
            reply = self._send(method, path, params, body, as_user, where)
            if reply.status_code not in _AUTH_FAILED:
                return _checked(reply, where)
            # A token renewed meanwhile (file rewritten, or expired early): one more try.
            self.tokens.invalidate(as_user)
            if attempt == 2:
                raise SchedulerError(where, reply.status_code, "", f"slurmrestd at {self.url} "
                                     f"refused the token of user {as_user or self.user} "
                                     "(authentication failure)")
        raise AssertionError("unreachable")

    def _send(self, method: str, path: str, params: Params | None,
              body: Json | None, as_user: str | None, where: list[str]) -> httpx.Response:
        headers = {"X-SLURM-USER-NAME": as_user or self.user,
                   "X-SLURM-USER-TOKEN": self.tokens.token(as_user)}
        with self._lock:
            self.count += 1
        try:
            return self._http.request(method, path, params=list(params or ()), json=body,
                                      headers=headers)
        except httpx.TimeoutException:
            raise TransportUnavailableError(where, f"slurmrestd at {self.url} did not answer "
                                            "in time") from None
        except httpx.TransportError as exc:
            raise TransportUnavailableError(where, f"slurmrestd at {self.url} cannot be "
                                            f"reached: {type(exc).__name__}") from None

    def close(self) -> None:
        """Close the connection (the master closes it at exit; tests after each client)."""
        self._http.close()

    def __enter__(self) -> SlurmRestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _checked(reply: httpx.Response, where: list[str]) -> Json:
    """The reply's JSON; Slurm's ``errors[]`` (or a reply that is not JSON) raised."""
    try:
        data = reply.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise SchedulerError(where, reply.status_code, "", "slurmrestd sent a reply that is "
                             f"not a JSON object ({reply.headers.get('content-type', '?')})")
    errors = [error for error in data.get("errors") or [] if isinstance(error, dict)]
    if errors:
        message = "; ".join(_error_text(error) for error in errors)
        if any(error.get("error_number") in _UNREACHABLE_ERRNOS for error in errors):
            raise TransportUnavailableError(where, f"slurmrestd cannot reach Slurm: {message}")
        raise SchedulerError(where, 1, "", message)
    if reply.status_code >= 400:
        raise SchedulerError(where, reply.status_code, "", "slurmrestd refused the request "
                             "without saying why")
    return data


def _error_text(error: Mapping[str, Any]) -> str:
    """Slurm's own words: ``Invalid qos specification (Job update requested failed)``."""
    text = str(error.get("error") or "").strip()
    description = str(error.get("description") or "").strip()
    if text and description and description != text:
        return f"{text} ({description})"
    return text or description or f"Slurm error {error.get('error_number', '?')}"
