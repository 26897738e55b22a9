"""Load the trial class an entrypoint names (``model_def:MyTrial``) from the context
(:func:`hpcdet.pytorch.run_trial_class` builds and trains a trial of it).

``model_def`` is a module path relative to the job's context directory (its working
directory), as in Determined. Mistakes a user can fix without a traceback (no such
module, no such class, not a ``PyTorchTrial``, Determined's imports left in place) raise
:class:`TrialClassError` with one line; an exception raised by the module's own code
propagates, since its traceback is what the user needs.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import Any

from hpcdet.harness.entrypoint_error import EntrypointError


class TrialClassError(EntrypointError):
    """The trial class cannot be loaded: missing module or class, or not a PyTorchTrial."""


def load_trial_class(spec: str, context_dir: str | None = None) -> type[Any]:
    """The ``PyTorchTrial`` subclass named by ``spec`` (``module.path:ClassName``).

    ``context_dir`` (default: the working directory) goes first on ``sys.path`` and stays
    there, so data loader workers and unpickling find the user's modules too.
    """
    module_name, _, class_name = spec.partition(":")
    directory = os.path.abspath(context_dir or os.getcwd())
    module = _import_from(directory, module_name, spec)
    trial_class = getattr(module, class_name, None)
    if not isinstance(trial_class, type):
        raise TrialClassError(f"entrypoint {spec}: module {module_name} "
                              f"({module.__file__}) has no class {class_name}")
    _check_is_pytorch_trial(trial_class, spec)
    return trial_class


def _import_from(directory: str, module_name: str, spec: str) -> ModuleType:
    if directory in sys.path:
        sys.path.remove(directory)
    sys.path.insert(0, directory)
    _forget_module_from_elsewhere(module_name, directory)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if not _ours(exc, module_name):
            raise
        raise _not_found_error(exc, directory, module_name, spec) from None


def _ours(exc: ModuleNotFoundError, module_name: str) -> bool:
    """True when the missing module is ``module_name`` (or a package of it) or
    Determined's package: a mistake in the entrypoint or the imports, not in the code."""
    missing = exc.name or ""
    parts = module_name.split(".")
    prefixes = {".".join(parts[:n]) for n in range(1, len(parts) + 1)}
    return missing in prefixes or missing.split(".")[0] == "determined"


def _not_found_error(exc: ModuleNotFoundError, directory: str, module_name: str,
                     spec: str) -> TrialClassError:
    if (exc.name or "").split(".")[0] == "determined":
        return TrialClassError(
            f"entrypoint {spec}: {module_name} imports {exc.name}, which is Determined's: "
            "import from hpcdet instead (`from hpcdet.pytorch import ...`, "
            "`import hpcdet as det`)")
    path = os.path.join(directory, *module_name.split(".")) + ".py"
    return TrialClassError(f"entrypoint {spec}: no module {module_name} in {directory} "
                           f"(looked for {path})")


def _forget_module_from_elsewhere(module_name: str, directory: str) -> None:
    """Drop a same-named module imported from another directory (a second local run in
    one process, e.g. in tests), so this context's file is the one loaded."""
    module = sys.modules.get(module_name)
    where = getattr(module, "__file__", None)
    if module is not None and where and not os.path.abspath(where).startswith(directory + os.sep):
        del sys.modules[module_name]


def _check_is_pytorch_trial(trial_class: type[Any], spec: str) -> None:
    from hpcdet.pytorch import PyTorchTrial

    if not issubclass(trial_class, PyTorchTrial):
        raise TrialClassError(f"entrypoint {spec}: {trial_class.__name__} is not a subclass "
                              "of hpcdet.pytorch.PyTorchTrial (only PyTorch trial classes "
                              "are supported)")
