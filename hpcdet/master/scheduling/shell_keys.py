"""A shell's keys (``det shell``): the sshd's host key and the client's key pair.

Both are fresh ed25519 keys made per shell at submission, in OpenSSH's formats, so ``ssh``
and ``sshd`` read them as they are. The client's public key is the only line of the
shell's ``authorized_keys``; the host's public key is what ``det`` pins (its own
known-hosts file, ``StrictHostKeyChecking=yes``). See docs/shell.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


@dataclass(frozen=True)
class ShellKeys:
    """One shell's keys, as text: private keys in OpenSSH's PEM form, public keys as
    ``ssh-ed25519 AAAA...``."""

    host_private: str
    host_public: str
    client_private: str
    client_public: str

    def __repr__(self) -> str:  # never print a private key
        return f"ShellKeys(host_public={self.host_public!r})"


def _pair() -> tuple[str, str]:
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode("ascii")
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode("ascii")
    return private, public


def make_keys() -> ShellKeys:
    """A new host key and client key pair."""
    host_private, host_public = _pair()
    client_private, client_public = _pair()
    return ShellKeys(host_private, host_public, client_private, client_public)


def authorized_keys(client_public: str) -> str:
    """The shell's ``authorized_keys``: the client's key, no agent or X11 forwarding."""
    if any(char in client_public for char in "\n\r\x00"):
        raise ValueError("a public key is one line")
    return f"no-agent-forwarding,no-X11-forwarding {client_public} hpcdet-shell\n"
