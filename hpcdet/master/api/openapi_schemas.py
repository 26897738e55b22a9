"""What each ``/api/v1`` route takes and answers, for the OpenAPI description.

:data:`OPERATIONS` maps ``(METHOD, flask rule)`` to the operation's summary, query
parameters, request body and answers: a schema for a success, a description (text) for an
error status the route answers in the common error shape. :mod:`hpcdet.master.api.openapi`
adds the path parameters, the 401 of its security, the common error answer (``default``)
and the security of each route. A route missing here fails
``tests/unit/master/test_master_openapi.py``: declare it when you add it.
Schemas list the keys docs/api.md documents; answers may carry more (additionalProperties).
"""

from __future__ import annotations

from typing import Any

from hpcdet.dispatcher import registry
from hpcdet.master.scheduling.task_submission import TASK_KINDS

Schema = dict[str, Any]


def ref(name: str) -> Schema:
    """A reference to one of :data:`COMPONENTS`."""
    return {"$ref": f"#/components/schemas/{name}"}


def obj(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    """An object with ``required`` keys (and ``optional`` ones); other keys allowed."""
    return {"type": "object", "required": sorted(required),
            "properties": {**required, **(optional or {})}}


def nullable(schema: Schema) -> Schema:
    return {**schema, "nullable": True}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
BOOL: Schema = {"type": "boolean"}
ANY_OBJ: Schema = {"type": "object"}
TIME: Schema = nullable({"type": "string"})
OPT_STR: Schema = nullable(STR)
OPT_INT: Schema = nullable(INT)
# Workspace and project names (hpcdet.master.security.workspaces.NAME).
NAME: Schema = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"}
ROLE: Schema = {"type": "string", "enum": ["viewer", "editor", "admin"]}
# Where a new experiment, task or template goes (editor role there needed; null: its owner's).
_PLACED = {"workspace": nullable(NAME)}
_PLACED_ERRORS = {403: "The caller is a viewer of the workspace (editor role needed)",
                  404: "No such workspace (or project), or the caller is not a member"}

COMPONENTS: dict[str, Schema] = {
    "Error": obj({"error": obj({"code": STR, "message": STR}, {"details": array(STR)})},
                 {"status": INT}),
    "Transition": obj({"from": OPT_STR, "to": STR, "at": TIME, "cause": OPT_STR,
                       "actor": OPT_STR}),
    "Experiment": obj({"id": INT, "name": OPT_STR, "description": OPT_STR,
                       "labels": array(STR), "state": STR, "owner": OPT_STR,
                       "searcher": OPT_STR, "resource_pool": OPT_STR, "archived": BOOL,
                       "workspace_id": OPT_INT, "project_id": OPT_INT,
                       "created_at": TIME, "ended_at": TIME, "num_trials": INT,
                       "unmanaged": BOOL, "external_id": OPT_STR}),
    "Trial": obj({"id": INT, "experiment_id": INT, "state": STR, "hparams": ANY_OBJ,
                  "seed": INT, "restarts": INT, "steps_completed": INT,
                  "best_validation": nullable(ANY_OBJ), "latest_validation": nullable(ANY_OBJ),
                  "latest_checkpoint": OPT_STR, "job_ids": array(STR), "nodes": OPT_STR,
                  "external_id": OPT_STR, "external_job": OPT_STR,
                  "created_at": TIME, "ended_at": TIME}),
    "Job": obj({"job_id": OPT_STR, "run_id": INT, "native_state": OPT_STR, "reason": OPT_STR,
                "exit_code": OPT_INT, "nodes": OPT_STR, "submitted_at": TIME}),
    # The failure summary (hpcdet.master.reports.failure): why an errored trial ended.
    "Failure": obj({"cause": {"type": "string", "enum": [
        "oom_host", "oom_gpu", "time_limit", "node_failure", "preempted", "cancelled",
        "signal", "exit_code", "unknown"]}, "words": STR, "exit_code": OPT_INT,
        "signal": OPT_STR, "cancelled_by": OPT_STR,
        "last_error_line": nullable(obj({"log_id": INT, "line_number": OPT_INT,
                                         "text": STR}))}),
    "Checkpoint": obj({"uuid": STR, "trial_id": INT, "steps_completed": INT,
                       "metadata": nullable(ANY_OBJ), "resources": nullable(ANY_OBJ),
                       "validation_metrics": nullable(ANY_OBJ), "state": STR,
                       "reported_at": TIME}),
    "CheckpointDetail": {"allOf": [ref("Checkpoint"), obj({
        "experiment_id": INT, "storage_path": OPT_STR, "searcher_metric": OPT_STR,
        "smaller_is_better": BOOL, "searcher_metric_value": nullable(NUM)})]},
    "MarkedCheckpoint": {"allOf": [ref("Checkpoint"), obj({
        "size_bytes": OPT_INT, "storage_path": OPT_STR, "searcher_metric": OPT_STR,
        "searcher_metric_value": nullable(NUM), "best": BOOL, "latest": BOOL})]},
    "LogLine": obj({"id": INT, "rank": OPT_INT, "node": OPT_STR, "stream": STR, "line": STR,
                    "job_id": OPT_STR, "at": TIME}),
    "Template": obj({"name": STR, "owner": OPT_STR, "workspace_id": OPT_INT,
                     "created_at": TIME, "updated_at": TIME, "config": ANY_OBJ}),
    "Pool": obj({"name": STR, "slot_type": OPT_STR, "is_custom": BOOL}),
    "JobRow": obj({"position": INT, "job_id": STR, "type": STR}),
    "Task": obj({"id": INT, "name": OPT_STR, "owner": OPT_STR, "workspace_id": OPT_INT,
                 "state": STR, "job_id": OPT_STR,
                 "pool": OPT_STR, "partition": OPT_STR, "log_streams": array(STR),
                 "cancel_requested": BOOL, "submitted_at": TIME, "started_at": TIME,
                 "ended_at": TIME},
                {"kind": {"type": "string", "enum": list(TASK_KINDS)},
                 "config": nullable(ANY_OBJ)}),
    "MetricsReport": obj({"group": STR, "steps_completed": INT, "metrics": ANY_OBJ},
                         {"reported_at": TIME}),
    "Stream": obj({"run_id": INT, "requeue": INT, "rank": INT}),
    "ResumedFrom": obj({"uuid": OPT_STR, "steps_completed": INT}),
    # role: the caller's (null for a cluster admin, or anybody on an open master, who is
    # not a member).
    "Workspace": obj({"id": INT, "name": STR, "created_by": STR, "created_at": TIME,
                      "role": nullable(ROLE), "num_experiments": INT, "archived": BOOL}),
    "Project": obj({"id": INT, "name": STR, "workspace": STR, "workspace_id": INT,
                    "description": STR, "created_by": STR, "created_at": TIME,
                    "num_experiments": INT, "archived": BOOL}),
    "WorkspaceDetail": {"allOf": [ref("Workspace"), obj({
        "members": array(obj({"user": STR, "role": ROLE})),
        "groups": array(obj({"group": STR, "role": ROLE})),
        "projects": array(ref("Project"))})]},
    # Never the token itself (only POST /auth/tokens answers it, once).
    "Token": obj({"id": INT, "kind": {"type": "string", "enum": ["session", "api", "web"]},
                  "name": STR, "username": STR, "created_at": TIME, "expires_at": TIME,
                  "revoked_at": TIME, "last_used_at": TIME}),
    # Allocation mode (hpcdet/master/api/allocations.py).
    "Allocation": obj({"id": INT, "job_id": OPT_STR, "slots": INT, "phase": STR,
                       "nodes": OPT_STR, "end_cause": OPT_STR, "steps": INT,
                       "running_steps": INT, "submitted_at": STR, "started_at": TIME,
                       "ended_at": TIME}),
}

_STREAM_KEYS: dict[str, Schema] = {"stream": ref("Stream"), "seq": INT,
                                   "resumed_from": ref("ResumedFrom")}
_JOB_UPDATE: dict[str, Schema] = {"priority": INT, "ahead_of": STR, "behind_of": STR,
                                  "resource_pool": STR}


def query(name: str, schema: Schema, description: str = "") -> Schema:
    """A query parameter (never required)."""
    param: Schema = {"name": name, "in": "query", "required": False, "schema": schema}
    if description:
        param["description"] = description
    return param


_PAGE: list[Schema] = [query("offset", {"type": "integer", "minimum": 0}),
                       query("limit", {"type": "integer", "minimum": 0, "maximum": 1000})]

_NOT_SIGNED_IN = ("Tokens belong to users: the caller is anonymous (an open master without "
                  "X-Hpcdet-User) or not signed in")

# Sign-in and tokens (hpcdet/master/api/users.py).
IDENTITY_OPERATIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/v1/auth/login"): {
        "summary": "Exchange a MUNGE credential (payload `hpcdet-login <master URL>`) for a "
                   "session token", "auth": "none",
        "body": obj({"credential": {"type": "string", "pattern": "^MUNGE:",
                                    "maxLength": 8192}}),
        "answers": {200: obj({"token": STR, "username": STR, "expires_at": TIME,
                              "token_id": INT}),
                    400: "No credential, or not a MUNGE one",
                    401: "munged refused the credential (invalid, replayed, expired), it was "
                         "made for another master or purpose, or its UID has no user name",
                    503: "munge_unavailable: the master cannot reach its munged"}},
    ("POST", "/api/v1/auth/logout"): {
        "summary": "Revoke the calling session or API token",
        "answers": {200: obj({"logged_out": BOOL})}},
    ("GET", "/api/v1/auth/whoami"): {
        "summary": "Who the master takes the caller for, and how it knows",
        "answers": {200: obj({"username": STR, "auth_mode": {
            "type": "string", "enum": ["munge", "open"]}, "admin": BOOL})}},
    ("GET", "/api/v1/users"): {
        "summary": "The users who signed in or were registered, by name (deactivated ones "
                   "with all=1)",
        "query": [query("all", {"type": "string", "enum": ["1", "true"]})],
        "answers": {200: obj({"users": array(ref("User"))}), 401: _NOT_SIGNED_IN}},
    ("GET", "/api/v1/auth/tokens"): {
        "summary": "The caller's live API tokens and sessions (never the tokens themselves)",
        "query": [query("all", STR, "1 or true: with the expired and revoked ones too")],
        "answers": {200: obj({"tokens": array(ref("Token"))}), 401: _NOT_SIGNED_IN}},
    ("POST", "/api/v1/auth/tokens"): {
        "summary": "A new API token for scripts (the token is shown only in this answer)",
        "body": obj({}, {"name": nullable({"type": "string", "maxLength": 128}),
                         "expires_days": {"type": "integer", "minimum": 1,
                                          "maximum": 3650, "default": 30}}),
        "answers": {201: {"allOf": [ref("Token"), obj({"token": STR})]},
                    400: "A bad name or expires_days", 401: _NOT_SIGNED_IN}},
    ("DELETE", "/api/v1/auth/tokens/<int:token_id>"): {
        "summary": "Revoke one of the caller's tokens (an admin may revoke anybody's)",
        "answers": {200: obj({"revoked": INT}), 401: _NOT_SIGNED_IN,
                    404: "No such token, or another user's"}},
    ("POST", "/api/v1/auth/web_link"): {
        "summary": "A one-time sign-in link for the web pages (sets the hpcdet_session "
                   "cookie when followed)",
        "query": [query("seconds", {"type": "integer", "minimum": 5, "maximum": 600,
                                    "default": 60}, "How long the link is valid")],
        "answers": {201: obj({"path": {"type": "string", "pattern": "^/login/"},
                              "expires_at": TIME}),
                    400: "seconds: not an integer from 5 to 600", 401: _NOT_SIGNED_IN}},
}

