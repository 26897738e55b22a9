"""What a model registry request may send: names, texts, metadata and labels, each checked
with one message naming the field (an ``hpcdet.master.errors.Invalid``)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from hpcdet.master.errors import Invalid

MAX_NAME = 256
MAX_LABEL = 255
MAX_LABELS = 100
MAX_TEXT = 65536
# Determined's rules (master/internal/api_model.go clearModelName), plus a length limit
# and no control characters (names go into tables, URLs and terminals).
_ONLY_DIGITS = re.compile(r"\d+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def bad(message: str) -> Invalid:
    return Invalid("bad_request", message)


def only_known(body: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """Invalid naming the first field the request may not send."""
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise bad(f"{unknown[0]}: not a field of this request (allowed: "
                  f"{', '.join(sorted(allowed))})")


def model_name(value: Any) -> str:
    """A model name as Determined allows it: not blank, no double spaces, no slashes, not
    only digits (a number names a model by id)."""
    if not isinstance(value, str):
        raise bad("name: must be a string (the model's name)")
    if not value.replace(" ", ""):
        raise bad("name: model names cannot be blank")
    if len(value) > MAX_NAME:
        raise bad(f"name: at most {MAX_NAME} characters")
    if "  " in value:
        raise bad("name: model names cannot have excessive spacing (two spaces in a row)")
    if "/" in value or "\\" in value:
        raise bad("name: model names cannot have slashes")
    if _ONLY_DIGITS.fullmatch(value):
        raise bad("name: model names cannot be only numbers")
    if _CONTROL.search(value):
        raise bad("name: model names cannot have control characters")
    return value


def text(body: Mapping[str, Any], key: str, default: str = "", limit: int = MAX_TEXT) -> str:
    """``body[key]`` as a string (``default`` when absent or null), at most ``limit`` long."""
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise bad(f"{key}: must be a string")
    if len(value) > limit:
        raise bad(f"{key}: at most {limit} characters")
    return value


def metadata(value: Any, key: str = "metadata") -> dict[str, Any]:
    """A metadata document: a JSON object (anything inside it)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad(f"{key}: must be a JSON object (got {type(value).__name__})")
    _check_finite(value, key)
    return value


def _check_finite(value: Any, where: str) -> None:
    """Invalid for NaN or Infinity anywhere inside: Python's JSON reads them, PostgreSQL's JSONB
    and every strict JSON reader refuse them."""
    if isinstance(value, float) and not math.isfinite(value):
        raise bad(f"{where}: {value} is not a JSON number (NaN and Infinity are not JSON)")
    if isinstance(value, dict):
        for name, item in value.items():
            _check_finite(item, f"{where}.{name}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_finite(item, f"{where}[{index}]")


def merged_metadata(current: Mapping[str, Any], change: Any) -> dict[str, Any]:
    """``current`` with the top-level keys of ``change`` set; a key set to null is removed
    (Determined's SDK ``add_metadata`` / ``remove_metadata`` in one request)."""
    merged = dict(current)
    for key, value in metadata(change).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def labels(value: Any) -> list[str]:
    """A list of label strings, duplicates dropped (first kept), order kept."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad("labels: must be a list of strings")
    if len(value) > MAX_LABELS:
        raise bad(f"labels: at most {MAX_LABELS}")
    seen: list[str] = []
    for index, label in enumerate(value):
        if not isinstance(label, str) or not label.strip():
            raise bad(f"labels[{index}]: must be a non-empty string")
        if len(label) > MAX_LABEL or _CONTROL.search(label):
            raise bad(f"labels[{index}]: at most {MAX_LABEL} characters, no control "
                      "characters")
        if label not in seen:
            seen.append(label)
    return seen


def version_number(value: Any) -> int:
    """A version number from a path or a query (1, 2, ...)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad("version: must be a whole number, 1 or more")
    return value
