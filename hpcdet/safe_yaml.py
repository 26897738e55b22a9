"""YAML from users, parsed with limits, and JSON values checked for depth.

``yaml.safe_load`` builds whatever a document describes: an alias bomb (each level an
anchor used nine times by the next) of under 1 KB expands to millions of values, an alias
inside its own anchor (``a: &x {b: *x}``) builds a value that contains itself, and
thousands of nested ``[`` exhaust Python's recursion limit. :func:`load` refuses each of
these before any value is built, with a one-line :class:`YamlLimitError` naming the limit:

- the text is at most :data:`MAX_TEXT_BYTES` long;
- at most :data:`MAX_ALIASES` aliases, nesting at most :data:`MAX_DEPTH` levels deep;
- the document, with every alias expanded, at most :data:`MAX_EXPANDED` units (one per
  value plus one per character of each scalar), of which aliases add at most
  :data:`MAX_ALIAS_GROWTH` to what the text itself spells out, and no alias inside its own
  anchor. (A 300-byte document of nested aliases would otherwise become a 400 KB config,
  stored and copied into every trial.)

:func:`check_depth` applies the same depth limit to an already parsed JSON value,
:func:`find_nul` finds a NUL character and :func:`find_lone_surrogate` half of a UTF-16
surrogate pair, which no string the master stores may hold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import yaml

MAX_TEXT_BYTES = 4 * 1024 * 1024
MAX_ALIASES = 1000
MAX_DEPTH = 100
MAX_EXPANDED = 4 * 1024 * 1024
MAX_ALIAS_GROWTH = 256 * 1024


class YamlLimitError(ValueError):
    """A document over one of the limits; the message says which, in one line."""


class _LimitedLoader(yaml.SafeLoader):
    """A :class:`yaml.SafeLoader` that counts aliases and nesting while composing."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: ANN401 (PyYAML's API)
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise YamlLimitError(f"more than {MAX_ALIASES} aliases (*name){self._line()}")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YamlLimitError(f"nested more than {MAX_DEPTH} levels deep{self._line()}")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _line(self) -> str:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        mark = getattr(event, "start_mark", None)
        return f" (line {mark.line + 1})" if mark is not None else ""


def load(text: str) -> Any:  # noqa: ANN401 (any YAML value)
    """``yaml.safe_load(text)`` within the limits above.

    Raises :class:`YamlLimitError` for a document over a limit and :class:`yaml.YAMLError`
    for one that is not valid YAML.
    """
    if len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise YamlLimitError(f"longer than {MAX_TEXT_BYTES} bytes")
    loader = _LimitedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded(node)
        document = loader.construct_document(node)
    finally:
        loader.dispose()
    where = find_nul(document)
    if where is not None:
        raise YamlLimitError(f"{where or 'the document'}: contains a NUL character (\\0)")
    where = find_lone_surrogate(document)
    if where is not None:
        raise YamlLimitError(f"{where or 'the document'}: contains half of a UTF-16 surrogate "
                             "pair (\\ud800-\\udfff alone), which is not text")
    where = find_non_finite(document)
    if where is not None:
        raise YamlLimitError(f"{where or 'the document'}: NaN and infinite numbers cannot be "
                             "stored (they are not JSON numbers)")
    return document


def _check_expanded(root: yaml.Node) -> None:
    """Refuse a node graph that contains itself, expands past :data:`MAX_EXPANDED`, or
    grows by more than :data:`MAX_ALIAS_GROWTH` through its aliases.

    Iterative depth-first walk; a node's expanded size is computed once, so the walk is
    linear in the number of distinct nodes however often aliases repeat them.
    """
    sizes: dict[int, int] = {}
    written = 0  # the units of each distinct node once: what the text spells out
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = _children(node)
        if children_done:
            on_path.discard(key)
            written += 1
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[key] > MAX_EXPANDED:
                raise YamlLimitError(f"expands (aliases included) to more than {MAX_EXPANDED} "
                                     f"values and characters (line {node.start_mark.line + 1})")
            continue
        if key in sizes:
            continue
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = 1 + len(str(node.value))
            written += sizes[key]
            continue
        on_path.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in on_path:
                raise YamlLimitError("an alias refers to a value that contains it (a "
                                     f"recursive alias, line {child.start_mark.line + 1})")
            if id(child) not in sizes:
                stack.append((child, False))
    if sizes[id(root)] - written > MAX_ALIAS_GROWTH:
        raise YamlLimitError(f"its aliases expand it by {sizes[id(root)] - written} values and "
                             f"characters, more than {MAX_ALIAS_GROWTH}")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    return []


def check_depth(value: object, limit: int = MAX_DEPTH) -> bool:
    """True if ``value`` (lists and dicts, as JSON decodes them) nests at most ``limit``."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if depth > limit:
                return False
            stack.extend((child, depth + 1) for child in item)
    return True


def find_nul(value: object, where: str = "") -> str | None:
    """Where in ``value`` (a parsed YAML or JSON value) a string or key holds a NUL
    character, as a dotted path (``data.name``, ``labels[2]``; ``""`` for the top), or None.

    PostgreSQL's text and JSONB types cannot hold U+0000: such a string must be refused
    before it reaches a query, or the database driver's error becomes a 500.
    """
    for path, item in _walk(value, where):
        if isinstance(item, str) and "\x00" in item:
            return path.replace("\x00", "\\0")
    return None


def find_lone_surrogate(value: object, where: str = "") -> str | None:
    """Where in ``value`` a string or key holds a lone surrogate (U+D800..U+DFFF), as
    :func:`find_nul` names it, or None.

    JSON's ``"\\ud800"`` and YAML's ``"\\ud800"`` escapes parse to such a string, which
    has no UTF-8 form: the database driver's encoding error used to be a 500.
    """
    for path, item in _walk(value, where):
        if isinstance(item, str) and _SURROGATE.search(item):
            return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", path)
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def find_non_finite(value: object, where: str = "") -> str | None:
    """Where in ``value`` a number is NaN or infinite, as :func:`find_nul` names it, or None.

    Python's JSON reader accepts ``NaN`` and ``Infinity``, which are not JSON: PostgreSQL's
    JSONB refuses them, so they must be refused first (a 400, not the driver's 500).
    """
    for path, item in _walk(value, where):
        if isinstance(item, float) and not math.isfinite(item):
            return path
    return None


def _walk(value: object, where: str) -> Iterator[tuple[str, object]]:
    """Every value and mapping key inside ``value`` with its dotted path (a key's path is
    its own entry's)."""
    stack: list[tuple[object, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        yield path, item
        if isinstance(item, dict):
            for key, child in item.items():
                name = f"{path}.{key}" if path else str(key)
                yield name, key
                stack.append((child, name))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
