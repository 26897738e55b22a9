"""Every route of the master, walked as a user who is not alice, on alice's objects.

On a master that identifies its users, a caller who is neither the owner, a member of the
object's workspace nor a cluster admin gets 403 or 404 from every route that reads or
changes an experiment, trial, log, metric, checkpoint, task, template, job or workspace,
and never a byte of the owner's data; listings leave the objects out. A route that is not
classified in :data:`ROUTES` fails :func:`test_every_route_is_classified`: whoever adds one
decides here what it may show to whom.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import make_context
from queue_helpers import FakeJob, FakeSlurmQueue, trial_comment
from sqlalchemy import select

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.api.auth import SESSION_COOKIE
from hpcdet.master.app import create_app
from hpcdet.master.db import session_scope
from hpcdet.master.models import (
    AuthToken,
    Checkpoint,
    CommandTask,
    Experiment,
    Job,
    Metric,
    ModelVersion,
    RegisteredModel,
    ShellKey,
    Template,
    Trial,
    TrialLog,
    WorkspaceMember,
)
from hpcdet.master.queue.job_queue import read_queue_snapshot
from hpcdet.master.queue.snapshots import QUEUE, store_snapshot
from hpcdet.master.security import tokens
from hpcdet.master.settings.core import MasterSettings

OWNER, INTRUDER = "alice", "mallory"
CKPT = "aaaaaaaa-0000-4000-8000-00000000000a"  # checkpoint ids are UUIDs
# Words only alice's objects contain: none may reach the intruder (the owner's name included).
SECRETS = (OWNER, "s3cret-token", "s3cret-exp", "s3cret-label", "s3cret-log", "s3cret-meta",
           "s3cret-task", "S3CRET_ENV", "s3cret-project-text")
CONFIG = """\
name: s3cret-exp
labels: [s3cret-label]
entrypoint: python3 train.py
hyperparameters: {lr: 0.1}
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
"""
TEMPLATE = "environment: {environment_variables: [S3CRET_ENV=1]}\n"

# How each (endpoint, method) answers the intruder:
#   public   - facts about the master or cluster, no user's data (may be 200)
#   token    - the harness's routes: a trial's bearer token, never a user (401)
#   listing  - 200, but alice's objects are left out (and not counted)
#   create   - creates the caller's own object; naming alice's workspace is a 404
#   self     - the caller's own identity, sessions and tokens (nothing of alice's)
#   own      - alice's object: 403 or 404, nothing of hers in the body, nothing changed
#   admin    - the master's config and log: cluster admins only (403 for anyone else)
ROUTES: dict[tuple[str, str], str] = {
    ("api.master_info", "GET"): "public",
    ("api.master_health", "GET"): "public",
    ("api.openapi_description", "GET"): "public",
    ("api.list_resource_pools", "GET"): "public",
    ("web.cluster", "GET"): "public",
    ("web.login", "GET"): "public",
    ("web.login", "POST"): "public",
    ("web.logout", "POST"): "public",
    ("static", "GET"): "public",
    ("api.login", "POST"): "public",
    # User names are public on a cluster (getent passwd); Determined lists them to everyone.
    ("api.list_users", "GET"): "public",
    ("web.link_login", "GET"): "public",
    ("web.link_login", "POST"): "public",
    ("api.logout", "POST"): "self",
    ("api.whoami", "GET"): "self",
    ("api.list_tokens", "GET"): "self",
    ("api.create_token", "POST"): "self",
    ("api.web_link", "POST"): "self",
    ("api.revoke_token", "DELETE"): "own",
    ("api.trial_preemption", "GET"): "token",
    ("api.experiment_best_validation", "GET"): "token",
    ("api.report_early_exit", "POST"): "token",
    ("api.report_metrics", "POST"): "token",
    ("api.report_progress", "POST"): "token",
    ("api.report_checkpoint", "POST"): "token",
    ("api.patch_unmanaged_trial", "PATCH"): "token",
    ("api.allocation_exchange", "POST"): "token",
    ("api.experiment_allocations", "GET"): "own",
    ("api.list_experiments", "GET"): "listing",
    ("api.list_tasks", "GET"): "listing",
    ("api.list_templates", "GET"): "listing",
    ("api.list_workspaces", "GET"): "listing",
    ("api.list_jobs", "GET"): "listing",
    ("web.index", "GET"): "listing",
    ("web.queue", "GET"): "listing",
    ("web.cluster_nodes", "GET"): "listing",
    ("web.tasks", "GET"): "listing",
    ("web.task_page", "GET"): "own",
    ("web.compare", "GET"): "listing",  # what it compares is in the query: none here
    ("api.create_experiment", "POST"): "create",
    ("api.create_task", "POST"): "create",
    ("api.create_command", "POST"): "create",
    ("api.create_shell", "POST"): "create",
    ("api.create_tensorboard", "POST"): "create",
    ("api.create_notebook", "POST"): "create",
    ("api.create_template", "POST"): "create",
    ("api.create_workspace", "POST"): "create",
    ("api.describe_experiment", "GET"): "own",
    ("api.change_lifecycle", "POST"): "own",
    ("api.list_checkpoints", "GET"): "own",
    ("api.experiment_metric_series", "GET"): "own",
    ("api.experiment_rungs", "GET"): "own",
    ("api.list_trials", "GET"): "own",
    ("api.describe_checkpoint", "GET"): "own",
    ("api.download_checkpoint", "GET"): "own",
    ("api.update_one_job", "POST"): "own",
    ("api.update_job_batch", "POST"): "own",
    ("api.describe_task", "GET"): "own",
    ("api.kill_task", "POST"): "own",
    ("api.task_logs", "GET"): "own",
    ("api.shell_keys", "GET"): "own",
    ("api.describe_template", "GET"): "own",
    ("api.set_template", "PUT"): "own",
    ("api.remove_template", "DELETE"): "own",
    ("api.describe_trial", "GET"): "own",
    ("api.read_logs", "GET"): "own",
    ("api.read_metrics", "GET"): "own",
    ("api.read_metric_series", "GET"): "own",
    ("api.describe_workspace", "GET"): "own",
    ("api.set_member", "PUT"): "own",
    ("api.remove_member", "DELETE"): "own",
    ("api.create_project", "POST"): "own",
    ("api.list_projects", "GET"): "own",
    ("api.describe_project", "GET"): "own",
    ("api.describe_experiment", "PATCH"): "own",
    ("api.describe_experiment", "DELETE"): "own",
    ("api.preview_gc", "GET"): "own",
    ("api.change_label", "POST"): "own",
    ("api.move_experiment", "POST"): "own",
    ("api.continue_experiment", "POST"): "own",
    ("api.download_model_def", "GET"): "own",
    ("api.kill_trial", "POST"): "own",
    ("api.start_unmanaged_trial", "POST"): "own",
    ("api.delete_checkpoints", "DELETE"): "own",
    # A fork is the caller's own experiment, made from one they may read.
    ("api.fork_experiment", "POST"): "create",
    ("api.master_config", "GET"): "admin",
    ("api.master_logs", "GET"): "admin",
    # Prometheus metrics: admins (metrics.allow's default) or the scrape token.
    ("prometheus.metrics", "GET"): "admin",
    ("web.experiment", "GET"): "own",
    ("web.trial", "GET"): "own",
    # The model registry (api/models.py, web/models.py).
    ("api.list_models", "GET"): "listing",
    ("web.models", "GET"): "listing",
    ("api.create_model", "POST"): "create",
    **{(f"api.{name}", method): "own" for name, method in (
        ("get_model", "GET"), ("patch_model", "PATCH"), ("archive_model", "POST"),
        ("unarchive_model", "POST"), ("move_model", "POST"), ("delete_model", "DELETE"),
        ("list_versions", "GET"), ("register_version", "POST"), ("get_version", "GET"),
        ("patch_version", "PATCH"), ("delete_version", "DELETE"))},
    ("web.model", "GET"): "own",
    # Workspace and project edit, archive and delete (api/workspaces.py): her workspace's.
    **{(f"api.{name}", method): "own" for name, method in (
        ("edit_workspace", "PATCH"), ("archive_workspace", "POST"),
        ("delete_workspace", "DELETE"), ("edit_project", "PATCH"),
        ("archive_project", "POST"), ("delete_project", "DELETE"),
        ("set_group_role", "PUT"), ("remove_group_role", "DELETE"))},
    # User administration and groups (api/user_admin.py, api/groups.py): cluster admins.
    **{(f"api.{name}", method): "admin" for name, method in (
        ("create_user", "POST"), ("edit_user", "PATCH"), ("activate_user", "POST"),
        ("create_group", "POST"), ("rename_group", "PATCH"),
        ("change_group_users", "POST"), ("delete_group", "DELETE"))},
    # Roles and groups are public on the master (Determined lists them to everyone); a
    # user's roles, like user names, too, but only in the workspaces the caller also sees.
    ("api.list_roles", "GET"): "public",
    ("api.list_groups", "GET"): "public",
    ("api.describe_group", "GET"): "public",
    ("api.user_roles", "GET"): "public",
    # Checkpoints, logs and the fork/continue forms on the pages (web/checkpoints.py,
    # web/trial_logs.py, web/forking.py): what the experiment's readers may see.
    **{(f"web.{name}", "GET"): "own" for name in (
        "checkpoint_download", "experiment_checkpoints_page", "trial_logs_text",
        "fork_experiment_page", "fork_trial_page", "continue_trial_page")},
}
# Found, but not a 200 for a reader: the checkpoint's files are not on disk, and only an
# ended single-trial experiment can be continued (the seeded one is ACTIVE).
NOT_200 = {"api.download_checkpoint": 404, "web.checkpoint_download": 404,
           "web.continue_trial_page": 409}
# Objects of a person rather than of a workspace (her tokens): a workspace viewer sees none.
PERSONAL = {"api.revoke_token"}
# Its owner's alone, even in a workspace: a shell's login key (docs/shell.md).
OWNER_ONLY = {"api.shell_keys"}
# What chooses what runs as alice is hers alone, even for an editor of her workspace or a
# cluster admin (issue 28, finding 1; authz.require_runs_as_self): each with the body that
# an editor's other changes would not make a 403.
INTRUDERS_CKPT = "bbbbbbbb-0000-4000-8000-00000000000b"
RUNS_AS_OWNER: dict[str, Any] = {
    "api.continue_experiment": {"config": TEMPLATE},
    "api.start_unmanaged_trial": {},
    "api.set_template": {"config": "environment: {environment_variables: [LD_PRELOAD=x]}\n"},
    "api.remove_template": None,
    "api.patch_model": {"name": "model-b"},
    "api.delete_model": None,
    "api.register_version": {"checkpoint_uuid": INTRUDERS_CKPT},
}


@pytest.fixture
def slurm_queue() -> FakeSlurmQueue:
    return FakeSlurmQueue()


# The walk runs on both kinds of master that tell users apart: proven users (auth.mode
# munge: each user's API token, and a web session cookie for the pages) and named users
# (auth.mode open with require_user: X-Hpcdet-User and the pages' name cookie).
WALKER_MODES = ("munge", "named")
_CURRENT: dict[str, Flask] = {}  # the walker app of the running test, for as_user()


@pytest.fixture(params=WALKER_MODES)
def walker_app(request: pytest.FixtureRequest, settings: MasterSettings,
               slurm_queue: FakeSlurmQueue) -> Iterator[Flask]:
    if request.param == "munge":
        identified = replace(settings, auth_mode="munge", admins=("root",))
    else:
        identified = replace(settings, require_user=True, admins=("root",))
    app = create_app(identified, backend=SlurmBackend(runner=slurm_queue))
    app.config["TESTING"] = True
    app.config["WALKER_TOKENS"] = {}
    _CURRENT["app"] = app
    yield app
    _CURRENT.clear()
    app.config["HPCDET_ENGINE"].dispose()


def _token(app: Flask, name: str, kind: str) -> str:
    """``name``'s token of ``kind`` on ``app``, issued once (only its hash is stored)."""
    cache: dict[tuple[str, str], str] = app.config["WALKER_TOKENS"]
    if (name, kind) not in cache:
        with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
            cache[(name, kind)] = tokens.issue(session, name, kind, dt.timedelta(hours=1))[0]
    return cache[(name, kind)]


