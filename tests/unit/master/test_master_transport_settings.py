"""``resource_manager.transport`` in master.yaml: local by default; ssh keys checked at start,
each error naming its key (docs/admin/ssh.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hpcdet.errors import ConfigError
from hpcdet.master.settings.core import load_settings


def load(tmp_path: Path, transport: dict[str, Any], root: str | None = "/shared/jobs") -> Any:
    path = tmp_path / "master.yaml"
    rm: dict[str, Any] = {"transport": transport}
    if root is not None:
        rm["job_storage_root"] = root
    path.write_text(yaml.safe_dump({"resource_manager": rm}))
    return load_settings(path, environ={})


def errors(tmp_path: Path, transport: dict[str, Any], root: str | None = "/shared/jobs") -> str:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, transport, root)
    return str(caught.value)


def test_the_local_transport_is_the_default(tmp_path: Path) -> None:
    assert load(tmp_path, {}).resource_manager.transport is None
    assert load(tmp_path, {"type": "local"}).resource_manager.transport is None


def test_ssh_settings_are_read_with_their_defaults(tmp_path: Path) -> None:
    key, known = tmp_path / "id", tmp_path / "known_hosts"
    key.write_text("k")
    key.chmod(0o600)
    known.write_text("")
    ssh = load(tmp_path, {"type": "ssh", "host": "login1", "key_file": str(key),
                          "known_hosts": str(known)}).resource_manager.transport
    assert (ssh.host, ssh.port, ssh.key_file, ssh.insecure_accept_new_host_key,
            ssh.keepalive_seconds, ssh.host_key_name) == ("login1", 22, str(key), False, 30,
                                                          "login1")


def test_bad_ssh_settings_name_their_keys(tmp_path: Path) -> None:
    key = tmp_path / "id"
    key.write_text("k")
    key.chmod(0o644)
    text = errors(tmp_path, {"type": "ssh", "host": "-oProxyCommand=x", "port": 70000,
                             "user": "a b", "key_file": str(key),
                             "known_hosts": str(tmp_path / "none"), "colour": "red"})
    where = "<master.yaml>.resource_manager.transport"
    assert f"{where}.host: not a host name or address: '-oProxyCommand=x'" in text
    assert f"{where}.port: must be an integer from 1 to 65535" in text
    assert f"{where}.user: must be a Unix user name" in text
    assert f"{where}.key_file: {key} can be read by others (mode 0644); chmod 600 it" in text
    assert f"{where}.known_hosts: {tmp_path / 'none'} does not exist" in text
    assert f"{where}.colour: unknown key" in text
    assert f"{where}.host: type ssh needs the login node's host name" in errors(
        tmp_path, {"type": "ssh", "known_hosts": str(tmp_path / "none"),
                   "insecure_accept_new_host_key": True})
    assert f"{where}.type: must be one of local, ssh" in errors(tmp_path, {"type": "rsh"})
    fine = {"type": "ssh", "host": "login1", "known_hosts": str(tmp_path / "none"),
            "insecure_accept_new_host_key": True}
    for root in (None, "~/jobs", "jobs"):  # a path of the login node's, never the master's
        assert ("<master.yaml>.resource_manager.job_storage_root: with transport type ssh, give "
                "an absolute path on the login node") in errors(tmp_path, fine, root)
    assert f"{where}.host: unknown key" in errors(tmp_path, {"type": "local", "host": "x"})
