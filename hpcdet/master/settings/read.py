"""Typed reads from a parsed YAML mapping, each bad value adding one error that names its key."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def unknown_keys(doc: Mapping[str, Any], known: set[str], where: str, errors: list[str]) -> None:
    """Add an error for each key of ``doc`` not in ``known``."""
    for key in sorted(set(doc) - known):
        errors.append(f"{where}.{key}: unknown key (known: {', '.join(sorted(known))})")


class Getter:
    """Typed reads from one mapping; each bad value adds one error naming its key."""

    def __init__(self, doc: Mapping[str, Any], where: str, errors: list[str]) -> None:
        self.doc, self.where, self.errors = doc, where, errors

    def _get(self, key: str, default: Any, ok: Callable[[Any], bool], want: str) -> Any:
        value = self.doc.get(key)
        if value is None:
            return default
        if not ok(value):
            self.errors.append(f"{self.where}.{key}: must be {want}, got {value!r}")
            return default
        return value

    def section(self, key: str) -> dict[str, Any]:
        return dict(self._get(key, {}, lambda v: isinstance(v, dict), "a mapping"))

    def text(self, key: str, default: str) -> str:
        return str(self._get(key, default, lambda v: isinstance(v, str) and v != "",
                             "a non-empty string"))

    def opt_text(self, key: str) -> str | None:
        value = self._get(key, None, lambda v: isinstance(v, str), "a string")
        return str(value) if value else None

    def names(self, key: str) -> tuple[str, ...]:
        """A list of non-empty strings (user names, ...); absent is empty."""
        value = self._get(key, [], lambda v: isinstance(v, list) and all(
            isinstance(x, str) and x.strip() for x in v), "a list of non-empty strings")
        return tuple(str(x).strip() for x in value)

    def flag(self, key: str, default: bool) -> bool:
        return bool(self._get(key, default, lambda v: isinstance(v, bool), "true or false"))

    def integer(self, key: str, default: int, *, lo: int, hi: int) -> int:
        return int(self._get(key, default, lambda v: _is_int(v) and lo <= v <= hi,
                             f"an integer from {lo} to {hi}"))

    def opt_integer(self, key: str, *, lo: int, hi: int) -> int | None:
        value = self._get(key, None, lambda v: _is_int(v) and lo <= v <= hi,
                          f"an integer from {lo} to {hi}")
        return None if value is None else int(value)

    def number(self, key: str, default: float, *, lo: float) -> float:
        return float(self._get(key, default,
                               lambda v: isinstance(v, int | float) and not isinstance(v, bool)
                               and v >= lo, f"a number >= {lo}"))

    def opt_choice(self, key: str, choices: tuple[str, ...]) -> str | None:
        value = self._get(key, None, lambda v: v in choices, f"one of {', '.join(choices)}")
        return None if value is None else str(value)

    def choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        return str(self._get(key, default, lambda v: v in choices,
                             f"one of {', '.join(choices)}"))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