def munge_mode(app: Flask) -> bool:
    return bool(app.config["HPCDET_SETTINGS"].auth_mode == "munge")


def as_user(name: str) -> dict[str, str]:
    """Headers that make the request ``name``'s on the running test's master."""
    app = _CURRENT["app"]
    if munge_mode(app):
        return {"Authorization": f"Bearer {_token(app, name, 'api')}"}
    return {"X-Hpcdet-User": name}


def seed(app: Flask, slurm_queue: FakeSlurmQueue, *, shared: bool = False) -> dict[str, Any]:
    """alice's workspace, project, experiment (trial, job, log, metric, checkpoint), task
    and template; her jobs in Slurm's queue and in the stored queue snapshot. ``shared``:
    the experiment, task and template are in her workspace, where the intruder is a viewer.
    """
    client = app.test_client()
    alice = as_user(OWNER)
    where = {"workspace": "team-a"} if shared else {}
    assert client.post("/api/v1/workspaces", json={"name": "team-a"},
                       headers=alice).status_code == 201
    assert client.post("/api/v1/workspaces/team-a/projects", headers=alice, json={
        "name": "proj-a", "description": "s3cret-project-text"}).status_code == 201
    if shared:
        assert client.put(f"/api/v1/workspaces/team-a/members/{INTRUDER}", headers=alice,
                          json={"role": "viewer"}).status_code == 200
    created = client.post("/api/v1/experiments", headers=alice, json={
        "config": CONFIG, "context": make_context(), **where})
    assert created.status_code == 201, created.get_json()
    exp_id = created.get_json()["experiment"]["id"]
    assert client.post("/api/v1/templates", headers=alice, json={
        "name": "tpl-a", "config": TEMPLATE, **where}).status_code == 201
    made = client.post("/api/v1/auth/tokens", headers=alice, json={"name": "s3cret-token"})
    assert made.status_code == 201, made.get_json()
    factory = app.config["HPCDET_SESSION_FACTORY"]
    with session_scope(factory) as session:
        trial = Trial(experiment_id=exp_id, state="QUEUED", hparams={"lr": 0.1}, seed=1,
                      token="trial-token")
        session.add(trial)
        session.flush()
        session.add_all([
            Job(trial_id=trial.id, run_id=1, job_id="301", name="det-x"),
            TrialLog(trial_id=trial.id, stream="stdout", line="s3cret-log"),
            Metric(trial_id=trial.id, group="validation", steps_completed=1,
                   name="validation_loss", value=0.5),
            Checkpoint(uuid=CKPT, trial_id=trial.id, steps_completed=1,
                       metadata_={"note": "s3cret-meta"}, resources={}, state="ACTIVE")])
        task = CommandTask(owner=OWNER, name="s3cret-task", state="QUEUED", job_id="302",
                           job_dir="/nonexistent", options=[], args=[], cwd="/", workdir="/",
                           output_pattern="out.txt", kind="shell",
                           workspace_id=created.get_json()["experiment"]["workspace_id"])
        session.add(task)
        session.flush()
        session.add(ShellKey(task_id=task.id, client_private_key="s3cret-task-key",
                             client_public_key="ssh-ed25519 A", host_public_key="ssh-ed25519 B"))
        ids = {"exp": exp_id, "trial": trial.id, "task": task.id, "token": made.get_json()["id"],
               "comment": trial_comment(session, "301")}
    task_comment = f"hpcdet:unit:task-{ids['task']}"
    assert client.post("/api/v1/models", headers=alice, json={
        "name": "model-a", "metadata": {"note": "s3cret-meta"}, **where}).status_code == 201
    assert client.post("/api/v1/models/model-a/versions", headers=alice,
                       json={"checkpoint_uuid": CKPT}).status_code == 201
    slurm_queue.add(FakeJob("301", 900, name="det-x", comment=ids["comment"]),
                    FakeJob("302", 800, name="s3cret-task", comment=task_comment))
    data = read_queue_snapshot(app.config["HPCDET_BACKEND"], app.config["HPCDET_SETTINGS"])
    with session_scope(factory) as session:
        store_snapshot(session, QUEUE, data)
    slurm_queue.calls.clear()
    return ids


