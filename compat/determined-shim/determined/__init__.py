"""``determined``, mapped onto hpcdet: code written for Determined runs with no change at all.

This is hpcdet's optional shim (the ``hpcdet-determined-shim`` distribution, from
``compat/determined-shim/`` of hpcdet's repository), not Determined AI's package:

* ``import determined as det`` gives hpcdet's top level under Determined's name:
  ``det.LOG_FORMAT``, ``det.InvalidHP``, ``det.get_cluster_info()``, ``det.core``,
  ``det.pytorch`` ... (whatever ``hpcdet`` offers, looked up on use);
* every ``determined.X.Y`` is the very same module object as ``hpcdet.X.Y``
  (``determined.pytorch.PyTorchTrial is hpcdet.pytorch.PyTorchTrial``), including
  ``python -m determined.launch.torch_distributed``: see :mod:`determined._hpcdet_shim`;
* with Determined's own distribution (``determined``) installed in the same environment,
  importing this package raises :class:`ImportError` saying how to untangle the two.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util

import hpcdet
from determined import _hpcdet_shim

REAL_DISTRIBUTION = "determined"
SHIM_DISTRIBUTION = "hpcdet-determined-shim"


def _refuse_beside_determined() -> None:
    """Raise ImportError when Determined's own distribution is installed here too."""
    try:
        real = importlib.metadata.distribution(REAL_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return
    raise ImportError(
        f"import determined: Determined's own distribution {REAL_DISTRIBUTION!r} "
        f"{real.version} is installed in this environment ({real.locate_file('')}), beside "
        f"hpcdet's {SHIM_DISTRIBUTION!r}, which provides the same import name mapped onto "
        "hpcdet; the two cannot share one environment (they even write the same files). "
        "Fix: uninstall both (`pip uninstall determined hpcdet-determined-shim`) and reinstall "
        f"the one you want: {SHIM_DISTRIBUTION} to run Determined code on hpcdet unchanged, "
        "or determined to use Determined; or keep Determined and write hpcdet code with "
        "hpcdet's own spellings (`import hpcdet as det`, `from hpcdet import pytorch`).",
        name=__name__)


_refuse_beside_determined()
_hpcdet_shim.install()

__version__ = hpcdet.__version__
__all__ = list(hpcdet.__all__)


def _is_hpcdet_module(name: str) -> bool:
    """Whether ``hpcdet.<name>`` is a module (found, not imported)."""
    try:
        return importlib.util.find_spec(f"{_hpcdet_shim.TARGET}.{name}") is not None
    except (ImportError, ValueError):
        return False


def __getattr__(name: str) -> object:
    """hpcdet's top-level name ``name``; a subpackage as ``determined.<name>`` (the same
    module object as ``hpcdet.<name>``), imported on first use as hpcdet does. Either is
    kept as this module's attribute, so it is looked up once."""
    if not name.startswith("__") and _is_hpcdet_module(name):
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        try:
            value = getattr(hpcdet, name)
        except AttributeError:
            raise AttributeError(f"module {__name__!r} (hpcdet's shim) has no attribute "
                                 f"{name!r}: hpcdet has none either") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """This module's names and hpcdet's exported ones."""
    return sorted(set(globals()) | set(hpcdet.__all__))
