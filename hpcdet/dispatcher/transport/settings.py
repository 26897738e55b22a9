"""``resource_manager.transport: {type: ssh, ...}``, as the dispatcher takes it (no paramiko
needed to read it: the master checks these at start, before any connection)."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"


@dataclass(frozen=True)
class SshSettings:
    """``resource_manager.transport`` with ``type: ssh`` (see docs/admin/ssh.md)."""

    host: str
    port: int = 22
    user: str | None = None  # None: the master's own user name
    key_file: str | None = None  # None: the user's default keys (~/.ssh/id_*)
    known_hosts: str = DEFAULT_KNOWN_HOSTS
    insecure_accept_new_host_key: bool = False
    keepalive_seconds: int = 30
    connect_timeout: float = 10.0

    @property
    def where(self) -> str:
        """``user@host:port``, as messages name the login node."""
        return f"{self.login_user}@{self.host}:{self.port}"

    @property
    def login_user(self) -> str:
        return self.user or getpass.getuser()

    @property
    def known_hosts_path(self) -> str:
        return os.path.expanduser(self.known_hosts)

    @property
    def host_key_name(self) -> str:
        """How ``known_hosts`` names the server (``[host]:port`` off port 22)."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"


#: Where a REST master's tokens come from (docs/admin/slurmrestd.md).
TOKEN_SOURCES = ("file", "scontrol")


@dataclass(frozen=True)
class TokenSourceSettings:
    """``resource_manager.transport.token_source``: a file an operator keeps fresh, or
    ``scontrol token`` run by the master itself (its own user's token; in run-as-owner mode
    each owner's is minted by the run-as helper as the owner)."""

    type: str
    path: str | None = None  # type file: the token, alone or as SLURM_JWT=<token>
    lifespan_seconds: int = 1800  # type scontrol: each token's life; renewed at 80% of it


@dataclass(frozen=True)
class RestSettings:
    """``resource_manager.transport`` with ``type: rest``: Slurm's commands become slurmrestd
    requests; job files stay on the master's own filesystem (``files: local``)."""

    url: str  # http(s)://host:port of slurmrestd, no path
    token_source: TokenSourceSettings
    user: str | None = None  # X-SLURM-USER-NAME; None: the master's own user name
    files: str = "local"
    timeout_seconds: float = 30.0

    @property
    def login_user(self) -> str:
        """The Slurm user the master's requests run as."""
        return self.user or getpass.getuser()
