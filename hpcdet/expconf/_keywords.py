"""Determined's custom JSON-Schema keywords, as ``jsonschema`` keyword validators.

Determined's experiment-config schemas extend draft-07 with a few keywords (see
``schemas/README.md`` in determined-ai/determined); these are hpcdet's own implementations
of the same semantics, so that the schema data in ``_schema_*`` reads like Determined's:

``union``             like ``oneOf``, but reports the errors of the member whose ``unionKey``
                      matches the instance (e.g. ``const:type=int``), or ``defaultMessage``.
``checks``            ``{message: subschema}``: the message when the subschema fails.
``compareProperties`` ``{type: a<b | a<=b | a_is_subdir_of_b, a, b}`` between two fields.
``conditional``       ``{when|unless: schema, enforce: schema}``: enforce only if ``when`` holds
                      (or ``unless`` fails).
``optionalRef``       ``$ref`` that also accepts null.
``eventuallyRequired`` like ``required``, but only in the completeness phase; null is absent.
``eventually``        a subschema enforced only in the completeness phase.
``disallowProperties`` ``{field: message}``: the message when the field is present.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jsonschema import Draft7Validator as Validator
from jsonschema import ValidationError

Keyword = Callable[[Validator, Any, Any, Mapping[str, Any]], Iterator[ValidationError]]


def union(validator: Validator, spec: Mapping[str, Any], instance: Any,
          schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """Valid when exactly one member is; else the selected member's errors, or the default."""
    selected: list[ValidationError] | None = None
    valid = 0
    for index, member in enumerate(spec["items"]):
        errors = list(validator.descend(instance, member, schema_path=index))
        if not errors:
            valid += 1
        elif selected is None and union_key_matches(member.get("unionKey"), instance):
            selected = errors
    if valid == 1:
        return
    if valid > 1:
        yield ValidationError("matches more than one form (a bug in hpcdet's schema)")
    elif selected:
        yield from selected
    else:
        yield ValidationError(spec.get("defaultMessage", "union failed to validate"))


def union_key_matches(key: str | None, instance: Any) -> bool:
    """Whether a union member's ``unionKey`` says the instance was meant to be that member."""
    if key is None or key == "never":
        return False
    if key == "always":
        return True
    kind, _, arg = key.partition(":")
    if kind == "not":
        return not union_key_matches(arg, instance)
    if kind == "type":
        return isinstance(instance, list if arg == "array" else dict)
    if not isinstance(instance, dict):
        return False
    if kind == "const":
        name, _, value = arg.partition("=")
        return instance.get(name) == value
    if kind == "singleproperty":
        return list(instance) == [arg]
    if kind == "hasattr":
        return arg in instance
    raise ValueError(f"invalid unionKey {key!r}")


def checks(validator: Validator, spec: Mapping[str, Any], instance: Any,
           schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """One error per failing check, worded by the check's message."""
    for message, subschema in spec.items():
        if any(True for _ in validator.descend(instance, subschema)):
            yield ValidationError(message)


def compare_properties(validator: Validator, spec: Mapping[str, Any], instance: Any,
                       schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """Compare two fields of an object; silent when either is absent or null."""
    if not isinstance(instance, dict):
        return
    a, b = _dotted(instance, spec["a"]), _dotted(instance, spec["b"])
    if a is None or b is None:
        return
    kind, a_name, b_name = spec["type"], spec["a"], spec["b"]
    if kind in ("a<b", "a<=b") and _numbers(a, b) and (a >= b if kind == "a<b" else a > b):
        # Determined words both relations the same way.
        yield ValidationError(f"{a_name} must be less than {b_name}")
    elif kind == "a_is_subdir_of_b" and isinstance(a, str) and isinstance(b, str) \
            and not is_subdir(a, b):
        yield ValidationError(f"{a_name} must be a subdirectory of {b_name}")


def _numbers(*values: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def is_subdir(path: str, parent: str) -> bool:
    """A relative ``path`` must stay inside; an absolute one must lie under ``parent``."""
    normal = posixpath.normpath(path)
    if posixpath.isabs(normal):
        base = posixpath.normpath(parent)
        return normal == base or normal.startswith(base.rstrip("/") + "/")
    return normal != ".." and not normal.startswith("../")


def _dotted(instance: Mapping[str, Any], path: str) -> Any:
    node: Any = instance
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def conditional(validator: Validator, spec: Mapping[str, Any], instance: Any,
                schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """Enforce ``enforce`` when ``when`` holds, or when ``unless`` does not."""
    if "when" in spec:
        applies = not any(True for _ in validator.descend(instance, spec["when"]))
    else:
        applies = any(True for _ in validator.descend(instance, spec["unless"]))
    if applies:
        yield from validator.descend(instance, spec["enforce"], schema_path="enforce")


def optional_ref(validator: Validator, ref: str, instance: Any,
                 schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """``$ref`` that accepts null (null means the field is not set)."""
    if instance is not None:
        yield from validator.descend(instance, {"$ref": ref}, schema_path="optionalRef")


def eventually_required(validator: Validator, names: list[str], instance: Any,
                        schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """``required`` for the completeness phase; a null value counts as missing."""
    if isinstance(instance, dict):
        for name in names:
            if instance.get(name) is None:
                yield ValidationError(f"{name} is a required property")


def eventually(validator: Validator, subschema: Any, instance: Any,
               schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """A subschema that only applies once defaults are merged."""
    yield from validator.descend(instance, subschema, schema_path="eventually")


def disallow_properties(validator: Validator, spec: Mapping[str, str], instance: Any,
                        schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """The configured message for each forbidden field present."""
    if isinstance(instance, dict):
        for name, message in spec.items():
            if name in instance:
                yield ValidationError(message)


SANITY: dict[str, Keyword] = {
    "union": union,
    "checks": checks,
    "compareProperties": compare_properties,
    "conditional": conditional,
    "optionalRef": optional_ref,
    "disallowProperties": disallow_properties,
}
COMPLETENESS: dict[str, Keyword] = {
    **SANITY,
    "eventuallyRequired": eventually_required,
    "eventually": eventually,
}
