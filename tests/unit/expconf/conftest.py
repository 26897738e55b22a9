"""The pass count of Determined's expconf test cases, printed at the end of the session."""

from __future__ import annotations

from collections import Counter

import pytest

_TIER = "test_determined_cases.py::test_determined_case["
_outcomes: Counter[str] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count each case once: its call phase, or the phase that failed or skipped it."""
    if _TIER not in report.nodeid:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _outcomes[report.outcome] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """``Determined's expconf test cases: N passed of M cases, K excluded``."""
    if not _outcomes:
        return
    from test_determined_cases import ALL_CASES, EXCLUDED

    ran = sum(_outcomes.values())
    terminalreporter.write_line(
        f"Determined's expconf test cases: {_outcomes['passed']} passed of {len(ALL_CASES)} "
        f"cases, {len(EXCLUDED)} excluded ({ran} run here)")
