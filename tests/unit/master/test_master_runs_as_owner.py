"""What runs as a user is that user's choice alone (issue 28, finding 1).

user_a's experiment lived in a workspace where user_b was an editor; user_b continued it
with a config override (``environment_variables: [LD_PRELOAD=...]``), the master answered
200 and the run-as helper submitted the job as user_a: anyone an owner ever made an editor
could become that owner on the cluster. The rule (Determined's: a run belongs to whoever
submits it), :func:`hpcdet.master.security.authz.require_runs_as_self`: a route that makes
a job run as an object's owner with something the caller chose is that owner's alone;
editors, workspace admins and cluster admins are refused alike, and fork is the way out.

The master here runs jobs as their owners (``security.jobs_run_as: owner``, ``auth.mode:
munge``) against the scripted scheduler, with a fake ``sudo``: each submission records the
user it runs as. docs/admin/security.md ("What only the owner may do") lists each route,
its decision and the test below that keeps it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from lifecycle_helpers import end_job, session_of, trial_of
from master_helpers import CONFIG, FakeSudo, assert_error, make_context
from sqlalchemy import select

from hpcdet.dispatcher import JobPhase
from hpcdet.dispatcher.runas import RunAs
from hpcdet.master.api.auth import SESSION_COOKIE
from hpcdet.master.api.refusals import http_status
from hpcdet.master.app import create_app
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
from hpcdet.master.errors import DomainError
from hpcdet.master.models import (
    Checkpoint,
    CommandTask,
    Experiment,
    ModelVersion,
    RegisteredModel,
    Template,
    Trial,
)
from hpcdet.master.proxy.access import authorize
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.security import tokens
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.runas import RunAsSettings
from hpcdet.states import State

OWNER = "alice"
# Everyone but the owner: an editor and an admin of her workspace, a cluster admin, a viewer.
OTHERS = ("ed", "boss", "root", "vic")
EVIL = "environment: {environment_variables: [LD_PRELOAD=/home/ed/evil.so]}\n"
RULE = "a run belongs to whoever submits it"


@pytest.fixture
def sudo() -> FakeSudo:
    return FakeSudo()


@pytest.fixture
def owner_app(settings: MasterSettings, fake: FakeSchedulerBackend,
              sudo: FakeSudo) -> Iterator[Flask]:
    """A munge master whose jobs run as their owners, on the scripted scheduler."""
    fake.runas = RunAs(helper="/h", runner=sudo)  # type: ignore[arg-type]
    app = create_app(replace(settings, auth_mode="munge", admins=("root",),
                             runas=RunAsSettings(jobs_run_as="owner")), backend=fake)
    app.config["TESTING"] = True
    app.config["TOKENS"] = {}
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def client(owner_app: Flask) -> FlaskClient:
    return owner_app.test_client()


@pytest.fixture
def cycle(owner_app: Flask, fake: FakeSchedulerBackend) -> Reconciler:
    return make_reconciler(owner_app.config["HPCDET_SETTINGS"],
                           make_session_factory(owner_app.config["HPCDET_ENGINE"]), fake)


def as_user(app: Flask, name: str) -> dict[str, str]:
    """``name``'s bearer token on ``app`` (issued once; MUNGE proved who they are)."""
    cache: dict[str, str] = app.config["TOKENS"]
    if name not in cache:
        with session_of(app) as session:
            cache[name] = tokens.issue(session, name, "api", dt.timedelta(hours=1))[0]
            session.commit()
    return {"Authorization": f"Bearer {cache[name]}"}


def api(client: FlaskClient, method: str, path: str, user: str, **kwargs: Any) -> Any:
    return client.open("/api/v1" + path, method=method,
                       headers=as_user(client.application, user), **kwargs)


def ok(response: Any, status: int = 200) -> dict[str, Any]:
    body: dict[str, Any] = response.get_json()
    assert response.status_code == status, body
    return body


def refused(response: Any, doing: str) -> str:
    """The rule's 403: it names the owner, what was asked and the rule."""
    message = assert_error(response, 403, "forbidden")
    assert f"only its owner {OWNER!r} may {doing}" in message, message
    assert RULE in message and "not a cluster admin" in message, message
    return message


