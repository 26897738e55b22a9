"""The compat tier's diff rule is strict: only imports and marked dataset lines may change."""

from __future__ import annotations

import pytest
from tutorials import REGION_BEGIN, REGION_END, disallowed_changes

pytestmark = pytest.mark.compat

ORIGINAL = [
    "import os",
    "import determined as det",
    "from determined.pytorch import Trainer",
    "ds = datasets.MNIST('../data', train=True)",
    "cmd = ['python3', '-m', 'determined.launch.wrap_rank', '0']",
    "lr = 0.1",
]
ALLOWED = [
    "import os",
    "import hpcdet as det",
    "from hpcdet.pytorch import Trainer",
    "from synthetic_mnist import MNIST",
    REGION_BEGIN,
    "ds = MNIST('../data', train=True)",
    REGION_END,
    "cmd = ['python3', '-m', 'hpcdet.launch.wrap_rank', '0']",
    "lr = 0.1",
]
PATTERNS = [r"datasets\.MNIST\("]


def test_imports_renamed_and_a_marked_dataset_line_are_allowed() -> None:
    assert disallowed_changes(ORIGINAL, ALLOWED, dataset_patterns=PATTERNS) == []


@pytest.mark.parametrize("index,line", [
    (8, "lr = 0.2"),                                   # a code change
    (1, "import hpcdet as det  # changed"),            # more than the rename
    (7, "cmd = ['python3', '-m', 'hpcdet.launch.wrap_rank', '1']"),
])
def test_any_other_change_of_a_line_is_reported(index: int, line: str) -> None:
    copy = list(ALLOWED)
    copy[index] = line
    assert disallowed_changes(ORIGINAL, copy, dataset_patterns=PATTERNS)


def test_a_region_may_only_replace_lines_matching_a_dataset_pattern() -> None:
    copy = [*ALLOWED[:8], REGION_BEGIN, "lr = 0.2", REGION_END]
    problems = disallowed_changes(ORIGINAL, copy, dataset_patterns=PATTERNS)
    assert any("matches no dataset pattern" in p and "lr = 0.1" in p for p in problems)


def test_a_region_without_patterns_is_refused() -> None:
    assert disallowed_changes(ORIGINAL, ALLOWED)


def test_an_added_line_or_an_unclosed_region_is_reported() -> None:
    assert disallowed_changes(ORIGINAL, [*ALLOWED, "print('extra')"], dataset_patterns=PATTERNS)
    assert disallowed_changes(ORIGINAL, [*ALLOWED[:5], "x = 1"], dataset_patterns=PATTERNS)


def test_declared_changes_allow_exactly_that_line() -> None:
    original, copy = ["a: 1", "b: 2"], ["a: 1", "b: 3"]
    assert disallowed_changes(original, copy)
    assert disallowed_changes(original, copy, declared_changes=[("b: 2", "b: 3")]) == []
