"""hpcdet.expconf imports jsonschema without rfc3987-syntax's 2.5 s grammar build."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from hang_guard import HANG_GUARD_S

PROBE = """
import sys
import hpcdet.expconf
print("jsonschema" in sys.modules, "rfc3987_syntax" in sys.modules)
print(hpcdet.expconf.validate({"resources": {"slots_per_trial": "two"}}))
import rfc3987_syntax
print(rfc3987_syntax.is_valid_syntax("iri", "http://example.org/a"))
"""


@pytest.mark.skipif(importlib.util.find_spec("rfc3987_syntax") is None,
                    reason="rfc3987-syntax is not installed (it comes with Jupyter)")
def test_expconf_leaves_rfc3987_syntax_unimported_but_importable() -> None:
    ran = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         timeout=HANG_GUARD_S, check=True)
    assert ran.stdout.splitlines() == [
        "True False", "[\"<config>.resources.slots_per_trial: must be an integer, got 'two'\"]",
        "True"]
