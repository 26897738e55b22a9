"""The mapping behind the ``determined`` shim: ``determined.X.Y`` *is* ``hpcdet.X.Y``.

:class:`AliasFinder` sits first on :data:`sys.meta_path` and answers every name under
``determined.`` (but the shim's own modules) with the module of the same name under
``hpcdet.``: the very same module object, imported once, so classes, ``isinstance`` checks,
module state and pickles agree whichever spelling a line of code uses. Nothing names a
particular submodule: a module hpcdet adds (``hpcdet.experimental.core_v2``, say) is
``determined.experimental.core_v2`` at once.

``python -m determined.X`` works too: :mod:`runpy` asks the loader for the module's code
(:meth:`AliasLoader.get_code`), which is ``hpcdet/X.py``'s, and runs it as ``__main__``.

A ``determined.X`` with no ``hpcdet.X`` fails with a :class:`ModuleNotFoundError` that says
so (``determined.keras``: hpcdet trains PyTorch only).

This file's name is also how hpcdet recognises the shim without importing it
(:data:`MARKER`, read by ``hpcdet.harness.entrypoint``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import CodeType, ModuleType

SOURCE = "determined"
TARGET = "hpcdet"
MARKER = "_hpcdet_shim.py"
COMPAT_PAGE = "docs/determined-compatibility.md"
# Modules that are the shim's own files, not hpcdet's.
OWN_MODULES = frozenset({SOURCE, __name__})


def target_name(fullname: str) -> str:
    """``hpcdet.X.Y`` for ``determined.X.Y``."""
    return TARGET + fullname[len(SOURCE):]


def _target_spec(name: str) -> importlib.machinery.ModuleSpec | None:
    """The spec of hpcdet's module ``name`` (its parents are imported), or None."""
    module = sys.modules.get(name)
    if module is not None:
        return module.__spec__
    try:
        return importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return None


class AliasLoader(importlib.abc.Loader):
    """Loads ``determined.X`` as hpcdet's already imported (or now imported) ``hpcdet.X``."""

    def __init__(self, target: str, target_spec: importlib.machinery.ModuleSpec) -> None:
        self.target = target
        self.target_spec = target_spec
        self._own_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """hpcdet's module itself: the import system files it under ``determined.X`` too."""
        module = importlib.import_module(self.target)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (hpcdet ran it); put back the spec the import system replaced,
        so ``hpcdet.X`` keeps its own name, package and relative imports."""
        module.__spec__ = self._own_spec or self.target_spec

    def get_code(self, fullname: str) -> CodeType | None:
        """hpcdet's code of the module, for ``python -m determined.X`` (:mod:`runpy`)."""
        loader = self.target_spec.loader
        get_code = getattr(loader, "get_code", None)
        if get_code is None:
            raise ImportError(f"{fullname}: hpcdet's {self.target} has no code to run",
                              name=fullname)
        code: CodeType | None = get_code(self.target)
        return code

    def is_package(self, fullname: str) -> bool:
        """Whether hpcdet's module is a package (:mod:`runpy` then runs its ``__main__``)."""
        return self.target_spec.submodule_search_locations is not None


class AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``determined.X`` as hpcdet's ``hpcdet.X`` (see the module's docstring)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        """The alias spec of ``determined.X``; None for every other name."""
        if not fullname.startswith(SOURCE + ".") or fullname in OWN_MODULES:
            return None
        name = target_name(fullname)
        spec = _target_spec(name)
        if spec is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: the determined shim maps it onto {name!r}, "
                f"which hpcdet does not have (what hpcdet offers: {COMPAT_PAGE})",
                name=fullname)
        return importlib.util.spec_from_loader(
            fullname, AliasLoader(name, spec), origin=spec.origin,
            is_package=spec.submodule_search_locations is not None)


def install() -> AliasFinder:
    """Put one :class:`AliasFinder` first on :data:`sys.meta_path` (idempotent)."""
    for finder in sys.meta_path:
        if isinstance(finder, AliasFinder):
            return finder
    finder = AliasFinder()
    sys.meta_path.insert(0, finder)
    return finder
