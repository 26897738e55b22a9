"""The ``det`` command line: one module per noun, loaded lazily by the root group.

``det --help`` imports only click and this package's light modules; see
:mod:`hpcdet.cli._lazy`.
"""

from __future__ import annotations

from hpcdet.cli.main import main

__all__ = ["main"]
