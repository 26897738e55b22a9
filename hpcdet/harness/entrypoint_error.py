"""The error of an entrypoint the harness cannot run, apart from :mod:`.entrypoint`.

:mod:`.trial_class` derives its error from it, and :mod:`.entrypoint` loads trial classes
through :mod:`.trial_class`: with the class here, neither module imports the other both ways.
"""

from __future__ import annotations

from hpcdet.errors import HpcdetError


class EntrypointError(HpcdetError):
    """The entrypoint is missing, unsupported, or names a file that does not exist."""
