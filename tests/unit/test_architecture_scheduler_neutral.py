"""The master, the web pages and ``det`` know no scheduler: they import no Slurm or PBS module.

They reach schedulers only through :mod:`hpcdet.dispatcher`'s neutral interface (the
``Backend`` methods, :mod:`hpcdet.dispatcher.batch_args`, :mod:`hpcdet.dispatcher.queue`,
:mod:`hpcdet.dispatcher.pools`, :mod:`hpcdet.dispatcher.tags`, ...). That interface is
neutral too: the dispatcher's own modules (``hpcdet/dispatcher/*.py``, ``transport/``)
reach a scheduler package only through :mod:`hpcdet.dispatcher.registry`, the one module
that loads the plug-ins (lazily). The scan reads every
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
# The neutral dispatcher's one door to the scheduler packages, named with the reason.
DISPATCHER_EXCEPTIONS = {
    "dispatcher/registry.py": "loads each scheduler package's plug-in, on first use",
}


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


def neutral_dispatcher_modules(root: Path = ROOT) -> list[Path]:
    """The dispatcher's scheduler-neutral modules: its own files and its transports."""
    dispatcher = root / "dispatcher"
    return sorted([*dispatcher.glob("*.py"), *(dispatcher / "transport").rglob("*.py")])


def dispatcher_violations(root: Path = ROOT) -> dict[str, list[str]]:
    """Each neutral dispatcher module (but the registry) that imports a scheduler module."""
    found = {str(path.relative_to(root)): scheduler_imports(path)
             for path in neutral_dispatcher_modules(root)}
    return {name: imports for name, imports in found.items()
            if imports and name not in DISPATCHER_EXCEPTIONS}


def test_the_neutral_dispatcher_imports_no_scheduler_but_through_the_registry() -> None:
    assert dispatcher_violations() == {}, "use hpcdet.dispatcher.registry's plug-ins"
    for name in DISPATCHER_EXCEPTIONS:
        assert scheduler_imports(ROOT / name), f"{name} imports no scheduler: drop it"


def test_a_planted_scheduler_import_in_the_neutral_dispatcher_is_found(tmp_path: Path) -> None:
    for path in neutral_dispatcher_modules():
        copy = tmp_path / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(path.read_text())
    assert dispatcher_violations(tmp_path) == {}
    planted = tmp_path / "dispatcher" / "jobdir.py"
    planted.write_text(planted.read_text() + "\n\ndef _planted() -> None:\n"
                       "    from hpcdet.dispatcher.pbs import reasons\n")
    transport = tmp_path / "dispatcher" / "transport" / "local.py"
    transport.write_text(transport.read_text() + "\nimport hpcdet.dispatcher.slurm.queue\n")
    assert dispatcher_violations(tmp_path) == {
        "dispatcher/jobdir.py": ["hpcdet.dispatcher.pbs", "hpcdet.dispatcher.pbs.reasons"],
        "dispatcher/transport/local.py": ["hpcdet.dispatcher.slurm.queue"]}


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
