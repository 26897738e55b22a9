"""What the packages promise (docs/admin/packages.md): one version, reported alike by the
installed metadata, ``det version`` and ``GET /api/v1/master``; every extra the docs tell
people to install exists. (The wheel itself is built and installed by
tests/integration/test_it_packaging.py.)"""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

import pytest
import tomllib
from click.testing import CliRunner
from flask.testing import FlaskClient

import hpcdet
from hpcdet.cli.main import cli

REPO = Path(__file__).resolve().parents[3]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
#: ``hpcdet[x,y]``, ``.[x]`` or ``<wheel>.whl[x]``: an extra as a pip command names it.
EXTRA_MENTION = re.compile(r"(?:\bhpcdet|(?<![\w\])])\.|\.whl)\[([a-z][a-z0-9_,-]*)\]")
#: "There is no `hpcdet[x]` extra": a name the docs say does not exist.
DENIED = re.compile(r"\bno `hpcdet\[([a-z0-9_-]+)\]` extra")


def _documents() -> list[Path]:
    """README, docs and the image recipes: where an install command may name an extra."""
    docs = sorted((REPO / "docs").rglob("*.md"))
    return [REPO / "README.md", *docs, REPO / "singularity" / "README.md",
            REPO / "singularity" / "hpcdet.def", REPO / "singularity" / "recipe.sh"]


def _mentioned_extras() -> dict[str, list[str]]:
    """Each extra named by an install spec in the documents, with where (file:line)."""
    found: dict[str, list[str]] = {}
    for path in _documents():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            denied = set(DENIED.findall(line))
            for match in EXTRA_MENTION.finditer(line):
                for name in match.group(1).split(","):
                    if name not in denied:
                        where = f"{path.relative_to(REPO)}:{number}"
                        found.setdefault(name.strip(), []).append(where)
    return found


def test_the_version_is_written_once() -> None:
    """pyproject takes the version from hpcdet/__init__.py; nothing else states it."""
    assert "version" not in PYPROJECT["project"]
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    dynamic = PYPROJECT["tool"]["setuptools"]["dynamic"]
    assert dynamic["version"] == {"attr": "hpcdet.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+(?:[.-]?\w+)?", hpcdet.__version__)


def test_det_version_and_the_master_report_the_installed_version(
        client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's and the master's version are the installed distribution's (metadata
    setuptools wrote from ``hpcdet.__version__``)."""
    installed = importlib.metadata.version("hpcdet")
    assert client.get("/api/v1/master").get_json()["version"] == installed
    # No master at this address: det version still reports its own.
    monkeypatch.setenv("DET_MASTER", "http://127.0.0.1:9")
    result = CliRunner().invoke(cli, ["version", "--json"], prog_name="det")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["client"]["version"] == installed == hpcdet.__version__


def test_every_documented_extra_exists() -> None:
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    mentioned = _mentioned_extras()
    # The master's, the jobs' and the notebook's installs at least are documented.
    assert {"master", "train", "notebook", "tensorboard", "s3"} <= set(mentioned)
    unknown = {name: where for name, where in mentioned.items() if name not in extras}
    assert not unknown, f"extras the docs name that pyproject.toml lacks: {unknown}"


def test_an_extra_the_docs_deny_does_not_exist() -> None:
    denied = {name for path in _documents() for name in DENIED.findall(path.read_text())}
    assert denied == {"determined"}
    assert not denied & set(PYPROJECT["project"]["optional-dependencies"])
