"""``python -m hpcdet.harness``: see :mod:`hpcdet.harness.main`."""

from __future__ import annotations

from hpcdet.harness.main import main

if __name__ == "__main__":
    raise SystemExit(main())
