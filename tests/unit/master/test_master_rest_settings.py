"""``resource_manager.transport: {type: rest}`` in master.yaml: slurmrestd's URL, the token
source and its file's privacy, each error naming its key (docs/admin/slurmrestd.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from hpcdet.dispatcher.transport.settings import RestSettings, TokenSourceSettings
from hpcdet.errors import ConfigError
from hpcdet.master.settings.core import load_settings

WHERE = "<master.yaml>.resource_manager.transport"


def load(tmp_path: Path, transport: dict[str, Any], **rm: Any) -> Any:
    path = tmp_path / "master.yaml"
    path.write_text(yaml.safe_dump({"resource_manager": {"transport": transport, **rm}}))
    return load_settings(path, environ={})


def errors(tmp_path: Path, transport: dict[str, Any], **rm: Any) -> list[str]:
    """The errors, sorted (the loader's order is not the point here)."""
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, transport, **rm)
    return sorted(caught.value.errors)


def token_file(tmp_path: Path, mode: int = 0o600) -> Path:
    path = tmp_path / "jwt"
    path.write_text("SLURM_JWT=abc.def.ghi\n")
    path.chmod(mode)
    return path


def test_rest_settings_are_read_with_their_defaults(tmp_path: Path) -> None:
    path = token_file(tmp_path)
    rest = load(tmp_path, {"type": "rest", "url": "https://rest.example.org:6820/",
                           "token_source": {"type": "file", "path": str(path)}}
                ).resource_manager.transport
    assert rest == RestSettings(url="https://rest.example.org:6820",
                                token_source=TokenSourceSettings("file", path=str(path)))
    scontrol = load(tmp_path, {"type": "rest", "url": "http://127.0.0.1:6820", "user": "hpcdet",
                               "token_source": {"type": "scontrol", "lifespan_seconds": 600}}
                    ).resource_manager.transport
    assert scontrol.token_source == TokenSourceSettings("scontrol", lifespan_seconds=600)
    assert scontrol.login_user == "hpcdet" and scontrol.files == "local"


def test_bad_rest_settings_name_their_keys(tmp_path: Path) -> None:
    found = errors(tmp_path, {"type": "rest", "url": "ftp://x/y", "colour": 1,
                              "token_source": {"type": "scontrol", "lifespan_seconds": 5}})
    assert found == [
        f"{WHERE}.colour: unknown key (known: files, insecure_plain_http, timeout_seconds, "
        "token_source, type, url, user)",
        f"{WHERE}.token_source.lifespan_seconds: must be an integer from 60 to 604800, got 5",
        f"{WHERE}.url: must be http(s)://host[:port] with no path, got 'ftp://x/y'",
    ]
    assert errors(tmp_path, {"type": "rest", "token_source": {"type": "vault"}}) == [
        f"{WHERE}.token_source.type: must be one of file, scontrol, got 'vault'",
        f"{WHERE}.url: type rest needs slurmrestd's URL (https://host:port)",
    ]
    assert errors(tmp_path, {"type": "rest", "url": "https://h",
                             "token_source": {"type": "file"}}) == [
        f"{WHERE}.token_source.path: type file needs the token file's path"]


def test_plain_http_is_refused_off_this_host_unless_declared_trusted(tmp_path: Path) -> None:
    scontrol = {"type": "scontrol"}
    assert errors(tmp_path, {"type": "rest", "url": "http://rest.example.org:6820",
                             "token_source": scontrol}) == [
        f"{WHERE}.url: plain http to rest.example.org would send Slurm tokens in the clear; "
        "use https, a loopback address (an SSH tunnel), or set insecure_plain_http: true on "
        "a trusted network"]
    for url in ("http://localhost:6820", "http://[::1]:6820", "http://127.0.0.2"):
        assert load(tmp_path, {"type": "rest", "url": url, "token_source": scontrol})
    assert load(tmp_path, {"type": "rest", "url": "http://rest.example.org",
                           "insecure_plain_http": True, "token_source": scontrol})


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = token_file(tmp_path, 0o640)
    assert errors(tmp_path, {"type": "rest", "url": "https://h",
                             "token_source": {"type": "file", "path": str(path)}}) == [
        f"{WHERE}.token_source.path: {path} can be read by others (mode 0640); chmod 600 it"]
    link = tmp_path / "link"
    link.symlink_to(token_file(tmp_path))
    assert errors(tmp_path, {"type": "rest", "url": "https://h",
                             "token_source": {"type": "file", "path": str(link)}}) == [
        f"{WHERE}.token_source.path: {link} is not a regular file"]


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_a_token_file_of_another_user_is_refused(tmp_path: Path) -> None:
    path = token_file(tmp_path)
    os.chown(path, 65534, 65534)
    assert errors(tmp_path, {"type": "rest", "url": "https://h",
                             "token_source": {"type": "file", "path": str(path)}}) == [
        f"{WHERE}.token_source.path: {path} is owned by uid 65534, not by the master's user "
        "(uid 0)"]


def test_rest_is_for_slurm_only(tmp_path: Path) -> None:
    found = errors(tmp_path, {"type": "rest", "url": "https://h",
                              "token_source": {"type": "scontrol"}}, type="pbs")
    assert found == [f"{WHERE}.type: rest drives slurmrestd, for Slurm only "
                     "(resource_manager.type is pbs)"]


def test_run_as_owner_through_slurmrestd_needs_scontrol_tokens(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    rm = {"transport": {"type": "rest", "url": "https://h", "token_source": {
        "type": "file", "path": str(token_file(tmp_path))}}}
    path.write_text(yaml.safe_dump({"auth": {"mode": "munge"}, "resource_manager": rm,
                                    "security": {"jobs_run_as": "owner"}}))
    with pytest.raises(ConfigError) as caught:
        load_settings(path, environ={})
    assert caught.value.errors == [
        f"{WHERE}.token_source.type: security.jobs_run_as: owner needs type scontrol (a "
        "token file holds one user's token)"]
    rm["transport"]["token_source"] = {"type": "scontrol"}
    path.write_text(yaml.safe_dump({"auth": {"mode": "munge"}, "resource_manager": rm,
                                    "security": {"jobs_run_as": "owner"}}))
    assert load_settings(path, environ={}).runas.owner_mode


def test_site_sbatch_args_slurmrestd_cannot_be_sent_are_refused_at_start(
        tmp_path: Path) -> None:
    rest = {"type": "rest", "url": "https://h", "token_source": {"type": "scontrol"}}
    found = errors(tmp_path, rest,
                   task_container_defaults={"slurm": {"sbatch_args": ["--mem=4G"]}},
                   partition_overrides={"gpu": {"task_container_defaults": {
                       "slurm": {"sbatch_args": ["--mem-per-gpu=8G"]}}}})
    assert len(found) == 1 and found[0].startswith(
        "<master.yaml>.resource_manager.partition_overrides.gpu.task_container_defaults.slurm"
        ".sbatch_args: --mem-per-gpu is not available through slurmrestd"), found