def urls(rule: str, ids: dict[str, Any]) -> list[str]:
    """The rule with alice's objects filled in (one URL per lifecycle action)."""
    name = "team-a" if "/workspaces/" in rule else "tpl-a"
    choices = re.search(r"<any\(([^)]*)\):action>", rule)
    rule = re.sub(r"<any\([^)]*\):action>", "<action>", rule)
    url = (rule.replace("<int:exp_id>", str(ids["exp"]))
           .replace("<int:trial_id>", str(ids["trial"]))
           .replace("<int:task_id>", str(ids["task"])).replace("<uuid>", CKPT)
           .replace("<name>", name).replace("<user>", INTRUDER)
           .replace("<project>", "proj-a").replace("<job_id>", "301")
           .replace("<path:filename>", "hpcdet.css")
           .replace("<int:token_id>", str(ids["token"])).replace("<token>", "not-a-link")
           .replace("<identifier>", "model-a").replace("<int:number>", "1")
           .replace("<int:allocation_id>", "1").replace("<group>", "grp-a"))
    if choices is not None:
        actions = [action.strip() for action in choices.group(1).split(",")]
        return [url.replace("<action>", action) for action in actions]
    assert "<" not in url, rule
    return [url]


BODIES: dict[str, Any] = {
    "api.change_lifecycle": {},
    "api.update_one_job": {"priority": 5},
    "api.update_job_batch": {"updates": [{"job_id": "301", "priority": 5},
                                         {"job_id": "302", "priority": 5}]},
    "api.kill_task": {},
    "api.set_template": {"config": "description: overwritten\n"},
    "api.set_member": {"role": "admin"},
    "api.create_project": {"name": "intruders-project"},
    "api.create_experiment": {"config": CONFIG, "context": make_context(),
                              "workspace": "team-a"},
    "api.create_task": {"wrap": "true", "workspace": "team-a"},
    "api.create_command": {"entrypoint": ["true"], "workspace": "team-a"},
    "api.create_shell": {"workspace": "team-a"},
    "api.create_tensorboard": {"experiment_ids": [1], "workspace": "team-a"},
    "api.create_notebook": {"config": {}, "workspace": "team-a"},
    "api.create_template": {"name": "tpl-b", "config": TEMPLATE, "workspace": "team-a"},
    "api.create_workspace": {"name": "team-a"},
    "api.describe_experiment": {"name": "overwritten", "labels": []},
    "api.change_label": {"label": "intruders-label"},
    "api.move_experiment": {"workspace": None},
    "api.continue_experiment": {"config": "searcher: {max_length: {batches: 99}}"},
    "api.kill_trial": {},
    "api.start_unmanaged_trial": {},
    "api.delete_checkpoints": {"uuids": [CKPT]},
    "api.fork_experiment": {"config": CONFIG, "workspace": "team-a"},
    "api.create_model": {"name": "model-b", "workspace": "team-a"},
    "api.patch_model": {"notes": "changed"},
    "api.move_model": {"workspace": None},
    "api.register_version": {"checkpoint_uuid": CKPT},
    "api.patch_version": {"comment": "changed"},
    "api.edit_workspace": {"name": "renamed"},
    "api.edit_project": {"description": "changed"},
    "api.set_group_role": {"role": "admin"},
    "api.create_user": {"username": "newcomer"},
    "api.edit_user": {"active": False},
    "api.create_group": {"name": "grp-b"},
    "api.rename_group": {"name": "grp-c"},
    "api.change_group_users": {"add": [INTRUDER]},
}


