"""One way to report a YAML syntax error: ``<name>:<line>:<column>: <problem>``.

Shared by the CLI (config files), the master (submitted configs) and ``master.yaml``.
"""

from __future__ import annotations

import yaml


def yaml_error_line(exc: yaml.YAMLError, name: str) -> str:
    """The error as one line naming ``name`` and, when known, the 1-based line and column."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return f"{name}: {exc}"
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "invalid YAML"
    if mark is None:
        return f"{name}: {problem}"
    return f"{name}:{mark.line + 1}:{mark.column + 1}: {problem}"