_WORKSPACE_404 = "No such workspace, or the caller is not a member (nor a cluster admin)"
_ADMINS_ONLY = "The caller is not an admin of the workspace"
_DETAIL = obj({"workspace": ref("WorkspaceDetail")})

# Workspaces and projects (hpcdet/master/api/workspaces.py).
WORKSPACE_OPERATIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/v1/workspaces"): {
        "summary": "Create a workspace; the caller becomes its admin",
        "body": obj({"name": NAME}),
        "answers": {201: obj({"workspace": ref("Workspace")}), 400: "A bad name",
                    409: "A workspace of that name exists"}},
    ("GET", "/api/v1/workspaces"): {
        "summary": "The workspaces the caller is a member of (every one for cluster admins); "
                   "archived ones with archived=1",
        "query": [query("archived", {"type": "string", "enum": ["1", "true"]})],
        "answers": {200: obj({"workspaces": array(ref("Workspace"))})}},
    ("GET", "/api/v1/workspaces/<name>"): {
        "summary": "One workspace with its members and projects",
        "answers": {200: _DETAIL, 404: _WORKSPACE_404}},
    ("PUT", "/api/v1/workspaces/<name>/members/<user>"): {
        "summary": "Add a member or change their role (workspace admins only)",
        "body": obj({"role": ROLE}),
        "answers": {200: _DETAIL, 400: "A bad user name or role", 403: _ADMINS_ONLY,
                    404: _WORKSPACE_404}},
    ("DELETE", "/api/v1/workspaces/<name>/members/<user>"): {
        "summary": "Remove a member (workspace admins only; not its last admin)",
        "answers": {200: _DETAIL, 403: _ADMINS_ONLY,
                    404: _WORKSPACE_404 + "; or the user is not a member",
                    409: "The user is the workspace's last admin"}},
    ("POST", "/api/v1/workspaces/<name>/projects"): {
        "summary": "Create a project in the workspace (editor role needed)",
        "body": obj({"name": NAME}, {"description": nullable(STR)}),
        "answers": {201: obj({"project": ref("Project")}), 400: "A bad name or description",
                    403: "The caller is a viewer of the workspace", 404: _WORKSPACE_404,
                    409: "The workspace has a project of that name"}},
    ("GET", "/api/v1/workspaces/<name>/projects"): {
        "summary": "The workspace's projects, by name (archived ones with archived=1)",
        "query": [query("archived", {"type": "string", "enum": ["1", "true"]})],
        "answers": {200: obj({"projects": array(ref("Project"))}), 404: _WORKSPACE_404}},
    ("GET", "/api/v1/workspaces/<name>/projects/<project>"): {
        "summary": "One project of the workspace",
        "answers": {200: obj({"project": ref("Project")}),
                    404: _WORKSPACE_404 + "; or the workspace has no such project"}},
}