def call(client: FlaskClient, method: str, url: str, endpoint: str, user: str) -> Any:
    app = _CURRENT["app"]
    if munge_mode(app):  # the pages know the user by the session cookie of a one-time link
        client.set_cookie(SESSION_COOKIE, _token(app, user, "web"))
    else:
        client.set_cookie("hpcdet_user", user)
    answer = client.open(url, method=method, json=BODIES.get(endpoint), headers=as_user(user))
    if endpoint == "api.logout":  # it revoked the caller's token: the next call gets a new one
        app.config["WALKER_TOKENS"].pop((user, "api"), None)
    return answer


def routes(app: Flask) -> list[tuple[str, str, str]]:
    """``(endpoint, method, rule)`` for every route and method of the app."""
    return sorted((rule.endpoint, method, rule.rule) for rule in app.url_map.iter_rules()
                  for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}))


def test_every_route_is_classified(walker_app: Flask) -> None:
    found = {(endpoint, method) for endpoint, method, _ in routes(walker_app)}
    assert sorted(found - set(ROUTES)) == [], "classify the new routes in ROUTES"
    assert sorted(set(ROUTES) - found) == [], "ROUTES names routes that no longer exist"


def test_a_non_member_gets_403_or_404_and_none_of_the_owners_data(
        walker_app: Flask, slurm_queue: FakeSlurmQueue) -> None:
    ids = seed(walker_app, slurm_queue)
    client = walker_app.test_client()
    walked = 0
    for endpoint, method, rule in routes(walker_app):
        kind = ROUTES[(endpoint, method)]
        for url in urls(rule, ids):
            answer = call(client, method, url, endpoint, INTRUDER)
            body = answer.get_data(as_text=True)
            answer.close()
            where = f"{method} {url} ({kind})"
            if kind == "own":
                assert answer.status_code in (403, 404), (where, body)
            elif kind == "token":
                assert answer.status_code == 401, (where, body)
            elif kind == "create" and endpoint != "api.create_workspace":
                assert answer.status_code == 404, (where, body)
            elif kind == "listing":
                assert answer.status_code == 200, (where, body)
            elif kind == "admin":
                assert answer.status_code == 403, (where, body)
            if endpoint != "static":
                leaked = [word for word in SECRETS if word in body]
                assert leaked == [], (where, leaked, body[:2000])
            walked += 1
    assert walked >= len(ROUTES)
    assert_nothing_changed(walker_app, ids, slurm_queue)