@pytest.fixture
def team(client: FlaskClient) -> None:
    """alice's workspace ``team``: ed editor, boss admin, vic viewer."""
    ok(api(client, "POST", "/workspaces", OWNER, json={"name": "team"}), 201)
    for user, role in (("ed", "editor"), ("boss", "admin"), ("vic", "viewer")):
        ok(api(client, "PUT", f"/workspaces/team/members/{user}", OWNER, json={"role": role}))


def create(client: FlaskClient, user: str = OWNER, **extra: Any) -> int:
    body = {"config": CONFIG, "context": make_context(), "workspace": "team", **extra}
    return int(ok(api(client, "POST", "/experiments", user, json=body), 201)
               ["experiment"]["id"])


def ended(client: FlaskClient, cycle: Reconciler, fake: FakeSchedulerBackend) -> int:
    """alice's experiment in ``team``, its one trial run (as alice) and COMPLETED."""
    exp_id = create(client)
    cycle.cycle()
    trial_id = trial_of(client.application, exp_id).id
    end_job(client.application, fake, cycle, trial_id, JobPhase.COMPLETED)
    cycle.cycle()
    assert experiment(client.application, exp_id).state == "COMPLETED"
    return exp_id


def experiment(app: Flask, exp_id: int) -> Experiment:
    with session_of(app) as session:
        exp = session.get_one(Experiment, exp_id)
        session.expunge(exp)
        return exp


def submitted_as(fake: FakeSchedulerBackend) -> list[str | None]:
    """The user each submission so far runs as, in order."""
    return [submission.owner for submission in fake.submitted]


# ---- continue: the finding -----------------------------------------------------------------


@pytest.mark.usefixtures("team")
def test_an_editor_cannot_continue_the_owners_experiment_with_her_environment_changed(
        client: FlaskClient, cycle: Reconciler, fake: FakeSchedulerBackend,
        sudo: FakeSudo) -> None:
    exp_id = ended(client, cycle, fake)
    assert submitted_as(fake) == [OWNER]
    message = refused(api(client, "POST", f"/experiments/{exp_id}/continue", "ed",
                          json={"config": EVIL}), f"continue experiment {exp_id}")
    assert f"fork it to run it as yourself (det experiment fork {exp_id})" in message
    exp = experiment(client.application, exp_id)
    assert exp.state == "COMPLETED" and "LD_PRELOAD" not in str(exp.config)
    calls = len(sudo.calls)
    cycle.cycle()
    assert submitted_as(fake) == [OWNER] and len(sudo.calls) == calls  # nothing ran as her


@pytest.mark.usefixtures("team")
@pytest.mark.parametrize("user", OTHERS)
def test_no_one_but_the_owner_continues_her_experiment(
        client: FlaskClient, cycle: Reconciler, fake: FakeSchedulerBackend, user: str) -> None:
    """Not her workspace's admin, not a cluster admin, even with no override at all."""
    exp_id = ended(client, cycle, fake)
    for body in ({}, {"config": "searcher: {max_length: {batches: 50}}"}):
        refused(api(client, "POST", f"/experiments/{exp_id}/continue", user, json=body),
                f"continue experiment {exp_id}")
    assert experiment(client.application, exp_id).state == "COMPLETED"
    cycle.cycle()
    assert submitted_as(fake) == [OWNER]


@pytest.mark.usefixtures("team")
def test_the_owner_continues_and_her_trial_runs_as_her(
        client: FlaskClient, cycle: Reconciler, fake: FakeSchedulerBackend) -> None:
    exp_id = ended(client, cycle, fake)
    body = ok(api(client, "POST", f"/experiments/{exp_id}/continue", OWNER,
                  json={"config": "searcher: {max_length: {batches: 50}}"}))
    assert body["experiment"]["state"] == "ACTIVE"
    cycle.cycle()
    assert submitted_as(fake) == [OWNER, OWNER]


