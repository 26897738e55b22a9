"""Fixtures for the hpcdet.pytorch tests (helpers live in pytorch_trials.py, rank_worker.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hpcdet.core import _context, _preempt


@pytest.fixture(autouse=True)
def _clean_core_state() -> Iterator[None]:
    """No preemption flag or open context leaks from one test into the next."""
    _preempt._reset_for_tests()
    yield
    _preempt._reset_for_tests()
    _context.close_open_contexts()