def test_a_viewer_reads_but_every_change_is_a_403(walker_app: Flask,
                                                  slurm_queue: FakeSlurmQueue) -> None:
    """In alice's workspace as a viewer: the same walk; reads answer, changes are 403."""
    ids = seed(walker_app, slurm_queue, shared=True)
    client = walker_app.test_client()
    for endpoint, method, rule in routes(walker_app):
        if ROUTES[(endpoint, method)] != "own":
            continue
        for url in urls(rule, ids):
            answer = call(client, method, url, endpoint, INTRUDER)
            body = answer.get_data().decode("utf-8", "replace")  # model-def is a .tgz
            answer.close()
            if endpoint in PERSONAL:  # a person's, in no workspace: unseen by members
                assert answer.status_code == 404, (method, url, body[:500])
            elif endpoint in OWNER_ONLY:
                assert answer.status_code == 403, (method, url, body[:500])
                assert "s3cret-task-key" not in body
            elif method == "GET" and endpoint in NOT_200:
                assert answer.status_code == NOT_200[endpoint], (method, url, body[:500])
            elif method == "GET":
                assert answer.status_code == 200, (method, url, body[:500])
            elif method != "GET":
                assert answer.status_code == 403, (method, url, body[:500])
    assert_nothing_changed(walker_app, ids, slurm_queue, viewer=True)
    made = client.post("/api/v1/experiments", headers=as_user(INTRUDER),
                       json=BODIES["api.create_experiment"])
    assert made.status_code == 403


