"""Who is calling, proven with the REAL MUNGE: ``det`` run as the Unix users ``user_a``,
``user_b`` and ``intruder`` (``runuser``) against a live master with ``auth.mode: munge``.

Needs the dev cluster's users (``scripts/dev-cluster users``) and a running ``munged``;
the test run itself must be root (to ``runuser``).
"""

from __future__ import annotations

import datetime as dt
import json
import pwd
import stat
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from it_helpers import LiveMaster, wait_for
from it_users import USERS, as_user, check_users, fresh_home, ok, sleeper_experiment

pytestmark = pytest.mark.multiuser


@pytest.fixture
def master_settings() -> dict[str, Any]:
    return {"auth": {"mode": "munge", "admins": []}}


@pytest.fixture(scope="module", autouse=True)
def _users_exist() -> None:
    check_users()


@pytest.fixture(autouse=True)
def _clean_homes() -> None:
    for user in USERS:
        fresh_home(user)


def test_whoami_is_the_unix_user(master: LiveMaster) -> None:
    for user in ("user_a", "user_b"):
        assert ok(as_user(master, user, "user", "whoami")).strip() == user
        auth = Path(pwd.getpwnam(user).pw_dir) / ".hpcdet" / "auth.json"
        info = auth.stat()
        assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == pwd.getpwnam(user).pw_uid
        assert stat.S_IMODE(auth.parent.stat().st_mode) == 0o700
    assert {"user_a", "user_b"} <= set(ok(as_user(master, "user_b", "user", "list")).split())


def test_det_u_does_not_make_the_intruder_user_a(master: LiveMaster) -> None:
    """Finding 2: ``det -u user_a`` from any Unix account acted as user_a."""
    assert ok(as_user(master, "intruder", "-u", "user_a", "user", "whoami")).strip() \
        == "intruder"
    forged = httpx.get(f"{master.url}/api/v1/auth/whoami", headers={"X-Hpcdet-User": "user_a"})
    assert forged.status_code == 401


def munge_as(user: str, payload: str) -> str:
    done = subprocess.run(["runuser", "-u", user, "--", "munge", "--string", payload],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_a_replayed_credential_is_refused(master: LiveMaster) -> None:
    credential = munge_as("user_a", f"hpcdet-login {master.url}")
    first = httpx.post(f"{master.url}/api/v1/auth/login", json={"credential": credential})
    assert first.status_code == 200 and first.json()["username"] == "user_a"
    again = httpx.post(f"{master.url}/api/v1/auth/login", json={"credential": credential})
    assert again.status_code == 401 and "Replayed" in again.json()["error"]["message"]


def test_a_credential_for_another_master_is_refused(master: LiveMaster) -> None:
    credential = munge_as("user_a", "hpcdet-login http://127.0.0.1:1")
    answer = httpx.post(f"{master.url}/api/v1/auth/login", json={"credential": credential})
    assert answer.status_code == 401


def test_expired_and_revoked_tokens_are_refused(master: LiveMaster) -> None:
    created = json.loads(ok(as_user(master, "user_a", "user", "token", "create", "--json")))
    token = created["token"]
    use = as_user(master, "intruder", "user", "whoami", extra_env={"DET_USER_TOKEN": token})
    assert ok(use).strip() == "user_a"  # a stolen API token works until revoked: revoke it
    ok(as_user(master, "user_a", "user", "token", "revoke", str(created["id"])))
    refused = as_user(master, "intruder", "user", "whoami", extra_env={"DET_USER_TOKEN": token})
    assert refused.returncode == 1 and "revoked; run det user login" in refused.stderr
    second = json.loads(ok(as_user(master, "user_a", "user", "token", "create", "--json")))
    engine = sa.create_engine(master.db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE auth_tokens SET expires_at = :t WHERE id = :id"),
                     {"t": dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=1),
                      "id": second["id"]})
    engine.dispose()
    expired = as_user(master, "intruder", "user", "whoami",
                      extra_env={"DET_USER_TOKEN": second["token"]})
    assert expired.returncode == 1 and "expired; run det user login" in expired.stderr


def test_a_stored_session_is_renewed_after_it_expires(master: LiveMaster) -> None:
    ok(as_user(master, "user_a", "user", "login"))
    engine = sa.create_engine(master.db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE auth_tokens SET expires_at = :t WHERE username = "
                             "'user_a'"), {"t": dt.datetime.now(dt.timezone.utc)})
    engine.dispose()
    assert ok(as_user(master, "user_a", "user", "whoami")).strip() == "user_a"


def test_the_owner_is_the_proven_user(master: LiveMaster) -> None:
    path = sleeper_experiment("intruder", "owned")
    created = as_user(master, "intruder", "-u", "user_a", "experiment", "create", str(path),
                      str(path.parent))
    exp_id = int(ok(created).split()[-1])
    owner = master_get(master, "intruder", f"/experiments/{exp_id}")["experiment"]["owner"]
    assert owner == "intruder"
    # user_a, whose name was given, does not even see it: it is intruder's alone.
    assert master_get(master, "user_a", f"/experiments/{exp_id}")["status"] == 404
    ok(as_user(master, "intruder", "experiment", "kill", str(exp_id)))


def master_get(master: LiveMaster, user: str, path: str) -> Any:
    token = json.loads(ok(as_user(master, user, "user", "token", "create", "--json")))["token"]
    answer = httpx.get(f"{master.url}/api/v1{path}", headers={"Authorization": f"Bearer {token}"})
    return answer.json()


@pytest.mark.slurm
def test_a_trial_token_works_for_its_own_trial_only(master: LiveMaster) -> None:
    ids = []
    for name in ("one", "two"):
        path = sleeper_experiment("user_a", name)
        ids.append(int(ok(as_user(master, "user_a", "experiment", "create", str(path),
                                  str(path.parent))).split()[-1]))

    def tokens() -> dict[int, str] | None:
        found = {int(p.parent.name.removeprefix("trial-")): p.read_text().strip()
                 for p in master.job_root.glob("exp-*/trial-*/.token")}
        return found if len(found) == 2 else None

    found = wait_for(tokens, "both trials' token files")
    (mine, my_token), (other, _) = sorted(found.items())
    body = {"group": "training", "reports": [{"steps_completed": 1, "metrics": {"loss": 1.0}}]}
    url = f"{master.url}/api/v1/trials/{{}}/metrics"
    auth = {"Authorization": f"Bearer {my_token}"}
    assert httpx.post(url.format(other), json=body, headers=auth).status_code == 401
    assert httpx.post(url.format(mine), json=body, headers=auth).status_code == 200
    assert httpx.get(f"{master.url}/api/v1/auth/whoami", headers=auth).status_code == 401
    engine = sa.create_engine(master.db_url)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT token FROM trials WHERE id = :id"),
                              {"id": mine}).scalar()
    engine.dispose()
    assert stored != my_token and my_token not in str(stored)
    for exp_id in ids:
        ok(as_user(master, "user_a", "experiment", "kill", str(exp_id)))
