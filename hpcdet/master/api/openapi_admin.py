"""OpenAPI declarations of workspace and project edit/archive/delete
(:mod:`hpcdet.master.api.workspaces`), user administration and roles
(:mod:`hpcdet.master.api.user_admin`); merged into
:data:`hpcdet.master.api.openapi_schemas.OPERATIONS`."""

from __future__ import annotations

from typing import Any

from hpcdet.master.api.openapi_schemas import (
    BOOL,
    INT,
    NAME,
    OPT_STR,
    ROLE,
    STR,
    TIME,
    Schema,
    array,
    obj,
    query,
    ref,
)

ADMIN_COMPONENTS: dict[str, Schema] = {
    # admin: named in auth.admins of master.yaml; active: false once deactivated.
    "User": obj({"username": STR, "display_name": STR, "active": BOOL, "admin": BOOL,
                 "first_seen": TIME, "last_seen": TIME}),
    "Role": obj({"name": STR, "scope": {"type": "string", "enum": ["workspace", "cluster"]},
                 "assignable": BOOL, "determined_names": array(STR),
                 "permissions": array(STR)}, {"note": STR}),
    "UserGroup": obj({"id": INT, "name": STR, "created_by": STR, "created_at": TIME,
                      "num_members": INT}),
    "UserGroupDetail": {"allOf": [ref("UserGroup"), obj({
        "users": array(STR), "workspaces": array(obj({"workspace": STR, "role": ROLE}))})]},
}

_WS = "/api/v1/workspaces/<name>"
_PROJECT = f"{_WS}/projects/<project>"
_WS_404 = "No such workspace, or the caller is not a member (nor a cluster admin)"
_PROJECT_404 = _WS_404 + "; or the workspace has no such project"
_ADMINS = {403: "The caller is not an admin of the workspace", 404: _WS_404}
_EDITORS = {403: "The caller is a viewer of the workspace", 404: _PROJECT_404}
_CLUSTER_ADMINS = {403: "The caller is not a cluster admin (auth.admins)",
                   409: "users_not_identified: the master does not tell users apart"}
_USER = obj({"user": ref("User")})

_WORKSPACE_ADMIN: dict[tuple[str, str], dict[str, Any]] = {
    ("PATCH", _WS): {
        "summary": "Rename the workspace (its admins)",
        "body": obj({"name": NAME}),
        "answers": {200: obj({"workspace": ref("Workspace")}), 400: "A bad name",
                    409: "A workspace of that name exists", **_ADMINS}},
    ("POST", f"{_WS}/<any:action>"): {
        "summary": "Archive (nothing new goes in; hidden from lists) or unarchive the "
                   "workspace (its admins)",
        "answers": {200: obj({"workspace": ref("Workspace")}),
                    409: "It already is archived (or not)", **_ADMINS}},
    ("DELETE", _WS): {
        "summary": "Delete an empty workspace with its projects and members (its admins)",
        "answers": {200: obj({"deleted": STR, "projects_deleted": INT}),
                    409: "not_empty: it still holds experiments, tasks, templates or models "
                         "(the message says how many and how to take them out)", **_ADMINS}},
    ("PATCH", _PROJECT): {
        "summary": "Set the project's name and/or description (editor role needed)",
        "body": obj({}, {"name": NAME, "description": STR}),
        "answers": {200: obj({"project": ref("Project")}),
                    400: "An unknown key or a bad value",
                    409: "The workspace has a project of that name", **_EDITORS}},
    ("POST", f"{_PROJECT}/<any:action>"): {
        "summary": "Archive (no new experiments; hidden from lists) or unarchive the project "
                   "(editor role needed)",
        "answers": {200: obj({"project": ref("Project")}),
                    409: "It already is archived (or not)", **_EDITORS}},
    ("DELETE", _PROJECT): {
        "summary": "Delete a project without experiments (editor role needed)",
        "answers": {200: obj({"deleted": STR, "workspace": STR}),
                    409: "not_empty: it still holds experiments", **_EDITORS}},
}