def assert_nothing_changed(app: Flask, ids: dict[str, Any], slurm_queue: FakeSlurmQueue,
                           viewer: bool = False) -> None:
    """alice's objects are as she left them, and no scontrol ran for the intruder."""
    assert slurm_queue.commands("scontrol") == []
    with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
        exp = session.get(Experiment, ids["exp"])
        assert exp is not None and exp.state == "ACTIVE" and not exp.archived
        task = session.get(CommandTask, ids["task"])
        assert task is not None and task.state == "QUEUED" and not task.cancel_requested
        template = session.get(Template, "tpl-a")
        assert template is not None and template.config.get("description") is None
        members = session.scalars(select(WorkspaceMember)).all()
        expected = [(OWNER, "admin")] + ([(INTRUDER, "viewer")] if viewer else [])
        assert sorted((m.user, m.role) for m in members) == expected
        assert session.get(Experiment, ids["exp"] + 1) is None  # none made in her workspace
        token = session.get(AuthToken, ids["token"])
        assert token is not None and token.revoked_at is None
        model = session.scalars(select(RegisteredModel)).one()
        assert (model.notes, model.archived) == ("", False)
        assert [(v.version, v.comment) for v in session.scalars(select(ModelVersion))] == [
            (1, "")]


def test_the_owner_reads_every_route_the_intruder_was_refused(
        walker_app: Flask, slurm_queue: FakeSlurmQueue) -> None:
    """The walk above used real URLs: alice gets 200 from each of them (GET)."""
    ids = seed(walker_app, slurm_queue)
    client = walker_app.test_client()
    for endpoint, method, rule in routes(walker_app):
        if ROUTES[(endpoint, method)] != "own" or method != "GET":
            continue
        for url in urls(rule, ids):
            answer = call(client, method, url, endpoint, OWNER)
            answer.close()
            if endpoint in NOT_200:  # found; its files are not on disk, or not continuable
                assert answer.status_code == NOT_200[endpoint], url
                assert ("its files are not at" in answer.get_data(as_text=True)
                        or "only an ended experiment" in answer.get_data(as_text=True)), url
                continue
            assert answer.status_code == 200, (url, answer.get_data(as_text=True)[:500])


