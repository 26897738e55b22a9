"""An AST scan for code that writes a lifecycle ``state`` outside the one transition function.

Every form that could set an experiment's, a trial's or a command task's state counts:
``x.state = ...`` (also augmented, annotated and unpacking assignments),
``setattr(x, "state", ...)``, a lifecycle model built with ``state=``, and ``state`` handed
to a write on a lifecycle model or table: ``update(Trial).values(state=...)``,
``insert(Trial).values({"state": ...})``, ``session.execute(update(Trial), [dict(state=...)])``,
``session.query(Trial).update({"state": ...})``, ``bulk_update_mappings(Trial, [...])`` and raw
``UPDATE trials SET state = ...`` text. A write whose target cannot be read off the statement
(``stmt.values(state=...)``) counts too: a guard that guesses in the code's favour can't fail.
Other models' own ``state`` columns (a checkpoint's ACTIVE/DELETED) are not lifecycle states.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Calls that write rows: their ``state`` payload sets a state when their target is lifecycle.
_WRITES = {"values", "ordered_values", "update", "insert", "execute", "bulk_update_mappings",
           "bulk_insert_mappings"}
# Calls whose first argument names the model or table a statement writes.
_TARGETING = {"update", "insert", "query", "bulk_update_mappings", "bulk_insert_mappings",
              "table"}
_SQL = re.compile(r"\b(?:update\s+(\w+)\s+set\b[^;]*\bstate\s*=|insert\s+into\s+(\w+)\s*\("
                  r"[^)]*\bstate\b)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Models:
    """Names of the lifecycle models and their tables, and of every other mapped model."""

    lifecycle: frozenset[str]
    others: frozenset[str]


def offenders(package: Path, allowed: set[Path], models: Models) -> list[str]:
    """``path:line: what`` for each state write in ``package`` outside the ``allowed`` files."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.resolve() in allowed:
            continue
        for line, what in scan(path.read_text(), models):
            found.append(f"{path.relative_to(package)}:{line}: {what}")
    return found


def scan(source: str, models: Models) -> Iterator[tuple[int, str]]:
    """Line and description of each lifecycle state write in ``source``."""
    tree = ast.parse(source)
    known = models.lifecycle | models.others
    aliases = {name: model for name, model in _module_aliases(tree, known)}
    for node in ast.walk(tree):
        what = _assigned(node) or _setattr(node) or _call_write(node, models, aliases) \
            or _sql_write(node, models)
        if what:
            yield getattr(node, "lineno", 0), what


def _module_aliases(tree: ast.Module, known: frozenset[str]) -> Iterator[tuple[str, str]]:
    """``_TRIALS = cast(Table, Trial.__table__)``: module names that stand for a model."""
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) \
                else [statement.target]
            named = [n for part in ast.walk(statement.value)
                     if isinstance(part, ast.expr) and (n := _name(part)) in known]
            if len(named) == 1 and len(targets) == 1 and isinstance(targets[0], ast.Name):
                yield targets[0].id, named[0]


def _assigned(node: ast.AST) -> str | None:
    """``x.state = ...`` in any assignment form, including ``a, x.state = ...``."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    else:
        return None
    for target in targets:
        for part in ast.walk(target):
            if isinstance(part, ast.Attribute) and part.attr == "state" \
                    and isinstance(part.ctx, ast.Store):
                return "assigns .state"
    return None


def _setattr(node: ast.AST) -> str | None:
    """``setattr(x, "state", ...)``, or a column setter such as ``self._set("state", ...)``."""
    if not isinstance(node, ast.Call):
        return None
    name = _name(node.func) or ""
    names = [a.value for a in node.args[:2] if isinstance(a, ast.Constant)]
    if "state" in names and (name == "setattr" or name.strip("_").startswith("set")):
        return f"{name}(..., 'state', ...)"
    return None


def _call_write(node: ast.AST, models: Models, aliases: dict[str, str]) -> str | None:
    """A lifecycle constructor, or a row write on a lifecycle (or unknown) target, given state.

    A helper of the code's own (``insert_ignoring_conflict(conn, _TRIALS, {...})``) counts
    when a lifecycle model is among its arguments.
    """
    if not isinstance(node, ast.Call) or not _carries_state(node):
        return None
    name = _name(node.func)
    if name in models.lifecycle:
        return f"{name}(state=...)"
    if name not in _WRITES:
        named = {aliases.get(n, n) for n in map(_name, node.args) if n}
        hit = sorted(named & models.lifecycle)
        return f"{name}(... state ...) on {hit[0]}" if hit else None
    target = _target(node)
    target = aliases.get(target, target) if target else None
    if target in models.others:
        return None
    return f"{name}(... state ...) on {target or 'an unknown target'}"


def _sql_write(node: ast.AST, models: Models) -> str | None:
    """Raw SQL text that updates or inserts a lifecycle table's ``state`` column."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        for match in _SQL.finditer(node.value):
            table = match.group(1) or match.group(2)
            if table.lower() in models.lifecycle:
                return f"SQL writes {table}.state"
    return None


def _carries_state(call: ast.Call) -> bool:
    """Whether ``call`` passes a ``state`` value: keyword, ``**{...}`` or a row mapping."""
    for keyword in call.keywords:
        if keyword.arg == "state" or (keyword.arg is None and _is_state_row(keyword.value)):
            return True
    return any(_is_state_row(arg) for arg in call.args)


def _is_state_row(node: ast.expr) -> bool:
    """``{"state": ...}``, ``dict(state=...)``, or a list/tuple of them."""
    if isinstance(node, ast.Dict):
        return any(isinstance(k, ast.Constant) and k.value == "state" for k in node.keys)
    if isinstance(node, ast.Call) and _name(node.func) == "dict":
        return any(k.arg == "state" for k in node.keywords)
    if isinstance(node, ast.List | ast.Tuple):
        return any(_is_state_row(e) for e in node.elts)
    return False


def _target(node: ast.expr) -> str | None:
    """The model or table a write statement chain names (``update(Trial).where(...)`` etc.)."""
    while True:
        if isinstance(node, ast.Call):
            name = _name(node.func)
            # query(Trial).update({"state": ...}): a mapping argument is the payload; go on.
            if name in _TARGETING and node.args and not _is_state_row(node.args[0]):
                return _model(node.args[0])
            if name == "execute" and node.args:
                return _target(node.args[0])
            node = node.func
        elif isinstance(node, ast.Attribute):
            if node.attr == "__table__":
                return _model(node.value)
            node = node.value
        else:
            return None


def _model(node: ast.expr) -> str | None:
    """``Trial``, ``models.Trial``, ``Trial.__table__`` or ``"trials"`` as a name."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Attribute) and node.attr == "__table__":
        return _model(node.value)
    if isinstance(node, ast.Call):
        return _target(node)
    return _name(node)


def _name(node: ast.expr) -> str | None:
    """The last name of ``a.b.c`` or ``c``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
