"""HTTP once, at the edge: below the master's API, web pages and proxy, code refuses a request
with a kind of :mod:`hpcdet.master.errors` (``Invalid``, ``NotFound``, ``Conflict`` ...),
never with an HTTP status; :mod:`hpcdet.master.api.refusals` gives each kind its status.

The scan reads every module below the edge with :mod:`ast` and refuses there: the name
``ApiError`` (an HTTP error, defined, imported or raised), an import of the modules that
map refusals to statuses (:mod:`hpcdet.master.api.errors`, :mod:`hpcdet.master.api.refusals`),
and a refusal built with a number first (``NotFound(404, ...)``: a status smuggled in).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hpcdet.master import errors as domain_errors

ROOT = Path(__file__).resolve().parents[2] / "hpcdet"
# The HTTP edge: the routes, the pages, the proxy, and the app factory that wires them.
EDGE = ("master/api/", "master/web/", "master/proxy/", "master/app.py")
HTTP_MODULES = ("hpcdet.master.api.errors", "hpcdet.master.api.refusals")
KINDS = frozenset(name for name, value in vars(domain_errors).items()
                  if isinstance(value, type) and issubclass(value, domain_errors.DomainError))


def http_at(path: Path) -> list[str]:
    """What in ``path`` speaks HTTP where it should not, one line each."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name | ast.alias | ast.ClassDef | ast.Attribute):
            name = {ast.Name: "id", ast.alias: "name", ast.ClassDef: "name",
                    ast.Attribute: "attr"}[type(node)]
            if getattr(node, name) == "ApiError" or (isinstance(node, ast.alias) and (
                    node.asname == "ApiError" or node.name.endswith(".ApiError"))):
                found.append((line, "ApiError"))
        if isinstance(node, ast.Import):
            found += [(line, f"imports {a.name}") for a in node.names if a.name in HTTP_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            found += [(line, f"imports {m}") for m in sorted(modules & set(HTTP_MODULES))]
        elif isinstance(node, ast.Call) and _called(node) in KINDS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, int):
                found.append((line, f"{_called(node)}({first.value}, ...)"))
    return [f"{line}: {what}" for line, what in sorted(set(found))]


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else \
        func.attr if isinstance(func, ast.Attribute) else ""


def modules_below_the_edge() -> list[Path]:
    return sorted(path for path in ROOT.rglob("*.py")
                  if not str(path.relative_to(ROOT)).startswith(EDGE))


def test_the_edge_is_where_it_is() -> None:
    for place in EDGE:
        assert (ROOT / place).exists(), f"{place} moved: say where the HTTP edge is now"
    assert {"Invalid", "NotFound", "Forbidden", "Conflict"} <= KINDS


@pytest.mark.parametrize("path", modules_below_the_edge(),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_speaks_no_http(path: Path) -> None:
    found = http_at(path)
    assert found == [], (f"{path.relative_to(ROOT)} speaks HTTP below the edge ({found}): "
                         "raise a kind of hpcdet.master.errors; hpcdet.master.api.refusals "
                         "gives it its status")


def test_the_scan_sees_a_planted_violation(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from hpcdet.master.api.errors import ApiError\n"
                      "import hpcdet.master.api.refusals\n"
                      "from hpcdet.master import errors\n"
                      "def f():\n    raise ApiError(409, 'conflict', 'no')\n"
                      "def g():\n    raise errors.NotFound(404, 'not_found', 'no')\n"
                      "text = 'ApiError'\n"
                      "def h():\n    raise errors.NotFound('not_found', 'fine')\n")
    assert http_at(module) == [
        "1: ApiError", "1: imports hpcdet.master.api.errors", "2: imports "
        "hpcdet.master.api.refusals", "5: ApiError", "7: NotFound(404, ...)"]
