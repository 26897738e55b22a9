"""Schemas of Determined's sections that have no counterpart on HPC: ``integrations``
(Pachyderm, webhooks), ``security`` (Kerberos) and the deprecated ``tensorboard_storage``.

They are validated as Determined validates them, so a Determined config moves over with
them intact; hpcdet does not act on them (they are warned about at submission).
"""

from __future__ import annotations

from hpcdet.expconf._schema_base import Schema, named, optional, optional_ref, ref


def _strict(name: str, title: str, fields: dict[str, str]) -> Schema:
    """An object of required fields, each of one JSON type."""
    return named(name, title, {
        "type": "object", "additionalProperties": False, "required": list(fields),
        "properties": {field: {"type": kind} for field, kind in fields.items()}})


PACHYDERM_PACHD = _strict("pachyderm-pachd", "PachydermPachdConfig",
                          {"host": "string", "port": "integer"})
PACHYDERM_PROXY = _strict("pachyderm-proxy", "PachydermProxyConfig",
                          {"scheme": "string", "host": "string", "port": "integer"})
PACHYDERM_DATASET = _strict("pachyderm-dataset", "PachydermDatasetConfig", {
    "project": "string", "repo": "string", "commit": "string", "branch": "string",
    "token": "string"})

PACHYDERM = named("pachyderm", "PachydermConfig", {
    "type": "object", "additionalProperties": False, "required": ["pachd", "proxy", "dataset"],
    "properties": {"pachd": {"type": "object", **ref("pachyderm-pachd")},
                   "proxy": {"type": "object", **ref("pachyderm-proxy")},
                   "dataset": {"type": "object", **ref("pachyderm-dataset")}},
})

WEBHOOKS = named("webhooks", "WebhooksConfig", {
    "type": "object", "additionalProperties": False,
    "properties": {"webhook_id": optional("array", items={"type": "integer"}),
                   "webhook_name": optional("array", items={"type": "string"}),
                   "exclude": optional("boolean", False)},
})

INTEGRATIONS = named("integrations", "IntegrationsConfig", {
    "type": "object", "additionalProperties": False,
    "properties": {"pachyderm": optional_ref("pachyderm"),
                   "webhooks": optional_ref("webhooks")},
})

KERBEROS = _strict("kerberos", "KerberosConfig", {"config_file": "string"})

SECURITY = named("security", "SecurityConfig", {
    "type": "object", "additionalProperties": False,
    "properties": {"kerberos": optional_ref("kerberos")},
})

_DEPRECATED = "this field is deprecated and will be ignored"
TENSORBOARD_STORAGE = named("tensorboard-storage", "TensorboardStorageConfig", {
    "union": {"defaultMessage": _DEPRECATED,
              "items": [{"unionKey": "never", **ref(name)} for name in ("shared-fs", "s3", "gcs")]},
    "disallowProperties": {field: _DEPRECATED for field in (
        "save_experiment_best", "save_trial_best", "save_trial_latest")},
})

SCHEMAS = [PACHYDERM_PACHD, PACHYDERM_PROXY, PACHYDERM_DATASET, PACHYDERM, WEBHOOKS,
           INTEGRATIONS, KERBEROS, SECURITY, TENSORBOARD_STORAGE]
