"""Determined's own expconf test cases, one test each (the ``determined-cases`` tier).

The cases are Determined's ``schemas/test_cases/v0/*.yaml`` (copied into
``tests/data/determined/schemas/test_cases/v0``, origin in its README); how each is checked
is in ``determined_cases.py``. The cases in :data:`EXCLUDED` cannot apply to hpcdet, each
for the reason given; docs/configuration.md ("Determined's schema test cases") lists the
same. The session ends with a line ``Determined's expconf test cases: N passed of M cases,
K excluded`` (``conftest.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from determined_cases import load_cases, problems

_TEST_ONLY_SCHEMAS = ("exercises test-root.json/test-union.json, schemas that exist only to "
                      "test Determined's Go code generator (no config section uses them)")

# case id -> why it cannot apply to hpcdet.
EXCLUDED: dict[str, str] = {
    "test-structs.yaml::root minimal (valid)": _TEST_ONLY_SCHEMAS,
    "test-structs.yaml::root full (valid)": _TEST_ONLY_SCHEMAS,
    "test-structs.yaml::union unmarshal (valid, type=a)": _TEST_ONLY_SCHEMAS,
    "test-structs.yaml::union unmarshal (valid, type=b)": _TEST_ONLY_SCHEMAS,
}

ALL_CASES = dict(load_cases())
DOCS = Path(__file__).resolve().parents[3] / "docs/configuration.md"


@pytest.mark.parametrize("case", [pytest.param(case, id=case_id)
                                  for case_id, case in ALL_CASES.items()
                                  if case_id not in EXCLUDED])
def test_determined_case(case: dict[str, Any]) -> None:
    found = problems(case)
    assert not found, "\n".join(found)


def test_the_cases_are_all_there() -> None:
    # 16 files, 151 cases in Determined 0.38.1 (commit c1e9c6d7b8).
    assert len(ALL_CASES) == 151


@pytest.mark.parametrize("case_id", sorted(EXCLUDED))
def test_each_exclusion_names_a_case_and_is_documented_with_its_reason(case_id: str) -> None:
    assert case_id in ALL_CASES
    docs = DOCS.read_text()
    assert f"`{case_id}`" in docs

