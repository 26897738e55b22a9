"""``resource_manager.transport``: how the master reaches the cluster (docs/admin/ssh.md).

``type: local`` (the default): scheduler commands run on the master's host and job
directories are on a filesystem it mounts. ``type: ssh``: both go through one SSH
connection to a login node; the keys below are checked at start, each error naming its key.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from typing import Any

from hpcdet.dispatcher.transport.settings import DEFAULT_KNOWN_HOSTS, SshSettings
from hpcdet.master.settings.read import Getter, unknown_keys

TRANSPORT_TYPES = ("local", "ssh")
_SSH_KEYS = {"type", "host", "port", "user", "key_file", "known_hosts",
             "insecure_accept_new_host_key", "keepalive_seconds", "connect_timeout"}
# A host name or address as ssh takes it (no spaces, no option-like leading "-").
_HOST = re.compile(r"^[A-Za-z0-9_.:\[\]%-]+$")
_USER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")


def build_transport(doc: Mapping[str, Any], where: str, errors: list[str]) -> SshSettings | None:
    """The SSH settings of ``resource_manager.transport``; None for the local transport."""
    get = Getter(doc, where, errors)
    kind = get.choice("type", "local", TRANSPORT_TYPES)
    if kind == "local":
        unknown_keys(doc, {"type"}, where, errors)
        return None
    unknown_keys(doc, _SSH_KEYS, where, errors)
    host = _host(get)
    user = get.opt_text("user")
    if user is not None and not _USER.match(user):
        errors.append(f"{where}.user: must be a Unix user name, got {user!r}")
    ssh = SshSettings(
        host=host, port=get.integer("port", 22, lo=1, hi=65535), user=user,
        key_file=get.opt_text("key_file"),
        known_hosts=get.text("known_hosts", DEFAULT_KNOWN_HOSTS),
        insecure_accept_new_host_key=get.flag("insecure_accept_new_host_key", False),
        keepalive_seconds=get.integer("keepalive_seconds", 30, lo=0, hi=3600),
        connect_timeout=get.number("connect_timeout", 10.0, lo=0.5),
    )
    _check_files(ssh, where, errors)
    return ssh


def _host(get: Getter) -> str:
    value = get.doc.get("host")
    if not isinstance(value, str) or not value:
        get.errors.append(f"{get.where}.host: type ssh needs the login node's host name")
        return "invalid"
    if not _HOST.match(value) or value.startswith("-"):
        get.errors.append(f"{get.where}.host: not a host name or address: {value!r}")
    return value


def _check_files(ssh: SshSettings, where: str, errors: list[str]) -> None:
    """The key file exists and is private; known_hosts exists unless new keys are accepted."""
    if ssh.key_file is not None:
        path = os.path.expanduser(ssh.key_file)
        try:
            info = os.stat(path)
        except OSError as exc:
            errors.append(f"{where}.key_file: cannot read {path}: {exc.strerror}")
        else:
            if not stat.S_ISREG(info.st_mode):
                errors.append(f"{where}.key_file: {path} is not a file")
            elif info.st_mode & 0o077:
                errors.append(f"{where}.key_file: {path} can be read by others (mode "
                              f"{stat.S_IMODE(info.st_mode):04o}); chmod 600 it")
    known = ssh.known_hosts_path
    if not ssh.insecure_accept_new_host_key and not os.path.isfile(known):
        errors.append(f"{where}.known_hosts: {known} does not exist; add the login node's host "
                      f"key to it (ssh-keyscan -p {ssh.port} {ssh.host} >> {known}, after "
                      "checking the fingerprint), or set insecure_accept_new_host_key: true")
