"""OpenAPI declarations of the unmanaged experiment routes (:mod:`hpcdet.master.api.unmanaged`);
merged into :data:`hpcdet.master.api.openapi_schemas.OPERATIONS`. The unmanaged form of
``POST /experiments`` shares that route's declaration (its body is described there)."""

from __future__ import annotations

from typing import Any

from hpcdet.master.api.openapi_schemas import ANY_OBJ, OPT_STR, STR, obj, ref

UNMANAGED_OPERATIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/v1/experiments/<int:exp_id>/trials"): {
        "summary": "Start a run of a trial of the caller's unmanaged experiment (core_v2); "
                   "with external_id, resume that trial",
        "body": obj({}, {"hparams": ANY_OBJ, "external_id": OPT_STR, "job": OPT_STR}),
        "answers": {201: obj({"trial": ref("Trial"), "trial_info": ANY_OBJ, "token": STR}),
                    400: "A bad hparams, external_id or job id",
                    403: "Only the experiment's owner adds runs to it",
                    409: "A managed experiment, or one being stopped"}},
    ("PATCH", "/api/v1/trials/<int:trial_id>"): {
        "summary": "An unmanaged trial's heartbeat ({}) or its end (state COMPLETED/ERROR); "
                   "Bearer: the trial's token",
        "body": obj({}, {"state": {"type": "string",
                                   "enum": ["RUNNING", "COMPLETED", "ERROR"]}}),
        "answers": {200: obj({"trial": ref("Trial")}),
                    409: "The master stopped the run (killed, cancelled, taken over)"}},
}
