"""How the dispatcher reaches the cluster: here (the default) or through a login node.

``resource_manager.transport`` in master.yaml picks one (see docs/admin/ssh.md):

* ``local``: scheduler commands are child processes of the master and job directories are
  on a filesystem the master's host mounts;
* ``ssh``: both go through one SSH connection to a login node (commands over ``exec``
  channels, argv quoted by :func:`~hpcdet.dispatcher.transport.quoting.command_line`;
  files over SFTP), for a master that runs off the cluster;
* ``rest`` (Slurm): the scheduler's verbs are slurmrestd requests (the backend's own
  client, :mod:`hpcdet.dispatcher.slurm.rest`), job files are local as with ``local``.
"""

from __future__ import annotations

from hpcdet.dispatcher.transport.base import (
    Entry,
    HostKeyError,
    Transport,
    TransportUnavailableError,
)
from hpcdet.dispatcher.transport.local import LocalTransport
from hpcdet.dispatcher.transport.settings import RestSettings, SshSettings


def make_transport(ssh: SshSettings | RestSettings | None) -> Transport:
    """The SSH transport for ``ssh`` settings, else the local one (a REST master's job files
    are on its own filesystem); paramiko is imported only here, for a master that uses it."""
    if not isinstance(ssh, SshSettings):
        return LocalTransport()
    from hpcdet.dispatcher.transport.sftp import SshTransport

    return SshTransport(ssh)


__all__ = ["Entry", "HostKeyError", "LocalTransport", "RestSettings", "SshSettings", "Transport",
           "TransportUnavailableError", "make_transport"]
