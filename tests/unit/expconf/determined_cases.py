"""Running one of Determined's expconf test cases against ``hpcdet.expconf``.

The cases (``tests/data/determined/schemas/test_cases/v0/*.yaml``) are Determined's; each is
checked the way Determined's Go runner checks it (``master/pkg/schemas/expconf/
schema_test.go``: ``CheckSaneAs``, ``CheckCompleteAs``, ``CheckSanityErrors``,
``CheckCompletenessErrors``, ``CheckDefaulted``, ``CheckRoundTrip``, ``CheckMerged``). A
schema URL names the config kind: ``.../v0/checkpoint-storage.json`` is
``checkpoint_storage``. Expected errors are regular expressions searched for in the
rendered lines, as Go's ``regexp.MatchString`` does.

Defaulted and merged documents are compared as JSON, with two rules where hpcdet's
documents differ from Go's serialised structs in form only:

* hpcdet names every field of a schema (None when unset); Determined's structs leave some
  unset fields out. A None in hpcdet's document where Determined's has no key matches.
* ``"*"`` marks what Determined's master decides at run time: any non-null value matches,
  as in Determined's runner. Of those, hpcdet's ``with_defaults`` leaves
  :data:`DECIDED_ELSEWHERE` unset (None), and Determined's empty-string defaults of
  :data:`EMPTY_MEANS_UNSET` are None in hpcdet; there None matches too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from hpcdet import expconf

CASES_DIR = Path(__file__).resolve().parents[2] / "data/determined/schemas/test_cases/v0"

# Decided outside with_defaults: the master names the experiment and draws its seed at
# submission (hpcdet/master/scheduling/submission.py); HPC has no default container image
# (a site sets one, or runs without containers).
DECIDED_ELSEWHERE = frozenset({
    "name", "reproducibility.experiment_seed",
    "environment.image.cpu", "environment.image.cuda", "environment.image.rocm",
    "image.cpu", "image.cuda", "image.rocm",
})
# Determined's "" is "not set" (the default pool, workspace, project); hpcdet's is None.
EMPTY_MEANS_UNSET = frozenset({"workspace", "project", "resources.resource_pool",
                               "resource_pool"})


def case_id(path: Path, case: dict[str, Any]) -> str:
    """``file.yaml::case name``, as Determined's runner names its subtests."""
    return f"{path.name}::{case['name']}"


def load_cases() -> Iterator[tuple[str, dict[str, Any]]]:
    """Every case of every file, in file order."""
    for path in sorted(CASES_DIR.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text()):
            yield case_id(path, case), case


def kind_of(url: str) -> str:
    """The config kind a Determined schema URL names."""
    return url.rsplit("/", 1)[1].removesuffix(".json").replace("-", "_")


def problems(case: dict[str, Any]) -> list[str]:
    """Everything about ``case`` that does not hold, one line each (empty: it passes)."""
    doc = case.get("case")
    found: list[str] = []
    for url in case.get("sane_as") or []:
        found += _unexpected(doc, url, "sanity")
    for url in case.get("complete_as") or []:
        found += _unexpected(doc, url, "complete")
    for url, patterns in (case.get("sanity_errors") or {}).items():
        found += _missing(doc, url, patterns, "sanity")
    for url, patterns in (case.get("completeness_errors") or {}).items():
        found += _missing(doc, url, patterns, "complete")
    found += _defaulted(case)
    found += _merged(case)
    return found


def _unexpected(doc: Any, url: str, phase: str) -> list[str]:
    errors = expconf.validate(doc, kind_of(url), phase)
    return [f"{phase} {kind_of(url)}: unexpected errors {errors}"] if errors else []


def _missing(doc: Any, url: str, patterns: list[str], phase: str) -> list[str]:
    errors = expconf.validate(doc, kind_of(url), phase)
    if not errors:
        return [f"{phase} {kind_of(url)}: expected errors, got none"]
    return [f"{phase} {kind_of(url)}: no error matches {pattern!r} in {errors}"
            for pattern in patterns if not any(re.search(pattern, e) for e in errors)]


def _defaulted(case: dict[str, Any]) -> list[str]:
    if "defaulted" not in case and "default_as" not in case:
        return []
    if "defaulted" not in case or "default_as" not in case:
        return ["default_as and defaulted must both be set"]
    if not case.get("sane_as"):
        return ["a defaulted case must name sane_as (Determined's round trip)"]
    got = expconf.with_defaults(case.get("case"), kind_of(case["default_as"]))
    return _compare("defaulted", got, case["defaulted"])


def _merged(case: dict[str, Any]) -> list[str]:
    keys = ("merge_as", "merge_src", "merged")
    if not any(key in case for key in keys):
        return []
    if not all(key in case for key in keys):
        return ["merge_as, merge_src and merged must all be set"]
    url = case["merge_as"]
    found = _unexpected(case.get("case"), url, "sanity")
    found += _unexpected(case["merge_src"], url, "sanity")
    got = expconf.merge(case.get("case"), case["merge_src"], kind_of(url))
    return found + _compare("merged", got, case["merged"])


def _compare(what: str, got: Any, want: Any) -> list[str]:
    got = json.loads(json.dumps(got))  # as JSON, like Determined's runner
    if matches(got, want, ""):
        return []
    return [f"{what}:\n  got  {json.dumps(got, sort_keys=True)}\n"
            f"  want {json.dumps(want, sort_keys=True)}"]


def matches(got: Any, want: Any, path: str) -> bool:
    """Whether hpcdet's document ``got`` is Determined's ``want`` (see the module notes)."""
    if want == "*":
        return got is not None or _leaf(path) in DECIDED_ELSEWHERE
    if want == "" and got is None and _leaf(path) in EMPTY_MEANS_UNSET:
        return True
    if isinstance(want, dict) and isinstance(got, dict):
        extra = [k for k in got if k not in want and got[k] is not None]
        missing = [k for k in want if k not in got]
        return not extra and not missing and all(
            matches(got[k], want[k], f"{path}.{k}") for k in want)
    if isinstance(want, list) and isinstance(got, list):
        return len(got) == len(want) and all(
            matches(g, w, f"{path}[]") for g, w in zip(got, want, strict=True))
    return bool(got == want and type(got) is type(want))


def _leaf(path: str) -> str:
    return path.lstrip(".")
