"""OpenAPI declarations of the routes behind Determined's daily commands (issue 16):
experiment set/label/move/delete/continue/fork, the GC preview, the model definition,
trial kill, checkpoint delete, and the master's config and log.

Merged into :data:`hpcdet.master.api.openapi_schemas.OPERATIONS` (declared in a module of
their own so the two files change independently).
"""

from __future__ import annotations

from typing import Any

from hpcdet.master.api.openapi_schemas import (
    ANY_OBJ,
    BOOL,
    INT,
    NAME,
    NUM,
    OPT_INT,
    OPT_STR,
    STR,
    array,
    nullable,
    obj,
    query,
    ref,
)

_EXP = "/api/v1/experiments/<int:exp_id>"
_GC_POLICY = obj({"save_experiment_best": INT, "save_trial_best": INT,
                  "save_trial_latest": INT})
_CHANGE_ERRORS = {403: "The caller may read but not change the experiment",
                  404: "No such experiment, or the caller may not see it"}
_ADMIN = {403: "The caller is not a cluster admin"}
_COUNT = {"type": "integer", "minimum": 0}

CLI_TREE_OPERATIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("PATCH", _EXP): {
        "summary": "Set name, description, labels, max_slots, weight, priority or gc_policy "
                   "(a new gc_policy runs checkpoint GC at once)",
        "body": obj({}, {"name": STR, "description": STR, "labels": array(STR),
                         "max_slots": OPT_INT, "weight": NUM, "priority": INT,
                         "gc_policy": _GC_POLICY}),
        "answers": {200: obj({"experiment": ref("Experiment"), "notes": array(STR),
                              "gc": nullable(obj({"deleted": array(STR),
                                                  "failed": array(STR)}))}),
                    400: "An unknown key or a bad value", **_CHANGE_ERRORS}},
    ("DELETE", _EXP): {
        "summary": "Delete an ended experiment with its checkpoint files and job directories",
        "answers": {200: obj({"deleted": INT, "checkpoints_deleted": INT,
                              "left_behind": array(STR)}),
                    409: "The experiment has not ended, or a checkpoint could not be deleted",
                    **_CHANGE_ERRORS}},
    ("GET", f"{_EXP}/preview-gc"): {
        "summary": "The checkpoints a GC policy would delete now (nothing is changed)",
        "query": [query("save_experiment_best", _COUNT), query("save_trial_best", _COUNT),
                  query("save_trial_latest", _COUNT)],
        "answers": {200: obj({"checkpoints": array(ref("CheckpointDetail")),
                              "searcher_metric": OPT_STR, "policy": _GC_POLICY}),
                    400: "A missing or bad save_* parameter"}},
    ("POST", f"{_EXP}/labels/<any:action>"): {
        "summary": "Add or remove one label",
        "body": obj({"label": STR}),
        "answers": {200: obj({"experiment": ref("Experiment"), "changed": BOOL}),
                    400: "A bad label", **_CHANGE_ERRORS}},
    ("POST", f"{_EXP}/move"): {
        "summary": "Move the experiment into a workspace (and project), or out of any",
        "body": obj({}, {"workspace": nullable(NAME), "project": nullable(NAME)}),
        "answers": {200: obj({"experiment": ref("Experiment")}),
                    400: "A project without its workspace",
                    403: "The caller may not change the experiment, or is a viewer of the "
                         "workspace", 404: "No such experiment, workspace or project"}},
    ("POST", f"{_EXP}/continue"): {
        "summary": "Reopen an ended single-trial experiment; its trial resumes from its "
                   "latest checkpoint",
        "body": obj({}, {"config": nullable(STR)}),
        "answers": {200: obj({"experiment": ref("Experiment"), "trial_id": INT,
                              "latest_checkpoint": OPT_STR}),
                    400: "A bad config override", 409: "The experiment is not an ended, "
                    "unarchived single-trial experiment", **_CHANGE_ERRORS}},
    ("POST", f"{_EXP}/fork"): {
        "summary": "A new experiment from a config and the source's model definition",
        "body": obj({"config": STR}, {"workspace": nullable(NAME),
                                      "project": nullable(NAME)}),
        "answers": {201: obj({"experiment": ref("Experiment"), "warnings": array(STR)}),
                    400: "A bad config", 403: "The caller is a viewer of the workspace",
                    404: "No such experiment or workspace (or not seen by the caller)"}},
    ("GET", f"{_EXP}/model-def"): {
        "summary": "The model definition stored at creation (.tar.gz)",
        "answers": {200: {"content": "application/gzip"}}},
    ("POST", "/api/v1/trials/<int:trial_id>/kill"): {
        "summary": "Stop one trial at once",
        "answers": {200: obj({"trial": ref("Trial")}), 409: "The trial already ended",
                    403: "The caller may read but not change the trial",
                    404: "No such trial, or the caller may not see it"}},
    ("DELETE", "/api/v1/checkpoints"): {
        "summary": "Delete checkpoints: their files, then their rows become DELETED",
        "body": obj({"uuids": array(STR)}),
        "answers": {200: obj({"deleted": array(STR)}), 400: "No or too many uuids",
                    403: "The caller may read but not change a checkpoint's experiment",
                    404: "No such checkpoint, or the caller may not see it",
                    409: "A live trial's latest checkpoint, or files that cannot be deleted"}},
    ("GET", "/api/v1/master/config"): {
        "summary": "The master's effective settings, secrets masked",
        "answers": {200: obj({"config": ANY_OBJ}), **_ADMIN}},
    ("GET", "/api/v1/master/logs"): {
        "summary": "The master's log: the last tail lines, or whole lines from offset",
        "query": [query("tail", {"type": "integer", "minimum": 1, "maximum": 10000}),
                  query("offset", {"type": "integer", "minimum": 0})],
        "answers": {200: obj({"lines": array(STR), "offset": INT}), **_ADMIN}},
}