@pytest.mark.usefixtures("team")
def test_the_trial_page_offers_continue_to_the_owner_only(
        client: FlaskClient, owner_app: Flask, cycle: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    trial_id = trial_of(owner_app, ended(client, cycle, fake)).id
    for user, offered in (("ed", False), ("root", False), (OWNER, True)):
        client.set_cookie(SESSION_COOKIE, web_session(owner_app, user))
        page = client.get(f"/trials/{trial_id}").get_data(as_text=True)
        assert ("data-continue-trial" in page) is offered, user
    client.set_cookie(SESSION_COOKIE, web_session(owner_app, "ed"))
    form = client.get(f"/trials/{trial_id}/continue")
    assert form.status_code == 409
    assert "only its owner alice may continue" in form.get_data(as_text=True)


def web_session(app: Flask, name: str) -> str:
    """A web session token of ``name`` (what a sign-in link leaves in the cookie)."""
    with session_of(app) as session:
        token = tokens.issue(session, name, "web", dt.timedelta(hours=1))[0]
        session.commit()
    return token


# ---- fork: the way out -------------------------------------------------------------------


@pytest.mark.usefixtures("team")
def test_an_editors_fork_is_his_own_and_its_job_runs_as_him(
        client: FlaskClient, cycle: Reconciler, fake: FakeSchedulerBackend,
        sudo: FakeSudo) -> None:
    exp_id = ended(client, cycle, fake)
    forked = ok(api(client, "POST", f"/experiments/{exp_id}/fork", "ed",
                    json={"config": CONFIG + EVIL, "workspace": "team"}), 201)["experiment"]
    assert (forked["owner"], forked["parent_id"]) == ("ed", exp_id)
    sudo.calls.clear()
    cycle.cycle()
    assert submitted_as(fake) == [OWNER, "ed"]
    assert sudo.users() == {"ed"}  # its job directory was written as ed, not alice
    trial = trial_of(client.application, forked["id"])
    assert trial.job_dir.split("/")[-3] == "ed"  # <job_storage_root>/ed/exp-N/trial-M
    assert experiment(client.application, exp_id).state == "COMPLETED"  # hers untouched


# ---- what editors may still do: the owner's own code, unchanged -----------------------------


@pytest.mark.usefixtures("team")
def test_an_editor_still_sets_labels_priority_and_gc_and_pauses_and_kills(
        client: FlaskClient, cycle: Reconciler, fake: FakeSchedulerBackend) -> None:
    exp_id = create(client)
    cycle.cycle()
    ok(api(client, "PATCH", f"/experiments/{exp_id}", "ed", json={
        "name": "renamed", "description": "d", "labels": ["x"], "priority": 7, "weight": 2,
        "max_slots": 4, "gc_policy": {"save_experiment_best": 1, "save_trial_best": 1,
                                      "save_trial_latest": 1}}))
    ok(api(client, "POST", f"/experiments/{exp_id}/labels/add", "ed", json={"label": "y"}))
    for action in ("pause", "activate", "kill"):
        ok(api(client, "POST", f"/experiments/{exp_id}/{action}", "ed"))
    exp = experiment(client.application, exp_id)
    assert (exp.name, exp.labels, exp.config["resources"]["priority"]) == (
        "renamed", ["x", "y"], 7)
    assert exp.config["entrypoint"] == "python3 train.py"
    assert set(submitted_as(fake)) == {OWNER}


# ---- templates ---------------------------------------------------------------------------


@pytest.mark.usefixtures("team")
@pytest.mark.parametrize("user", ["ed", "boss", "root"])
def test_only_the_owner_replaces_or_removes_her_workspace_template(
        client: FlaskClient, owner_app: Flask, user: str) -> None:
    ok(api(client, "POST", "/templates", OWNER, json={
        "name": "shared", "config": "description: alice's\n", "workspace": "team"}), 201)
    message = refused(api(client, "PUT", "/templates/shared", user, json={"config": EVIL}),
                      "replace template 'shared'")
    assert "create a template of your own under another name" in message
    refused(api(client, "DELETE", "/templates/shared", user), "remove template 'shared'")
    with session_of(owner_app) as session:
        template = session.get(Template, "shared")
        assert template is not None and template.config == {"description": "alice's"}
    ok(api(client, "PUT", "/templates/shared", OWNER, json={"config": "description: v2\n"}))
    ok(api(client, "DELETE", "/templates/shared", OWNER))


@pytest.mark.usefixtures("team")
def test_an_editor_still_uses_and_makes_workspace_templates(client: FlaskClient,
                                                            fake: FakeSchedulerBackend,
                                                            cycle: Reconciler) -> None:
    """What a template holds runs as whoever names it: ed's experiment from alice's
    template is ed's, and ed's own template in her workspace is his to replace."""
    ok(api(client, "POST", "/templates", OWNER, json={
        "name": "shared", "config": "description: alice's\n", "workspace": "team"}), 201)
    exp_id = create(client, "ed", template="shared")
    cycle.cycle()
    assert experiment(client.application, exp_id).owner == "ed"
    assert submitted_as(fake) == ["ed"]
    ok(api(client, "POST", "/templates", "ed", json={
        "name": "eds", "config": "description: ed's\n", "workspace": "team"}), 201)
    ok(api(client, "PUT", "/templates/eds", "ed", json={"config": "description: v2\n"}))


# ---- the model registry ------------------------------------------------------------------


def checkpoint_of(app: Flask, exp_id: int, uuid: str) -> str:
    """A COMPLETED checkpoint ``uuid`` of the experiment (rows only: no file is read)."""
    with session_of(app) as session:
        trial = Trial(experiment_id=exp_id, state="COMPLETED", hparams={}, seed=1, token="t")
        session.add(trial)
        session.flush()
        session.add(Checkpoint(uuid=uuid, trial_id=trial.id, steps_completed=1, metadata_={},
                               resources={}, state="ACTIVE"))
        session.commit()
    return uuid


HERS = "aaaaaaaa-0000-4000-8000-00000000000a"
HIS = "bbbbbbbb-0000-4000-8000-00000000000b"


@pytest.fixture
def model(client: FlaskClient, owner_app: Flask, team: None) -> None:
    """alice's model ``m`` in ``team``; a checkpoint of alice's and one of ed's there."""
    checkpoint_of(owner_app, create(client), HERS)
    checkpoint_of(owner_app, create(client, "ed"), HIS)
    ok(api(client, "POST", "/models", OWNER, json={"name": "m", "workspace": "team"}), 201)


def versions(app: Flask) -> list[tuple[int, str, str]]:
    with session_of(app) as session:
        return [(v.version, v.checkpoint_uuid, v.owner) for v in session.scalars(
            select(ModelVersion).order_by(ModelVersion.version))]


@pytest.mark.usefixtures("model")
@pytest.mark.parametrize("user", ["ed", "root"])
def test_no_one_but_the_owner_puts_another_users_checkpoint_in_her_model(
        client: FlaskClient, owner_app: Flask, user: str) -> None:
    """She loads her model's versions as herself: one pointing at ed's checkpoint would
    load what ed chose."""
    message = refused(api(client, "POST", "/models/m/versions", user,
                          json={"checkpoint_uuid": HIS}),
                      f"register ed's checkpoint {HIS} in model 'm'")
    assert "register it in a model of your own (det model create)" in message
    assert versions(owner_app) == []


@pytest.mark.usefixtures("model")
def test_an_editor_registers_the_owners_checkpoint_and_the_owner_anyones(
        client: FlaskClient, owner_app: Flask) -> None:
    ok(api(client, "POST", "/models/m/versions", "ed", json={"checkpoint_uuid": HERS}), 201)
    ok(api(client, "POST", "/models/m/versions", OWNER, json={"checkpoint_uuid": HIS}), 201)
    ok(api(client, "PATCH", "/models/m/versions/1", "ed", json={"comment": "fine"}))
    assert versions(owner_app) == [(1, HERS, "ed"), (2, HIS, OWNER)]


@pytest.mark.usefixtures("model")
@pytest.mark.parametrize("user", ["ed", "boss", "root"])
def test_only_the_owner_renames_or_deletes_her_model(client: FlaskClient, owner_app: Flask,
                                                      user: str) -> None:
    """A freed name could be taken again by a model of someone else's checkpoints."""
    refused(api(client, "PATCH", "/models/m", user, json={"name": "old-m"}),
            "rename model 'm'")
    refused(api(client, "DELETE", "/models/m", user), "delete model 'm'")
    ok(api(client, "PATCH", "/models/m", user, json={"description": "still editable"}))
    with session_of(owner_app) as session:
        assert [m.name for m in session.scalars(select(RegisteredModel))] == ["m"]
    ok(api(client, "PATCH", "/models/m", OWNER, json={"name": "m2"}))
    ok(api(client, "DELETE", "/models/m2", OWNER))


# ---- tasks: every one runs as whoever starts it -----------------------------------------


@pytest.mark.usefixtures("team")
def test_tasks_run_as_who_starts_them_even_over_the_owners_experiment(
        client: FlaskClient, owner_app: Flask, fake: FakeSchedulerBackend) -> None:
    exp_id = create(client)
    made = [ok(api(client, "POST", path, "ed", json={**body, "workspace": "team"}), 201)
            ["task"] for path, body in (
                ("/commands", {"entrypoint": ["true"]}), ("/notebooks", {"config": {}}),
                ("/shells", {}), ("/tensorboards", {"experiment_ids": [exp_id]}))]
    assert [t["owner"] for t in made] == ["ed"] * 4
    assert submitted_as(fake) == ["ed"] * 4
    shell = made[2]["id"]
    assert "only the owner" in assert_error(api(client, "GET", f"/shells/{shell}/keys",
                                                OWNER), 403, "forbidden")


def running_notebook(app: Flask, owner: str) -> int:
    """A RUNNING notebook task of ``owner`` in ``team`` (its service not registered yet)."""
    with session_of(app) as session:
        workspace = session.scalar(select(Experiment.workspace_id).limit(1))
        task = CommandTask(owner=owner, name="nb", state=State.RUNNING.value, job_id="900",
                           job_dir="/nonexistent", options=[], args=[], cwd="/", workdir="/",
                           output_pattern="out.txt", kind="notebook", workspace_id=workspace,
                           service_token="t")
        session.add(task)
        session.commit()
        return task.id


@pytest.mark.usefixtures("team")
@pytest.mark.parametrize("user", ["ed", "boss", "root"])
def test_only_the_owner_opens_her_notebook(client: FlaskClient, owner_app: Flask,
                                           user: str) -> None:
    """A notebook's terminal and kernels run code as its owner: a cluster admin who opened
    it would run code as her."""
    create(client)  # her workspace has an experiment: the notebook goes in the same one
    task_id = running_notebook(owner_app, OWNER)
    refusal = opening(owner_app, task_id, user)
    assert http_status(refusal) == 403
    assert f"only its owner {OWNER!r} may open the notebook of task {task_id}" in \
        refusal.message
    assert "start a notebook of your own (det notebook start)" in refusal.message
    # Past the rule, alice is told only that her notebook is not up yet.
    assert http_status(opening(owner_app, task_id, OWNER)) == 503


def opening(app: Flask, task_id: int, user: str) -> DomainError:
    """Why the proxy does not open the task's service for ``user``."""
    with pytest.raises(DomainError) as caught:
        authorize(app, task_id, list(as_user(app, user).items()))
    return caught.value


def test_an_anonymous_experiment_is_nobodys_to_continue(
        client: FlaskClient, owner_app: Flask) -> None:
    """Made while the master was open: everyone may still change it, but nothing may run
    as "anonymous" on a master that tells users apart (fork it)."""
    with session_of(owner_app) as session:
        exp = Experiment(name="old", owner="anonymous", config={}, original_config="",
                         context=b"", searcher_name="single", state=State.COMPLETED.value)
        session.add(exp)
        session.commit()
        exp_id = exp.id
    message = assert_error(api(client, "POST", f"/experiments/{exp_id}/continue", "root",
                               json={}), 403, "forbidden")
    assert "only its owner 'anonymous'" in message
    ok(api(client, "PATCH", f"/experiments/{exp_id}", "ed", json={"name": "renamed"}))


def test_an_open_master_cannot_tell_callers_apart(settings: MasterSettings) -> None:
    """Without identities there is no one to protect: the rule lets everyone through."""
    from hpcdet.master.security.authz import require_runs_as_self, runs_as_self

    assert runs_as_self(settings, "bob", OWNER)
    require_runs_as_self(settings, "bob", OWNER, "continue experiment 1", "fork it")
    named = replace(settings, require_user=True)
    assert runs_as_self(named, OWNER, OWNER) and not runs_as_self(named, "bob", OWNER)
