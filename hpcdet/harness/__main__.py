"""``python -m hpcdet.harness``: see :mod:`hpcdet.harness.main`."""

from __future__ import annotations

from hpcdet.harness.main import exit_process, main

if __name__ == "__main__":
    exit_process(main())