_USER_ADMIN: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/v1/users"): {
        "summary": "Register a Unix user the master's host knows, before their first sign-in "
                   "(cluster admins)",
        "body": obj({"username": STR}, {"admin": BOOL, "password": STR}),
        "answers": {201: _USER, 400: "No such Unix user, a bad name, or admin/password "
                    "(neither is the master's to set)",
                    **_CLUSTER_ADMINS}},
    ("PATCH", "/api/v1/users/<name>"): {
        "summary": "Set a user's display name (themselves or a cluster admin) or active "
                   "(cluster admins)",
        "body": obj({}, {"display_name": STR, "active": BOOL}),
        "answers": {200: _USER, 400: "An unknown key or a bad value",
                    403: "Another user's display name, or active, by a non-admin",
                    404: "The master does not know the user"}},
    ("POST", "/api/v1/users/<name>/<any:action>"): {
        "summary": "Activate a user, or deactivate one: every request of theirs is then "
                   "refused (403 user_deactivated); cluster admins",
        "answers": {200: _USER, 403: _CLUSTER_ADMINS[403],
                    409: "Deactivating yourself or a cluster admin; or the master does not "
                         "tell users apart"}},
    ("GET", "/api/v1/users/<name>/roles"): {
        "summary": "A user's roles: cluster admin or not, and the workspace roles the caller "
                   "sees",
        "answers": {200: obj({"username": STR, "cluster_admin": BOOL, "workspaces": array(
            obj({"workspace": STR, "role": ROLE, "group": OPT_STR}))}),
                    400: "A bad user name",
                    404: "A user the master knows nothing of (never signed in, not "
                         "registered, no role, in no group)"}},
    ("GET", "/api/v1/rbac/roles"): {
        "summary": "Every role and what it allows",
        "answers": {200: obj({"roles": array(ref("Role"))})}},
}

_GROUP = "/api/v1/groups/<name>"
_GROUP_DETAIL = obj({"group": ref("UserGroupDetail")})
_GROUP_ADMINS = {403: "The caller is not a cluster admin (auth.admins)",
                 404: "No such user group"}
_USERS = array(STR)

_GROUPS: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/v1/groups"): {
        "summary": "Create a user group, with users (cluster admins)",
        "body": obj({"name": NAME}, {"users": _USERS}),
        "answers": {201: _GROUP_DETAIL, 400: "A bad name or user name",
                    403: _GROUP_ADMINS[403], 409: "A group of that name exists"}},
    ("GET", "/api/v1/groups"): {
        "summary": "Every user group, by name (user=U: the groups U belongs to)",
        "query": [query("user", STR)],
        "answers": {200: obj({"groups": array(ref("UserGroup"))})}},
    ("GET", _GROUP): {
        "summary": "One group: its users and its roles in the workspaces the caller sees",
        "answers": {200: _GROUP_DETAIL, 404: "No such user group"}},
    ("PATCH", _GROUP): {
        "summary": "Rename the group (cluster admins)",
        "body": obj({"name": NAME}),
        "answers": {200: _GROUP_DETAIL, 400: "A bad name",
                    409: "A group of that name exists", **_GROUP_ADMINS}},
    ("POST", f"{_GROUP}/users"): {
        "summary": "Add and remove the group's users (cluster admins)",
        "body": obj({}, {"add": _USERS, "remove": _USERS}),
        "answers": {200: _GROUP_DETAIL, 400: "A bad user name or body",
                    403: _GROUP_ADMINS[403],
                    404: "No such group, or a user to remove is not in it"}},
    ("DELETE", _GROUP): {
        "summary": "Delete the group with its workspace roles (cluster admins)",
        "answers": {200: obj({"deleted": STR, "roles_removed": INT}), **_GROUP_ADMINS}},
    ("PUT", f"{_WS}/groups/<group>"): {
        "summary": "Give a user group a role in the workspace, or change it (workspace "
                   "admins): each of its users has at least that role there",
        "body": obj({"role": ROLE}),
        "answers": {200: obj({"workspace": ref("WorkspaceDetail")}), 400: "A bad role",
                    403: "The caller is not an admin of the workspace",
                    404: _WS_404 + "; or no such user group"}},
    ("DELETE", f"{_WS}/groups/<group>"): {
        "summary": "Take a user group's role in the workspace away (workspace admins)",
        "answers": {200: obj({"workspace": ref("WorkspaceDetail")}),
                    403: "The caller is not an admin of the workspace",
                    404: _WS_404 + "; or the group has no role there"}},
}

ADMIN_OPERATIONS: dict[tuple[str, str], dict[str, Any]] = {**_WORKSPACE_ADMIN, **_USER_ADMIN,
                                                          **_GROUPS}