def test_listings_show_the_owner_her_objects(walker_app: Flask,
                                             slurm_queue: FakeSlurmQueue) -> None:
    ids = seed(walker_app, slurm_queue)
    client = walker_app.test_client()
    mine = client.get("/api/v1/experiments", headers=as_user(OWNER)).get_json()
    assert mine["total"] == 1 and mine["experiments"][0]["id"] == ids["exp"]
    theirs = client.get("/api/v1/experiments", headers=as_user(INTRUDER)).get_json()
    assert theirs == {"experiments": [], "total": 0}
    unseen = client.get("/api/v1/experiments?workspace=team-a", headers=as_user(INTRUDER))
    assert unseen.status_code == 404 and OWNER not in unseen.get_data(as_text=True)
    jobs = client.get("/api/v1/jobs", headers=as_user(INTRUDER)).get_json()["jobs"]
    assert {row["job_id"]: row["hidden"] for row in jobs} == {"301": True, "302": True}
    shown = client.get("/api/v1/jobs", headers=as_user(OWNER)).get_json()["jobs"]
    assert [row["experiment_id"] for row in shown if row["job_id"] == "301"] == [ids["exp"]]
    admin = client.get("/api/v1/tasks", headers=as_user("root")).get_json()
    assert admin["total"] == 1


@pytest.mark.parametrize("who", ["editor", "cluster admin"])
def test_what_runs_as_the_owner_is_hers_alone(walker_app: Flask, slurm_queue: FakeSlurmQueue,
                                              who: str) -> None:
    """The editor walk: in alice's workspace as an editor (or as a cluster admin), every
    route that would choose what runs as alice answers 403 naming the rule."""
    ids = seed(walker_app, slurm_queue, shared=True)
    client = walker_app.test_client()
    caller = INTRUDER if who == "editor" else "root"
    assert client.put(f"/api/v1/workspaces/team-a/members/{INTRUDER}", json={
        "role": "editor"}, headers=as_user(OWNER)).status_code == 200
    _intruders_checkpoint(walker_app, client)
    walked = set()
    for endpoint, method, rule in routes(walker_app):
        if endpoint not in RUNS_AS_OWNER:
            continue
        assert ROUTES[(endpoint, method)] == "own"
        for url in urls(rule, ids):
            answer = call_as(client, method, url, RUNS_AS_OWNER[endpoint], caller)
            body = answer.get_json()
            assert answer.status_code == 403, (method, url, body)
            assert "only its owner 'alice' may" in body["error"]["message"], body
            walked.add(endpoint)
    assert walked == set(RUNS_AS_OWNER)
    with session_scope(walker_app.config["HPCDET_SESSION_FACTORY"]) as session:
        exp = session.get_one(Experiment, ids["exp"])
        assert (exp.state, "S3CRET_ENV" in str(exp.config)) == ("ACTIVE", False)
        template = session.get_one(Template, "tpl-a")
        assert "LD_PRELOAD" not in str(template.config)
        model = session.scalars(select(RegisteredModel)).one()
        assert model.name == "model-a"
        assert [v.checkpoint_uuid for v in session.scalars(select(ModelVersion))] == [CKPT]


def call_as(client: FlaskClient, method: str, url: str, body: Any, user: str) -> Any:
    """One API call as ``user`` (by token or by name, as the walker's master knows them)."""
    return client.open(url, method=method, json=body, headers=as_user(user))


def _intruders_checkpoint(app: Flask, client: FlaskClient) -> None:
    """The intruder's own experiment in alice's workspace, with checkpoint INTRUDERS_CKPT."""
    made = client.post("/api/v1/experiments", headers=as_user(INTRUDER), json={
        "config": CONFIG, "context": make_context(), "workspace": "team-a"})
    assert made.status_code == 201, made.get_json()
    with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
        trial = Trial(experiment_id=made.get_json()["experiment"]["id"], state="COMPLETED",
                      hparams={}, seed=1, token="t")
        session.add(trial)
        session.flush()
        session.add(Checkpoint(uuid=INTRUDERS_CKPT, trial_id=trial.id, steps_completed=1,
                               metadata_={}, resources={}, state="ACTIVE"))
