"""Reading the experiment configuration file before it is sent to the master."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcdet.cli.config_file import load_config_file
from hpcdet.errors import ConfigError, ValidationError


def test_keeps_the_original_text(tmp_path: Path) -> None:
    text = "# my experiment\nname: mnist   # trailing comment\nhyperparameters: {lr: 0.1}\n"
    path = tmp_path / "c.yaml"
    path.write_text(text)
    config = load_config_file(path)
    assert config.text == text
    assert config.data == {"name": "mnist", "hyperparameters": {"lr": 0.1}}


@pytest.mark.parametrize("text, location, problem", [
    ("name: mnist\nresources:\n  slots: 2\n bad: 1\n", "4:2", "expected <block end>"),
    ("name: mnist\nentrypoint: a: b\n", "2:14", "mapping values are not allowed here"),
    ("hyperparameters: {lr: 0.1\n", "2:1", "expected ',' or '}'"),
    ("name: [1, 2\n", "2:1", "expected ',' or ']'"),
])
def test_malformed_yaml_names_line_and_column(tmp_path: Path, text: str, location: str,
                                              problem: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config_file(path)
    assert caught.value.title == "malformed YAML"
    [line] = caught.value.errors
    assert line.startswith(f"{path}:{location}: {problem}")


@pytest.mark.parametrize("text, found", [
    ("", "an empty document"), ("- a\n- b\n", "a list"), ("just text\n", "a str")])
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str, found: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=f"top level must be a mapping, found {found}"):
        load_config_file(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"configuration file '.*nope\.yaml' does not"):
        load_config_file(tmp_path / "nope.yaml")


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="is a directory"):
        load_config_file(tmp_path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"name: \xff\xfe\n")
    with pytest.raises(ValidationError, match="not UTF-8"):
        load_config_file(path)
