"""Log-policy schemas: ``log_policies``, ``log_policy``, ``log_action`` and the legacy
``{type: cancel_retries|exclude_node}`` actions, as Determined 0.38 defines them.

A policy is modern (``name``, ``pattern``, ``action: cancel_retries``) or legacy (no name,
``pattern`` and ``action: {type: ...}``); a named policy without a pattern disables the
default policy of that name. hpcdet also accepts the newer ``actions: [...]`` list (with
``{signal: ...}`` labels) that its master acts on.
"""

from __future__ import annotations

from hpcdet.expconf._schema_base import (
    Schema,
    message_check,
    named,
    optional,
    ref,
    schema_id,
)

LOG_ACTIONS = ("cancel_retries", "exclude_node")


def _legacy_action(action: str) -> Schema:
    return named(f"log-legacy-action-{action.replace('_', '-')}",
                 f"LogLegacyAction{action.title().replace('_', '')}", {
                     "type": "object", "additionalProperties": False, "required": ["type"],
                     "properties": {"type": {"const": action}}})


LEGACY_ACTIONS = [_legacy_action(action) for action in LOG_ACTIONS]

LOG_ACTION = named("log-action", "LogAction", {"union": {
    "defaultMessage": 'must be one of "cancel_retries" or "exclude_node"',
    "items": [*({"unionKey": "never", "const": action} for action in LOG_ACTIONS),
              *({"unionKey": f"const:type={action}",
                 **ref(f"log-legacy-action-{action.replace('_', '-')}")}
                for action in LOG_ACTIONS)],
}})

_SIGNAL: Schema = {"type": "object", "additionalProperties": False, "required": ["signal"],
                   "properties": {"signal": {"type": "string"}}}
_ACTIONS_ITEM: Schema = {"union": {
    "defaultMessage": 'expect one of the followings: cancel_retries, exclude_node, or an '
                      'object with a single "signal" field',
    "items": [{"unionKey": "singleproperty:signal", **_SIGNAL},
              {"unionKey": "never", **ref("log-action")}]}}

_NAMED_OR_LEGACY = message_check(
    '"name" must be set, and "pattern" is also required unless you intend to disable an '
    "existing policy",
    {"anyOf": [{"required": ["name"]}, {"required": ["pattern", "action"]},
               {"required": ["pattern", "actions"]}]})

_ACTION_AND_ACTIONS = message_check(
    'both the deprecated "action" field and the newer "actions" field are detected',
    {"not": {"required": ["action", "actions"],
             "properties": {"action": {"not": {"type": "null"}},
                            "actions": {"type": "array"}}}})

LOG_POLICY = named("log-policy", "LogPolicy", {
    "type": "object", "additionalProperties": False,
    "properties": {"name": optional("string"),
                   "pattern": optional("string"),
                   "action": {"type": ["string", "object", "null"], "default": None,
                              "optionalRef": schema_id("log-action")},
                   "actions": optional("array", items=_ACTIONS_ITEM),
                   "signal": optional("string")},
    "checks": {**_NAMED_OR_LEGACY["checks"], **_ACTION_AND_ACTIONS["checks"]},
})

LOG_POLICIES = named("log-policies", "LogPoliciesConfig",
                     {"type": "array", "items": ref("log-policy")})

# Determined's default policies (master/pkg/schemas/expconf/const.go): labels shown in the
# web UI; a policy of the same name in the config replaces (or, without pattern, disables) one.
DEFAULT_LOG_POLICIES = (
    {"name": "CUDA OOM", "pattern": ".*CUDA out of memory.*"},
    {"name": "ECC Error", "pattern": ".*uncorrectable ECC error encountered.*"},
)

SCHEMAS = [*LEGACY_ACTIONS, LOG_ACTION, LOG_POLICY, LOG_POLICIES]