# Allocation mode (hpcdet/master/api/allocations.py): the agent's exchange, the listing.
_STEP = {"trial_id": INT, "run_id": INT}
ALLOCATION_OPERATIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/v1/allocations/<int:allocation_id>/exchange"): {
        "summary": "The allocation agent's news (steps started, exited) and what it should do "
                   "next (steps to launch or end, whether to exit)", "auth": "allocation",
        "body": obj({}, {"events": array(obj(
            {**_STEP, "event": {"type": "string", "enum": ["started", "exited"]}},
            {"exit_code": OPT_INT, "step": nullable(STR)}))}),
        "answers": {200: obj({"launch": array(obj({**_STEP, "script": STR, "job_dir": STR})),
                              "cancel": array(obj(_STEP)), "exit": BOOL, "interval": NUM}),
                    400: "An event is malformed"}},
    ("GET", "/api/v1/experiments/<int:exp_id>/allocations"): {
        "summary": "The experiment's allocations (allocation mode), newest first",
        "answers": {200: obj({"allocations": array(ref("Allocation"))}),
                    404: "No such experiment, or the caller may not see it"}},
}

# (method, flask rule) -> {summary, auth (user|trial|none), query, body, answers}
OPERATIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("GET", "/api/v1/openapi.json"): {
        "summary": "This description (OpenAPI 3)", "auth": "none",
        "answers": {200: ANY_OBJ}},
    ("GET", "/api/v1/master"): {
        "summary": "Version, cluster and database of this master, its health and its "
                   "scheduler", "auth": "none",
        "answers": {200: obj({"version": STR, "cluster_name": STR, "database": STR,
                              "resource_manager": STR, "url": STR,
                              "auth_mode": {"type": "string", "enum": ["munge", "open"]},
                              "health": ANY_OBJ},
                             {"scheduler": obj({"name": STR, "display_name": STR,
                                                "submit_command": STR,
                                                "pending_reasons": ANY_OBJ,
                                                "capabilities": ANY_OBJ})})}},
    ("GET", "/api/v1/master/health"): {
        "summary": "The master's health: scheduler reachable, database round trip, last "
                   "reconcile cycle (status ok, degraded or starting)", "auth": "none",
        "answers": {200: ANY_OBJ}},
    ("POST", "/api/v1/experiments"): {
        "summary": "Create an experiment (or render its first job with dry_run)",
        "body": obj({"config": STR, "context": STR},
                    {"dry_run": BOOL, "activate": BOOL, "template": OPT_STR, **_PLACED,
                     "project": nullable(NAME)}),
        "answers": {
            **_PLACED_ERRORS, 400: "A bad config, context, template or activate, or a "
                                   "project without its workspace",
            201: obj({"experiment": ref("Experiment"), "warnings": array(STR),
                      "template": OPT_STR}),
            200: obj({"dry_run": BOOL, "jobs": array(obj({"trial": INT, "script": STR,
                                                          "argv": array(STR)})),
                      "warnings": array(STR), "template": OPT_STR})}},
    ("GET", "/api/v1/experiments"): {
        "summary": "List experiments, newest first",
        "query": [query("state", STR), query("owner", STR), query("label", STR),
                  query("archived", STR),
                  query("workspace", STR, "Only the experiments of this workspace"),
                  query("project", STR, "Only those of this project (needs workspace)"),
                  *_PAGE],
        "answers": {200: obj({"experiments": array(ref("Experiment")), "total": INT}),
                    400: "A bad filter, or project without workspace",
                    404: "No such workspace or project (or the caller is not a member)"}},
    ("GET", "/api/v1/experiments/<int:exp_id>"): {
        "summary": "One experiment with its config, history, trial counts by state and best "
                   "trial (its trials: GET .../trials, paged)",
        "answers": {200: obj({"experiment": {"allOf": [ref("Experiment"), obj({
            "config": ANY_OBJ, "history": array(ref("Transition")),
            "trial_counts": {"type": "object", "additionalProperties": INT},
            "best_trial_id": {"type": ["integer", "null"]},
            "failures": array(obj({"cause": STR, "words": STR,
                                   "trial_ids": array(INT)}))})]}})}},
    ("POST", "/api/v1/experiments/<int:exp_id>/<any:action>"): {
        "summary": "pause, activate, cancel, kill, archive or unarchive an experiment",
        "answers": {200: obj({"experiment": ref("Experiment")})}},
    ("GET", "/api/v1/experiments/<int:exp_id>/trials"): {
        "summary": "One page of the experiment's trials (default: 100 in id order)",
        "query": [query("offset", {"type": "integer", "minimum": 0}),
                  query("limit", {"type": "integer", "minimum": 1, "maximum": 1000}),
                  query("sortBy", {"type": "string", "enum": [
                      "id", "state", "best_validation_metric", "steps", "SORT_BY_ID",
                      "SORT_BY_STATE", "SORT_BY_BEST_VALIDATION_METRIC",
                      "SORT_BY_BATCHES_PROCESSED"]}),
                  query("orderBy", {"type": "string", "enum": [
                      "asc", "desc", "ORDER_BY_ASC", "ORDER_BY_DESC"]})],
        "answers": {200: obj({"trials": array(ref("Trial")), "pagination": obj({
            "offset": INT, "limit": INT, "total": INT, "startIndex": INT, "endIndex": INT})}),
                    400: "A bad offset, limit, sortBy or orderBy (the message names it)"}},
    ("GET", "/api/v1/experiments/<int:exp_id>/checkpoints"): {
        "summary": "The experiment's checkpoints (best=N: the N best)",
        "query": [query("state", {"type": "string", "enum": ["ACTIVE", "DELETED", "ALL"]}),
                  query("best", {"type": "integer", "minimum": 1})],
        "answers": {200: obj({"checkpoints": array(ref("CheckpointDetail")),
                              "searcher_metric": OPT_STR, "smaller_is_better": BOOL})}},
    ("GET", "/api/v1/experiments/<int:exp_id>/metrics"): {
        "summary": "One metric of every trial over steps_completed",
        "query": [query("group", {"type": "string", "enum": ["validation", "training"]}),
                  query("name", STR), query("trial_id", INT),
                  query("max_points", {"type": "integer", "minimum": 3, "maximum": 5000})],
        "answers": {200: obj({"metric": STR, "group": STR, "trials": array(obj({
            "trial_id": INT, "points": array(obj({"steps_completed": INT,
                                                  "value": nullable(NUM)}))}))})}},
    ("GET", "/api/v1/experiments/<int:exp_id>/rungs"): {
        "summary": "The ASHA rung each trial reached",
        "answers": {200: obj({"searcher": OPT_STR, "rungs": array(obj({"trial_id": INT}))})}},
    ("GET", "/api/v1/checkpoints/<uuid>"): {
        "summary": "One checkpoint",
        "answers": {200: obj({"checkpoint": ref("CheckpointDetail")})}},
    ("GET", "/api/v1/checkpoints/<uuid>/download"): {
        "summary": "The checkpoint's files as an uncompressed tar",
        "answers": {200: {"content": "application/x-tar"}}},
    ("GET", "/api/v1/jobs"): {
        "summary": "Slurm's queue in priority order (from the stored snapshot)",
        "query": [query("resource_pool", STR), query("user", STR), query("q", STR)],
        "answers": {200: obj({"jobs": array(ref("JobRow")), "taken_at": TIME,
                              "resource_pool": OPT_STR, "refresh_seconds": NUM})}},
    ("POST", "/api/v1/jobs/<job_id>/update"): {
        "summary": "Change a queued job's priority, place or pool",
        "body": obj({}, _JOB_UPDATE),
        "answers": {200: obj({"result": ANY_OBJ})}},
    ("POST", "/api/v1/jobs/update-batch"): {
        "summary": "Several job updates, all checked before any is applied",
        "body": obj({"updates": array(obj({"job_id": STR}, _JOB_UPDATE))}),
        "answers": {200: obj({"results": array(ANY_OBJ)})}},
    ("GET", "/api/v1/resource-pools"): {
        "summary": "Every resource pool (from the stored snapshot)",
        "answers": {200: obj({"resource_pools": array(ref("Pool")), "taken_at": TIME,
                              "refresh_seconds": NUM})}},
    ("POST", "/api/v1/tasks"): {
        "summary": "Submit a batch script (det sbatch, det qsub) as a command task",
        "body": obj({}, {"scheduler": {"type": "string", "enum": list(registry.names())},
                         "script": OPT_STR, "wrap": OPT_STR, "script_name": STR,
                         "args": array(STR), "options": array(array(OPT_STR)),
                         "cwd": STR, "environment": nullable(
                             {"type": "object", "additionalProperties": STR}),
                         "test_only": BOOL, **_PLACED}),
        "answers": {**_PLACED_ERRORS, 201: obj({"task": ref("Task")}),
                    200: obj({"test_only": BOOL, "script": STR, "argv": array(STR)})}},
    ("POST", "/api/v1/commands"): {
        "summary": "Run a command (det cmd run) as a command task",
        "body": obj({"entrypoint": array(STR)}, {"config": nullable(ANY_OBJ),
                                                 "context": OPT_STR, "test_only": BOOL,
                                                 **_PLACED}),
        "answers": {**_PLACED_ERRORS,
                    201: obj({"task": ref("Task"), "warnings": array(STR)}),
                    200: obj({"test_only": BOOL, "script": STR, "argv": array(STR),
                              "warnings": array(STR)})}},
    ("POST", "/api/v1/shells"): {
        "summary": "Start a shell (det shell start): a task whose job runs sshd",
        "body": obj({}, {"config": nullable(ANY_OBJ), "context": OPT_STR, "test_only": BOOL,
                         **_PLACED}),
        "answers": {**_PLACED_ERRORS,
                    201: obj({"task": ref("Task"), "warnings": array(STR)}),
                    200: obj({"test_only": BOOL, "script": STR, "argv": array(STR),
                              "warnings": array(STR)})}},
    ("POST", "/api/v1/tensorboards"): {
        "summary": "Start TensorBoard over experiments and trials (det tensorboard start)",
        "body": obj({}, {"experiment_ids": array(INT), "trial_ids": array(INT),
                         "config": nullable(ANY_OBJ), "context": OPT_STR, "test_only": BOOL,
                         **_PLACED}),
        "answers": {**_PLACED_ERRORS,
                    201: obj({"task": ref("Task"), "warnings": array(STR)}),
                    200: obj({"test_only": BOOL, "script": STR, "argv": array(STR),
                              "warnings": array(STR)})}},
    ("GET", "/api/v1/shells/<int:task_id>/keys"): {
        "summary": "A shell's client key, pinned host key and sshd address (its owner only)",
        "answers": {200: obj({"task_id": INT, "state": STR, "ready": BOOL,
                              "host": OPT_STR, "port": nullable(INT), "user": OPT_STR,
                              "client_private_key": OPT_STR,
                              "host_public_key": OPT_STR})}},
    ("POST", "/api/v1/notebooks"): {
        "summary": "Start JupyterLab (det notebook start) as a notebook task",
        "body": obj({}, {"config": nullable(ANY_OBJ), "context": OPT_STR,
                         "test_only": BOOL, **_PLACED}),
        "answers": {**_PLACED_ERRORS,
                    201: obj({"task": ref("Task"), "url": STR, "warnings": array(STR)}),
                    200: obj({"test_only": BOOL, "script": STR, "argv": array(STR),
                              "warnings": array(STR)})}},
    ("GET", "/api/v1/tasks"): {
        "summary": "Command tasks, newest first",
        "query": [query("state", STR), query("owner", STR), query("active", STR),
                  query("kind", {"type": "string", "enum": list(TASK_KINDS)}),
                  query("mine", STR), *_PAGE],
        "answers": {200: obj({"tasks": array(ref("Task")), "total": INT})}},
    ("GET", "/api/v1/tasks/<int:task_id>"): {
        "summary": "One task with its history (and why it failed, for an errored one)",
        "answers": {200: obj({"task": {"allOf": [ref("Task"), obj({
            "history": array(ref("Transition")), "failure": nullable(ref("Failure"))})]}})}},
    ("POST", "/api/v1/tasks/<int:task_id>/kill"): {
        "summary": "Cancel the task's job",
        "answers": {200: obj({"task": ref("Task")})}},
    ("GET", "/api/v1/tasks/<int:task_id>/logs"): {
        "summary": "A chunk of the task's output or error file",
        "query": [query("stream", {"type": "string", "enum": ["output", "error"]}),
                  query("offset", {"type": "integer", "minimum": 0}),
                  query("limit", {"type": "integer", "minimum": 1}),
                  query("tail", {"type": "integer", "minimum": 0})],
        "answers": {200: obj({"task_id": INT, "stream": STR, "offset": INT,
                              "next_offset": INT, "size": INT, "text": STR, "state": STR})}},
    ("GET", "/api/v1/templates"): {
        "summary": "Every template, by name",
        "answers": {200: obj({"templates": array(ref("Template"))})}},
    ("POST", "/api/v1/templates"): {
        "summary": "Store a new template",
        "body": obj({"name": STR, "config": STR}, _PLACED),
        "answers": {201: obj({"template": ref("Template")}), **_PLACED_ERRORS,
                    409: "A template of that name exists (names are one namespace)"}},
    ("GET", "/api/v1/templates/<name>"): {
        "summary": "One template",
        "answers": {200: obj({"template": ref("Template")})}},
    ("PUT", "/api/v1/templates/<name>"): {
        "summary": "Create a template (in workspace, if given) or replace its config",
        "body": obj({"config": STR}, _PLACED),
        "answers": {200: obj({"template": ref("Template")}),
                    403: "The caller may not change the template, or is a viewer of the "
                         "workspace it would go to",
                    404: "The caller may not see the template, or the workspace"}},
    ("DELETE", "/api/v1/templates/<name>"): {
        "summary": "Remove a template",
        "answers": {200: ANY_OBJ}},
    ("GET", "/api/v1/trials/<int:trial_id>"): {
        "summary": "A trial with its history, jobs and checkpoints",
        "answers": {200: obj({"trial": {"allOf": [ref("Trial"), obj({
            "history": array(ref("Transition")), "jobs": array(ref("Job")),
            "failure": nullable(ref("Failure"))})]},
            "checkpoints": array(ref("MarkedCheckpoint"))})}},
    ("GET", "/api/v1/trials/<int:trial_id>/metrics"): {
        "summary": "The trial's reported metrics, one entry per group and step",
        "query": [query("group", {"type": "string",
                                  "enum": ["training", "validation", "profiling"]}),
                  query("since_steps", {"type": "integer", "minimum": 0})],
        "answers": {200: obj({"metrics": array(ref("MetricsReport"))})}},
    ("GET", "/api/v1/trials/<int:trial_id>/metrics/series"): {
        "summary": "Metrics of the trial downsampled for a chart (LTTB), with their x axes",
        "query": [query("group", {"type": "string",
                                  "enum": ["training", "validation", "profiling"]}),
                  query("name", STR),
                  query("max_points", {"type": "integer", "minimum": 3, "maximum": 5000})],
        "answers": {200: obj({"group": STR, "max_points": INT, "names": array(STR),
                              "counters": array(STR), "series": array(obj({
                                  "name": STR, "rows": INT, "points": array(ANY_OBJ)}))})}},
    ("POST", "/api/v1/trials/<int:trial_id>/metrics"): {
        "summary": "Report metrics (the trial's harness)", "auth": "trial",
        "body": obj({"group": STR, "reports": array(obj(
            {"steps_completed": INT, "metrics": ANY_OBJ}))}, _STREAM_KEYS),
        "answers": {200: obj({"stored": INT}, {"duplicates": INT})}},
    ("POST", "/api/v1/trials/<int:trial_id>/checkpoints"): {
        "summary": "Register a checkpoint (the trial's harness)", "auth": "trial",
        "body": obj({"uuid": STR, "steps_completed": INT},
                    {"metadata": ANY_OBJ, "resources": ANY_OBJ, **_STREAM_KEYS}),
        "answers": {201: obj({"checkpoint": ref("Checkpoint")}),
                    200: obj({"checkpoint": ref("Checkpoint")})}},
    ("GET", "/api/v1/trials/<int:trial_id>/preemption"): {
        "summary": "Whether the trial should checkpoint and exit now", "auth": "trial",
        "answers": {200: obj({"preempt": BOOL})}},
    ("POST", "/api/v1/trials/<int:trial_id>/early_exit"): {
        "summary": "Record why the trial's code exits early", "auth": "trial",
        "body": obj({"reason": {"type": "string",
                                "enum": ["invalid_hp", "errored", "user_requested_stop"]}}),
        "answers": {200: ANY_OBJ}},
    ("POST", "/api/v1/trials/<int:trial_id>/progress"): {
        "summary": "Report the trial's progress (single-trial experiments show it)",
        "auth": "trial", "body": obj({"progress": {"type": "number", "minimum": 0,
                                                   "maximum": 1}}),
        "answers": {200: ANY_OBJ}},
    ("GET", "/api/v1/trials/<int:trial_id>/experiment_best_validation"): {
        "summary": "The experiment's best searcher metric so far", "auth": "trial",
        "answers": {200: obj({"best": nullable(NUM)})}},
    ("GET", "/api/v1/trials/<int:trial_id>/logs"): {
        "summary": "The trial's log lines (after an id, head or tail)",
        "query": [query("after", {"type": "integer", "minimum": 0}),
                  query("limit", {"type": "integer", "minimum": 0, "maximum": 100000}),
                  query("head", {"type": "integer", "minimum": 0, "maximum": 100000}),
                  query("tail", {"type": "integer", "minimum": 0, "maximum": 100000}),
                  query("rank", {"type": "integer", "minimum": 0}), query("node", STR),
                  query("stream", {"type": "string", "enum": ["stdout", "stderr", "master"]}),
                  query("q", {"type": "string", "maxLength": 200}),
                  query("timestamp_before", {"type": "string", "format": "date-time"}),
                  query("timestamp_after", {"type": "string", "format": "date-time"})],
        "answers": {200: obj({"logs": array(ref("LogLine")), "last_id": INT,
                              "trial_state": STR}, {"matched": INT})}},
    **IDENTITY_OPERATIONS,
    **WORKSPACE_OPERATIONS,
    **ALLOCATION_OPERATIONS,
}
