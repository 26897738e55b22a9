"""Import jsonschema without its optional IRI format checker, which costs 2.5 s.

jsonschema's import registers every optional format checker that is installed. One of
them, rfc3987-syntax, builds a Lark grammar at import: 2.5 s of CPU on a 2-core VM. It is
installed wherever Jupyter is (jupyter-events asks for ``jsonschema[format-nongpl]``), so
a master host with the notebook extra paid it in the master, in each web worker and in
every ``det`` command that validates a config.

hpcdet's schemas check no ``format``, so importing this module (``hpcdet.expconf`` does
it before its other modules) imports jsonschema with rfc3987-syntax hidden. jsonschema then
checks no ``iri`` format in this process, as when the package is absent; rfc3987-syntax
itself stays importable for any other code.
"""

from __future__ import annotations

import sys

_HIDDEN = "rfc3987_syntax"


def import_jsonschema_quickly() -> None:
    """Import jsonschema (if no one has yet) with rfc3987-syntax hidden from it."""
    if "jsonschema" in sys.modules or _HIDDEN in sys.modules:
        return
    sys.modules[_HIDDEN] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        import jsonschema  # noqa: F401
    finally:
        if sys.modules.get(_HIDDEN, False) is None:
            del sys.modules[_HIDDEN]


import_jsonschema_quickly()
