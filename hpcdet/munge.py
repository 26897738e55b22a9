"""MUNGE credentials through the ``munge`` and ``unmunge`` binaries (Debian's ``munge``).

``det`` encodes a credential whose payload names its purpose and the master it is for;
the master decodes it with the cluster's shared key (through its local ``munged``), which
proves the Unix user that encoded it. ``munged`` refuses a credential decoded twice
(replay) or older than its TTL (expired). Only argv lists, no shell. This module imports
nothing from the master: the CLI uses :func:`encode`, the master :func:`decode`.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess

PURPOSE = "hpcdet-login"
CHECK_HINT = ("check it with `systemctl status munge` and `munge -n | unmunge` "
              "(munged must run with the cluster's key)")


class MungeError(Exception):
    """MUNGE could not encode or decode; the message says why in one line."""

    def __init__(self, message: str, *, status: str = "", unavailable: bool = False) -> None:
        super().__init__(message)
        # unavailable: munged (or the binary) could not be used at all, as opposed to a
        # credential it refused.
        self.status, self.unavailable = status, unavailable


@dataclasses.dataclass(frozen=True)
class Credential:
    """A decoded credential: who encoded it and what it says."""

    uid: int
    gid: int
    payload: str


def login_payload(master_url: str) -> str:
    """The payload that binds a login credential to one master."""
    return f"{PURPOSE} {master_url}"


def encode(payload: str, *, binary: str = "munge", timeout: float = 10.0) -> str:
    """A credential for ``payload`` from the local ``munged`` (as the calling Unix user)."""
    try:
        done = subprocess.run([binary, "--input=-"], input=payload.encode(),
                              capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise MungeError(f"the munge command was not found; install MUNGE and {CHECK_HINT}") \
            from None
    except subprocess.TimeoutExpired:
        raise MungeError(f"munge did not answer in {timeout:g} s; {CHECK_HINT}") from None
    if done.returncode != 0:
        raise MungeError(f"munge failed: {_last_line(done.stderr)}; {CHECK_HINT}")
    return done.stdout.decode().strip()


def decode(credential: str, *, binary: str = "unmunge", timeout: float = 10.0) -> Credential:
    """Decode ``credential`` with the local ``munged``; :class:`MungeError` if it is invalid,
    replayed or expired (``status`` then holds munge's word for it)."""
    try:
        done = subprocess.run([binary, "--input=-"], input=credential.encode(),
                              capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise MungeError("unmunge was not found on the master's host",
                         unavailable=True) from None
    except subprocess.TimeoutExpired:
        raise MungeError(f"unmunge did not answer in {timeout:g} s", unavailable=True) from None
    meta, payload = _parse(done.stdout.decode(errors="replace"))
    status = meta.get("STATUS", "")
    if done.returncode != 0:
        stderr = _last_line(done.stderr)
        if _UNREACHABLE in stderr:
            raise MungeError(f"unmunge cannot reach munged: {stderr}", unavailable=True)
        why = _NUMBER.sub("", status).strip() or stderr
        raise MungeError(f"the MUNGE credential was refused: {why}", status=status)
    uid, gid = _NUMBER.search(meta.get("UID", "")), _NUMBER.search(meta.get("GID", ""))
    if uid is None or gid is None:
        raise MungeError("unmunge answered without a UID and GID")
    return Credential(uid=int(uid.group(1)), gid=int(gid.group(1)), payload=payload)


# What munge and unmunge say when munged's socket is missing or refuses connections.
_UNREACHABLE = "Failed to access"
# unmunge writes ``UID: name (1002)`` and ``STATUS: Replayed credential (17)``.
_NUMBER = re.compile(r"\s*\((\d+)\)\s*$")


def _parse(text: str) -> tuple[dict[str, str], str]:
    """``KEY: value`` lines, a blank line, then the payload (unmunge's default output)."""
    head, _, payload = text.partition("\n\n")
    meta = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            meta[key.strip()] = value.strip()
    return meta, payload.rstrip("\n")


def _last_line(stderr: bytes) -> str:
    lines = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no message"
