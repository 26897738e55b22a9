"""The master, the web pages and ``det`` know no scheduler: they import no Slurm or PBS module.

They reach schedulers only through :mod:`hpcdet.dispatcher`'s neutral interface (the
``Backend`` methods, :mod:`hpcdet.dispatcher.batch_args`, :mod:`hpcdet.dispatcher.queue`,
:mod:`hpcdet.dispatcher.pools`, :mod:`hpcdet.dispatcher.tags`, ...). The scan reads every
module's imports (``import x``, ``from x import y``, ``from hpcdet.dispatcher import slurm``)
with :mod:`ast`, so a string mentioning a module is not an import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "hpcdet"
SCHEDULER_PACKAGES = ("hpcdet.dispatcher.slurm", "hpcdet.dispatcher.pbs")
# Modules still allowed a scheduler import, named with the reason (none left: det sbatch and
# det qsub reach their schedulers through hpcdet.dispatcher.batch_commands and
# hpcdet.dispatcher.tasks).
KNOWN_EXCEPTIONS: dict[str, str] = {}


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, with ``from a import b`` also giving ``a.b``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def scheduler_imports(path: Path) -> list[str]:
    """The scheduler-specific modules among ``path``'s imports."""
    return sorted(name for name in imported_modules(path)
                  if any(name == pkg or name.startswith(pkg + ".") for pkg in SCHEDULER_PACKAGES))


def neutral_modules() -> list[Path]:
    return sorted([*(ROOT / "master").rglob("*.py"), *(ROOT / "cli").rglob("*.py")])


@pytest.mark.parametrize("path", neutral_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_no_scheduler_module(path: Path) -> None:
    relative = str(path.relative_to(ROOT))
    found = scheduler_imports(path)
    if relative in KNOWN_EXCEPTIONS:
        assert found, f"{relative} no longer imports a scheduler: drop it from the exceptions"
        return
    assert found == [], f"{relative} imports {found}: use hpcdet.dispatcher's neutral interface"


def test_the_scan_sees_every_import_form(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import hpcdet.dispatcher.slurm.queue\n"
                      "from hpcdet.dispatcher import pbs\n"
                      "from hpcdet.dispatcher.slurm.reasons import REASONS\n"
                      "def f():\n    from hpcdet.dispatcher.pbs.backend import PbsBackend\n"
                      "text = 'hpcdet.dispatcher.slurm'\n")
    assert scheduler_imports(module) == [
        "hpcdet.dispatcher.pbs", "hpcdet.dispatcher.pbs.backend",
        "hpcdet.dispatcher.pbs.backend.PbsBackend", "hpcdet.dispatcher.slurm.queue",
        "hpcdet.dispatcher.slurm.reasons", "hpcdet.dispatcher.slurm.reasons.REASONS"]
