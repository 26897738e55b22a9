"""The architecture's import contracts ([tool.importlinter] in pyproject.toml) hold.

import-linter (a real tool: grimp's import graph of every module, function-level imports
included, and indirect chains) checks each contract; a planted violation in a copy of the
package proves a contract can fail. docs/architecture.md draws the layers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from hang_guard import HANG_GUARD_S

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return list(config["tool"]["importlinter"]["contracts"])


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """Run lint-imports on the ``hpcdet`` package under ``root`` (its pyproject.toml)."""
    if not LINT_IMPORTS.exists():
        pytest.fail("import-linter is not installed (pip install -e '.[dev]')")
    # Wide: a contract's name and its verdict on one line.
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "400"}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", str(root / "pyproject.toml")],
                          cwd=root, env=env,
                          capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)


def test_every_contract_is_kept() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in result.stdout


def test_everything_but_the_master_is_bound_by_the_master_contract() -> None:
    # A new package or top-level module is bound from its first commit, not when someone
    # remembers to add it.
    [contract] = [c for c in _contracts() if c.get("forbidden_modules") == ["hpcdet.master"]]
    sources = set(contract["source_modules"])  # type: ignore[call-overload]
    package = REPO / "hpcdet"
    present = {f"hpcdet.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    present |= {f"hpcdet.{p.parent.name}" for p in package.glob("*/__init__.py")}
    assert present - {"hpcdet.master"} == sources


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package's Python files and pyproject.toml, to plant violations in."""
    root = tmp_path_factory.mktemp("contracts")
    shutil.copytree(REPO / "hpcdet", root / "hpcdet",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "migrations"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


MASTER = "Only the master imports the master"
OPTIONS = "The option engine is scheduler-neutral"
IN_JOB = "The in-job stack in order"
ROOMS = "The master's rooms as layers"


@pytest.mark.parametrize("contract, importer, imported", [
    (MASTER, "hpcdet/job/trial_info.py", "hpcdet.master.models"),
    (MASTER, "hpcdet/cli/main.py", "hpcdet.master.models"),
    (OPTIONS, "hpcdet/dispatcher/options.py", "hpcdet.dispatcher.slurm.sbatch_options"),
    (IN_JOB, "hpcdet/core/_train.py", "hpcdet.harness.main"),
    (IN_JOB, "hpcdet/pytorch/_fit.py", "hpcdet.harness.trial_class"),
    (IN_JOB, "hpcdet/job/trial_info.py", "hpcdet.core._context"),
    (IN_JOB, "hpcdet/harness/entrypoint.py", "hpcdet.launch.torch_distributed"),
    (ROOMS, "hpcdet/master/settings/core.py", "hpcdet.master.api.common"),
    (ROOMS, "hpcdet/master/queue/pools.py", "hpcdet.master.scheduling.submission"),
    (ROOMS, "hpcdet/master/api/trials.py", "hpcdet.master.web.trial"),
])
def test_a_planted_import_breaks_its_contract(package_copy: Path, contract: str,
                                              importer: str, imported: str) -> None:
    module = package_copy / importer
    original = module.read_text()
    module.write_text(original + f"\n\ndef _planted() -> None:\n    import {imported}\n")
    try:
        result = lint_imports(package_copy)
    finally:
        module.write_text(original)
    assert result.returncode != 0
    assert f"Contracts: {len(_contracts()) - 1} kept, 1 broken." in result.stdout
    broken = result.stdout.split("Broken contracts", 1)[1]
    assert broken.lstrip("-\n").startswith(contract)
    dotted = importer.removesuffix(".py").replace("/", ".")
    assert f"{dotted} -> {imported}" in result.stdout
