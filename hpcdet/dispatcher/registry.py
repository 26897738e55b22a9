"""The one place that knows which schedulers exist: name -> :class:`SchedulerPlugin`.

Each scheduler package exports its plug-in as ``PLUGIN`` from its ``__init__``; this module
imports a package only when its scheduler is first asked for. It is the only neutral module
allowed to import a scheduler package (tests/unit/test_architecture_scheduler_neutral.py).
"""

from __future__ import annotations

from collections.abc import Callable

from hpcdet.dispatcher.plugin import SchedulerPlugin


def _slurm() -> SchedulerPlugin:
    from hpcdet.dispatcher.slurm import PLUGIN

    return PLUGIN


def _pbs() -> SchedulerPlugin:
    from hpcdet.dispatcher.pbs import PLUGIN

    return PLUGIN


# Scheduler name -> how to load its plug-in, the default first; a new scheduler is one line
# here and a package.
_LOADERS: dict[str, Callable[[], SchedulerPlugin]] = {"slurm": _slurm, "pbs": _pbs}


def names() -> tuple[str, ...]:
    """Every scheduler hpcdet knows, the default (``resource_manager.type``) first."""
    return tuple(_LOADERS)


def scheduler(name: str) -> SchedulerPlugin:
    """The plug-in of ``name``; ValueError naming the known schedulers otherwise."""
    try:
        load = _LOADERS[name]
    except (KeyError, TypeError):
        known = ", ".join(names())
        raise ValueError(f"unknown resource manager type {name!r} (known: {known})") from None
    return load()
