"""Run a function right after a module is first imported (a post-import hook).

The harness uses it so that a trial pays for torch (seconds of CPU and ~300 MB a rank)
only when its entrypoint imports torch: the process group is joined, and torch seeded,
at that moment (:mod:`hpcdet.harness.main`). The hook sits first in ``sys.meta_path``
until the module is imported, then removes itself; the module's own loader does the
import, and the function runs once the module has fully executed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

ImportCallback = Callable[[ModuleType], None]


def when_imported(name: str, callback: ImportCallback) -> None:
    """Call ``callback(module)`` once the top-level module ``name`` has been imported.

    At once if it already is. Several callbacks of one module run in the order they were
    given. An exception a callback raises comes out of the ``import`` statement that
    triggered it (and the callbacks after it do not run).
    """
    if "." in name:
        raise ValueError(f"when_imported takes a top-level module, not {name!r}")
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    with _lock:
        _waiting.setdefault(name, []).append(callback)
        if _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)


def pending(name: str) -> bool:
    """Whether a callback still waits for ``name`` to be imported."""
    return bool(_waiting.get(name))


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """Finds a waited-for module with the other finders and wraps its loader."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _waiting:
            return None
        with _lock:
            callbacks = _waiting.pop(fullname, [])
            if not _waiting and self in sys.meta_path:
                sys.meta_path.remove(self)
        # The other finders (this one no longer waits for the name, so it passes).
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None and callbacks:
            spec.loader = _CallbackLoader(spec.loader, callbacks)
        return spec


class _CallbackLoader(importlib.abc.Loader):
    """The module's own loader, then the callbacks; the module keeps its own loader."""

    def __init__(self, loader: importlib.abc.Loader, callbacks: list[ImportCallback]) -> None:
        self._loader = loader
        self._callbacks = callbacks

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # Put the real loader back first: code reading __spec__.loader (importlib.resources)
        # during or after the import must see the module's own.
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        for callback in self._callbacks:
            callback(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


_lock = threading.Lock()
_waiting: dict[str, list[ImportCallback]] = {}
_FINDER = _PostImportFinder()
