"""``POST /experiments`` refuses what a container cannot run: 400 with the config's place,
nothing stored (docs/admin/containers.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from master_helpers import CONFIG, assert_error, create

from hpcdet.master.settings.core import MasterSettings


@pytest.fixture
def settings(settings: MasterSettings, tmp_path: Path) -> MasterSettings:
    """The conftest's master, running trials in Charliecloud with an image root here."""
    image = tmp_path / "images" / "hpcdet"
    (image / "data").mkdir(parents=True)
    rm = replace(settings.resource_manager, container_run_type="charliecloud",
                 apptainer_image_root=str(tmp_path / "images"))
    return replace(settings, resource_manager=rm)


def config(tmp_path: Path, host_path: Path, image: str = "hpcdet") -> str:
    return CONFIG + (f"environment: {{image: {image}}}\n"
                     f"bind_mounts: [{{host_path: {host_path}, container_path: /data}}]\n")


def test_a_missing_bind_host_path_is_a_400_naming_it(client: FlaskClient,
                                                     tmp_path: Path) -> None:
    response = create(client, config(tmp_path, tmp_path / "gone"))
    message = assert_error(response, 400, "invalid_config")
    body = response.get_json()["error"]
    assert body["details"] == [f"<config>.bind_mounts[0].host_path: '{tmp_path / 'gone'}' does "
                               "not exist on the master's host (bind mounts must exist before "
                               "the trial starts)"], message
    assert client.get("/api/v1/experiments", headers={"X-Hpcdet-User": "alice"}).get_json()[
        "experiments"] == []


def test_a_missing_image_is_a_400_and_a_good_one_is_accepted(client: FlaskClient,
                                                            tmp_path: Path) -> None:
    missing = create(client, config(tmp_path, tmp_path, image="nope"))
    assert_error(missing, 400, "invalid_config")
    assert "<config>.environment.image:" in missing.get_json()["error"]["details"][0]
    assert create(client, config(tmp_path, tmp_path)).status_code == 201
