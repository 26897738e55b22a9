"""``security.tls``: the master serves HTTPS with the site's certificate and key.

``security.tls: {cert: PATH, key: PATH}`` in ``master.yaml``. Both files must exist and be
readable by the master at start. ``cert`` is what gunicorn serves (the server certificate,
optionally followed by its chain); jobs receive a copy of it and trust it (see
:func:`hpcdet.client_tls.verify_setting`), so a self-signed certificate works for them too.
Only the file's certificates are copied: a ``cert`` file that also holds the key (one PEM
with both) never puts the key into job directories.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hpcdet.master.settings.read import Getter, unknown_keys

_TLS_KEYS = {"cert", "key"}
_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]*?-----END CERTIFICATE-----")
_MAX_CERT_BYTES = 1024 * 1024


@dataclass(frozen=True)
class TlsSettings:
    """The certificate and key files the master serves HTTPS with."""

    cert: str
    key: str

    def cert_pem(self) -> str:
        """The certificates of the ``cert`` file, and nothing else (what jobs get a copy of)."""
        with open(self.cert, encoding="utf-8", errors="replace") as handle:
            text = handle.read(_MAX_CERT_BYTES)
        return "".join(block + "\n" for block in _CERTIFICATE.findall(text))

    def gunicorn_options(self) -> dict[str, Any]:
        """The gunicorn settings that make it serve HTTPS."""
        return {"certfile": self.cert, "keyfile": self.key}


def build_tls(doc: Mapping[str, Any], where: str, errors: list[str]) -> TlsSettings | None:
    """``security.tls`` from ``doc`` (the ``security`` mapping); None when absent."""
    raw = doc.get("tls")
    if raw is None:
        return None
    where = f"{where}.tls"
    if not isinstance(raw, dict):
        errors.append(f"{where}: must be a mapping with cert and key, got {raw!r}")
        return None
    unknown_keys(raw, _TLS_KEYS, where, errors)
    get = Getter(raw, where, errors)
    paths = {}
    for key in ("cert", "key"):
        if raw.get(key) is None:
            errors.append(f"{where}.{key}: is required (a PEM file path)")
            continue
        path = os.path.expanduser(get.text(key, ""))
        problem = _unreadable(path) if path else "must be a non-empty string"
        if problem:
            errors.append(f"{where}.{key}: {problem}")
        else:
            paths[key] = path
    if len(paths) != 2:
        return None
    mismatch = _pair_problem(paths["cert"], paths["key"])
    if mismatch:
        errors.append(f"{where}: {mismatch}")
        return None
    return TlsSettings(cert=paths["cert"], key=paths["key"])


def _pair_problem(cert: str, key: str) -> str:
    """Why ``cert`` and ``key`` cannot serve TLS together, or '' when they can."""
    import ssl

    def no_passphrase() -> str:
        raise ValueError("encrypted")

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key, password=no_passphrase)
    except ValueError:
        return f"{key}: the key is encrypted; give the master an unencrypted key (mode 0600)"
    except ssl.SSLError as exc:
        return f"{cert} and {key} do not form a usable certificate and key ({exc.reason})"
    return ""


def _unreadable(path: str) -> str:
    """Why the master cannot read ``path``, or '' when it can."""
    if not os.path.exists(path):
        return f"{path}: no such file"
    if not os.path.isfile(path):
        return f"{path}: not a regular file"
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        return f"{path}: cannot read: {exc.strerror}"
    if b"-----BEGIN " not in head:
        return f"{path}: not a PEM file"
    return ""


def job_cert_pem(tls: TlsSettings | None) -> str | None:
    """What a job directory's ``master-cert.pem`` holds: the served certificate, or None."""
    return None if tls is None else tls.cert_pem()


def request_is_https() -> bool:
    """Whether the current Flask request came in over TLS (for Secure cookies)."""
    from flask import request

    return request.scheme == "https"
