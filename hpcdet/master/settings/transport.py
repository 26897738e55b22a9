"""``resource_manager.transport``: how the master reaches the cluster (docs/admin/ssh.md,
docs/admin/slurmrestd.md).

``type: local`` (the default): scheduler commands run on the master's host and job
directories are on a filesystem it mounts. ``type: ssh``: both go through one SSH
connection to a login node. ``type: rest``: Slurm's commands become slurmrestd requests
(JWT), job directories stay on the master's filesystem. The keys are checked at start, each
error naming its key.
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from hpcdet.dispatcher.transport.settings import (
    DEFAULT_KNOWN_HOSTS,
    TOKEN_SOURCES,
    RestSettings,
    SshSettings,
    TokenSourceSettings,
)
from hpcdet.master.settings.read import Getter, unknown_keys

TRANSPORT_TYPES = ("local", "ssh", "rest")
_REST_KEYS = {"type", "url", "token_source", "user", "files", "timeout_seconds",
              "insecure_plain_http"}
# Files a REST master reaches job directories through: its own filesystem (SFTP: not yet).
_REST_FILES = ("local",)
_SSH_KEYS = {"type", "host", "port", "user", "key_file", "known_hosts",
             "insecure_accept_new_host_key", "keepalive_seconds", "connect_timeout"}
# A host name or address as ssh takes it (no spaces, no option-like leading "-").
_HOST = re.compile(r"^[A-Za-z0-9_.:\[\]%-]+$")
_USER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")


def build_transport(doc: Mapping[str, Any], where: str,
                    errors: list[str]) -> SshSettings | RestSettings | None:
    """The SSH or REST settings of ``resource_manager.transport``; None for the local one."""
    get = Getter(doc, where, errors)
    kind = get.choice("type", "local", TRANSPORT_TYPES)
    if kind == "local":
        unknown_keys(doc, {"type"}, where, errors)
        return None
    if kind == "rest":
        return _build_rest(get)
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


def _build_rest(get: Getter) -> RestSettings:
    """``type: rest``: slurmrestd's URL, where its tokens come from, as whom, and files."""
    where, errors = get.where, get.errors
    unknown_keys(get.doc, _REST_KEYS, where, errors)
    user = get.opt_text("user")
    if user is not None and not _USER.match(user):
        errors.append(f"{where}.user: must be a Unix user name, got {user!r}")
    return RestSettings(url=_rest_url(get), token_source=_token_source(get), user=user,
                        files=get.choice("files", "local", _REST_FILES),
                        timeout_seconds=get.number("timeout_seconds", 30.0, lo=0.5))


def _rest_url(get: Getter) -> str:
    """``http(s)://host[:port]`` without a path; plain http only to this host (the token
    travels in a header) unless ``insecure_plain_http`` says the network is trusted."""
    where, errors = get.where, get.errors
    value = get.doc.get("url")
    if not isinstance(value, str) or not value:
        errors.append(f"{where}.url: type rest needs slurmrestd's URL (https://host:port)")
        return "http://invalid"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        parts = None
    if (parts is None or parts.scheme not in ("http", "https") or not parts.hostname
            or parts.path not in ("", "/") or parts.query or parts.fragment
            or parts.username or not _HOST.match(parts.hostname)):
        errors.append(f"{where}.url: must be http(s)://host[:port] with no path, got {value!r}")
        return "http://invalid"
    insecure = get.flag("insecure_plain_http", False)
    if parts.scheme == "http" and not insecure and not _is_loopback(parts.hostname):
        errors.append(f"{where}.url: plain http to {parts.hostname} would send Slurm tokens "
                      "in the clear; use https, a loopback address (an SSH tunnel), or set "
                      "insecure_plain_http: true on a trusted network")
    return value.rstrip("/")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _token_source(get: Getter) -> TokenSourceSettings:
    where = f"{get.where}.token_source"
    doc = get.section("token_source")
    source = Getter(doc, where, get.errors)
    kind = doc.get("type")
    if kind not in TOKEN_SOURCES:
        get.errors.append(f"{where}.type: must be one of {', '.join(TOKEN_SOURCES)}, got "
                          f"{kind!r}")
        return TokenSourceSettings("file", path="invalid")
    if kind == "scontrol":
        unknown_keys(doc, {"type", "lifespan_seconds"}, where, get.errors)
        return TokenSourceSettings("scontrol", lifespan_seconds=source.integer(
            "lifespan_seconds", 1800, lo=60, hi=7 * 24 * 3600))
    unknown_keys(doc, {"type", "path"}, where, get.errors)
    path = source.opt_text("path")
    if path is None:
        get.errors.append(f"{where}.path: type file needs the token file's path")
        return TokenSourceSettings("file", path="invalid")
    _check_private(os.path.expanduser(path), f"{where}.path", get.errors)
    return TokenSourceSettings("file", path=path)


def _check_private(path: str, where: str, errors: list[str]) -> None:
    """A token (or key) file: a regular file of the master's user, mode 0600 or stricter."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        errors.append(f"{where}: cannot read {path}: {exc.strerror}")
        return
    if not stat.S_ISREG(info.st_mode):
        errors.append(f"{where}: {path} is not a regular file")
    elif info.st_uid != os.geteuid():
        errors.append(f"{where}: {path} is owned by uid {info.st_uid}, not by the master's "
                      f"user (uid {os.geteuid()})")
    elif info.st_mode & 0o077:
        errors.append(f"{where}: {path} can be read by others (mode "
                      f"{stat.S_IMODE(info.st_mode):04o}); chmod 600 it")
