"""Read an experiment configuration file before sending it to the master.

The CLI checks only that the file is readable YAML whose top level is a mapping, and
reports a syntax error as ``<path>:<line>:<column>: <problem>`` (1-based). The master
validates the schema and answers with every problem; the CLI sends the original text so
that the master's error lines and the stored configuration match what the user wrote.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

from hpcdet.errors import ConfigError, ValidationError

if TYPE_CHECKING:
    pass


@dataclasses.dataclass(frozen=True)
class ConfigFile:
    """An experiment configuration file: its path, its text, and the parsed mapping."""

    path: str
    text: str
    data: dict[str, Any]


def load_config_file(path: str | os.PathLike[str]) -> ConfigFile:
    """Read and parse ``path``; raise :class:`ConfigError` or :class:`ValidationError`."""
    name = os.fspath(path)
    text = _read_text(name)
    data = parse_yaml(text, name)
    if not isinstance(data, dict):
        found = "an empty document" if data is None else f"a {type(data).__name__}"
        raise ConfigError([f"{name}: the top level must be a mapping, found {found}"],
                          title="invalid experiment configuration")
    return ConfigFile(name, text, data)


def _read_text(name: str) -> str:
    try:
        with open(name, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        raise ValidationError(f"configuration file {name!r} does not exist") from None
    except IsADirectoryError:
        raise ValidationError(f"configuration file {name!r} is a directory") from None
    except UnicodeDecodeError as exc:
        raise ValidationError(f"configuration file {name!r} is not UTF-8 text: {exc}") from None
    except OSError as exc:
        raise ValidationError(f"cannot read configuration file {name!r}: "
                              f"{exc.strerror or exc}") from None


def parse_yaml(text: str, name: str) -> Any:
    """``yaml.safe_load(text)`` within :mod:`hpcdet.safe_yaml`'s limits (aliases, nesting,
    expanded size), with a syntax error turned into one located line."""
    import yaml

    from hpcdet import safe_yaml
    from hpcdet.yaml_errors import yaml_error_line

    try:
        return safe_yaml.load(text)
    except safe_yaml.YamlLimitError as exc:
        raise ConfigError([f"{name}: {exc}"], title="YAML over a limit") from None
    except yaml.YAMLError as exc:
        raise ConfigError([yaml_error_line(exc, name)], title="malformed YAML") from None
