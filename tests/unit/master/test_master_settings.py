"""master.yaml loading: defaults, environment overrides, errors naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcdet.errors import ConfigError
from hpcdet.master.settings import load_settings


def test_defaults_use_sqlite_in_the_state_dir(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text(f"state_dir: {tmp_path}\n")
    settings = load_settings(path, environ={})
    assert settings.db_url == f"sqlite:///{tmp_path / 'hpcdet.sqlite'}"
    assert settings.database_kind == "sqlite"
    assert settings.resource_manager.container_run_type == "none"


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text("db: {url: 'sqlite:///x.db'}\nport: 9000\n")
    env = {"HPCDET_DB_URL": "postgresql+psycopg2://u@h/db", "HPCDET_MASTER_PORT": "9100"}
    settings = load_settings(path, environ=env)
    assert settings.database_kind == "postgresql" and settings.port == 9100


def test_every_bad_key_is_named(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text("port: http\nbogus: 1\nresource_manager:\n  container_run_type: docker\n"
                    "  slot_type: gpu\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    assert info.value.errors == [
        "<master.yaml>.bogus: unknown key (known: auth, checkpoint_storage, db, host, port, "
        "reconciler, resource_manager, state_dir, webserver)",
        "<master.yaml>.port: must be an integer from 1 to 65535, got 'http'",
        "<master.yaml>.resource_manager.container_run_type: must be one of apptainer, "
        "singularity, enroot, podman, none, got 'docker'",
        "<master.yaml>.resource_manager.slot_type: must be one of cpu, cuda, rocm, got 'gpu'",
    ]


def test_malformed_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text("port: 8080\n  host: [x\n")
    with pytest.raises(ConfigError, match=r"master.yaml:2:7"):
        load_settings(path, environ={})
