"""``det experiment create``'s Determined options: ``--paused``, ``-i/--include``, and the
refused ``-p/--publish`` and ``--project_id`` (``-p`` must not silently mean another thing)."""

from __future__ import annotations

import base64
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)
CREATED = {"experiment": {"id": 5, "state": "PAUSED"}, "warnings": []}


@pytest.fixture
def project(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "c.yaml").write_text("name: mnist\nentrypoint: python train.py\n")
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    return str(tmp_path / "c.yaml"), str(code)


def _body(fake_master: FakeMaster) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(fake_master.sent("POST", "/experiments")[0].content)
    return body


def _names(body: dict[str, Any]) -> list[str]:
    data = base64.b64decode(body["context"])
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        return archive.getnames()


def test_paused_asks_the_master_not_to_activate(det: Det, fake_master: FakeMaster,
                                                project: tuple[str, str]) -> None:
    fake_master.add("POST", "/experiments", CREATED, status=201)
    result = det("e", "create", "--paused", *project)
    assert result.exit_code == 0, result.output
    assert _body(fake_master)["activate"] is False


def test_without_paused_activate_is_the_master_s_default(det: Det, fake_master: FakeMaster,
                                                         project: tuple[str, str]) -> None:
    fake_master.add("POST", "/experiments", CREATED, status=201)
    assert det("e", "create", *project).exit_code == 0
    assert "activate" not in _body(fake_master)


@pytest.mark.parametrize("flags, refused", [
    (["--paused", "--follow"], "--follow and --paused cannot be used together"),
    (["--local", "--paused"], "--local cannot be used with --paused"),
    (["--local", "-i", "x"], "--local cannot be used with --include"),
])
def test_meaningless_combinations_are_refused(det: Det, project: tuple[str, str],
                                              flags: list[str], refused: str) -> None:
    result = det("e", "create", *flags, *project)
    assert result.exit_code == 2 and refused in result.stderr


@pytest.mark.parametrize("flags", [["-p", "vision"], ["--publish", "8080"],
                                   ["--project_id", "3"], ["--project-id", "3"]])
def test_determined_s_p_and_project_id_are_refused_naming_ours(
        det: Det, fake_master: FakeMaster, project: tuple[str, str], flags: list[str]) -> None:
    result = det("e", "create", *flags, *project)
    assert result.exit_code == 2, result.output
    assert "--workspace NAME --project NAME" in result.stderr
    assert "Traceback" not in result.output
    assert not fake_master.requests


def test_include_adds_files_and_directories_at_the_top(det: Det, fake_master: FakeMaster,
                                                       project: tuple[str, str],
                                                       tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "util.py").write_text("X = 1\n")
    (tmp_path / "shared" / "big.bin").write_text("x")
    (tmp_path / "shared" / ".detignore").write_text("*.bin\n")
    (tmp_path / "labels.txt").write_text("cat\n")
    fake_master.add("POST", "/experiments", CREATED, status=201)
    result = det("e", "create", "-i", str(tmp_path / "shared"),
                 "--include", str(tmp_path / "labels.txt"), *project)
    assert result.exit_code == 0, result.output
    assert _names(_body(fake_master)) == ["labels.txt", "shared", "shared/.detignore",
                                          "shared/util.py", "train.py"]


@pytest.mark.parametrize("include, message", [
    ("missing", "--include '{tmp}/missing' does not exist"),
    ("code/train.py", "'train.py' is already in the context"),
])
def test_bad_includes_are_one_clear_line(det: Det, fake_master: FakeMaster,
                                         project: tuple[str, str], tmp_path: Path,
                                         include: str, message: str) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "train.py").write_text("")
    path = str(other / "train.py") if include.startswith("code/") else str(tmp_path / include)
    result = det("e", "create", "-i", path, *project)
    assert result.exit_code == 1, result.output
    assert message.format(tmp=tmp_path) in result.stderr
    assert "Traceback" not in result.output
    assert not fake_master.requests
