"""auth.mode munge: MUNGE login (a FAKE munge), hashed session/API tokens, the ignored name
header, expiry and revocation, the web's one-time link, session cookie and CSRF token."""

from __future__ import annotations

import datetime as dt
import os
import pwd
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from fake_munge import FakeMunge
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error, make_context
from sqlalchemy import select, update

from hpcdet import munge
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.api.auth import SESSION_COOKIE
from hpcdet.master.app import create_app
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import AuthToken, Experiment, User
from hpcdet.master.security.tokens import csrf_token, hash_token, issue
from hpcdet.master.settings.core import MasterSettings

ME = pwd.getpwuid(os.getuid()).pw_name
CONFIG = "name: mine\nentrypoint: model_def:Trial\nsearcher: {name: single, metric: loss}\n"


@pytest.fixture
def fake_munge(monkeypatch: pytest.MonkeyPatch) -> FakeMunge:
    fake = FakeMunge(os.getuid())
    monkeypatch.setattr(munge, "decode", fake.decode)
    return fake


@pytest.fixture
def munge_app(settings: MasterSettings, fake_munge: FakeMunge) -> Iterator[Flask]:
    app = create_app(replace(settings, auth_mode="munge", port=8080), backend=SlurmBackend())
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def mc(munge_app: Flask) -> FlaskClient:
    return munge_app.test_client()


def login(client: FlaskClient, fake: FakeMunge, url: str = "http://localhost:8080") -> Any:
    answer = client.post("/api/v1/auth/login",
                         json={"credential": fake.encode(munge.login_payload(url))})
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def rows(app: Flask) -> list[AuthToken]:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return list(session.scalars(select(AuthToken)))


def set_token(app: Flask, token_id: int, **values: Any) -> None:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        session.execute(update(AuthToken).where(AuthToken.id == token_id).values(**values))
        session.commit()


def test_a_munge_master_ignores_the_name_header(mc: FlaskClient) -> None:
    """Finding 2: ``det -u user_a`` (X-Hpcdet-User: user_a) must not act as user_a."""
    message = assert_error(mc.get("/api/v1/auth/whoami", headers={"X-Hpcdet-User": "user_a"}),
                           401, "login_required")
    assert "det user login" in message
    assert_error(mc.post("/api/v1/experiments", json={"config": CONFIG,
                                                       "context": make_context()},
                         headers={"X-Hpcdet-User": "user_a"}), 401, "login_required")


def test_login_proves_the_unix_user_and_stores_only_a_hash(
        mc: FlaskClient, munge_app: Flask, fake_munge: FakeMunge) -> None:
    answer = login(mc, fake_munge)
    assert answer["username"] == ME and answer["token"] and answer["expires_at"]
    who = mc.get("/api/v1/auth/whoami", headers={**bearer(answer["token"]),
                                                  "X-Hpcdet-User": "someone-else"})
    assert who.get_json()["username"] == ME
    [row] = rows(munge_app)
    assert row.kind == "session" and row.token_hash == hash_token(answer["token"])
    assert answer["token"] not in repr(vars(row))
    with make_session_factory(munge_app.config["HPCDET_ENGINE"])() as session:
        assert session.get(User, ME) is not None


def test_a_replayed_credential_is_refused(mc: FlaskClient, fake_munge: FakeMunge) -> None:
    credential = fake_munge.encode(munge.login_payload("http://localhost:8080"))
    assert mc.post("/api/v1/auth/login", json={"credential": credential}).status_code == 200
    message = assert_error(mc.post("/api/v1/auth/login", json={"credential": credential}),
                           401, "unauthorized")
    assert "Replayed" in message


@pytest.mark.parametrize("payload", [
    "hpcdet-login http://localhost:9999",       # another master on this host
    "hpcdet-login http://elsewhere.example:8080",  # another host
    "something-else http://localhost:8080",     # another purpose
])
def test_a_credential_for_another_master_is_refused(mc: FlaskClient, fake_munge: FakeMunge,
                                                    payload: str) -> None:
    assert_error(mc.post("/api/v1/auth/login", json={"credential": fake_munge.encode(payload)}),
                 401, "unauthorized")


def test_a_uid_without_a_user_name_is_refused(mc: FlaskClient, fake_munge: FakeMunge) -> None:
    fake_munge.uid = 4_000_000_000
    message = assert_error(mc.post("/api/v1/auth/login", json={
        "credential": fake_munge.encode(munge.login_payload("http://localhost:8080"))}),
        401, "unauthorized")
    assert "no user name" in message


def test_bad_credentials_answer_400(mc: FlaskClient) -> None:
    for body in ({}, {"credential": 5}, {"credential": "not munge"}):
        assert_error(mc.post("/api/v1/auth/login", json=body), 400, "bad_request")


def test_expired_and_revoked_tokens_say_run_det_user_login(
        mc: FlaskClient, munge_app: Flask, fake_munge: FakeMunge) -> None:
    expired, revoked = login(mc, fake_munge), login(mc, fake_munge)
    set_token(munge_app, expired["token_id"],
              expires_at=dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1))
    message = assert_error(mc.get("/api/v1/auth/whoami", headers=bearer(expired["token"])),
                           401, "token_expired")
    assert "run det user login" in message
    assert mc.post("/api/v1/auth/logout", headers=bearer(revoked["token"])).status_code == 200
    assert "run det user login" in assert_error(
        mc.get("/api/v1/auth/whoami", headers=bearer(revoked["token"])), 401, "token_revoked")
    assert_error(mc.get("/api/v1/auth/whoami", headers=bearer("hdt_made-up")), 401,
                 "unauthorized")


def test_api_tokens_are_created_listed_and_revoked(
        mc: FlaskClient, munge_app: Flask, fake_munge: FakeMunge) -> None:
    session = login(mc, fake_munge)["token"]
    created = mc.post("/api/v1/auth/tokens", json={"name": "ci", "expires_days": 2},
                      headers=bearer(session))
    assert created.status_code == 201
    api = created.get_json()
    assert api["kind"] == "api" and api["name"] == "ci"
    assert mc.get("/api/v1/auth/whoami", headers=bearer(api["token"])).get_json()[
        "username"] == ME
    listed = mc.get("/api/v1/auth/tokens", headers=bearer(api["token"])).get_json()["tokens"]
    assert {t["kind"] for t in listed} == {"api", "session"}
    assert all("token" not in t for t in listed)
    assert all(api["token"] not in str(vars(r)) for r in rows(munge_app))
    assert mc.delete(f"/api/v1/auth/tokens/{api['id']}", headers=bearer(session)).status_code \
        == 200
    assert_error(mc.get("/api/v1/auth/whoami", headers=bearer(api["token"])), 401,
                 "token_revoked")
    assert_error(mc.post("/api/v1/auth/tokens", json={"expires_days": 0},
                         headers=bearer(session)), 400, "bad_request")


def test_a_user_cannot_revoke_another_users_token(
        mc: FlaskClient, munge_app: Flask, fake_munge: FakeMunge) -> None:
    mine = login(mc, fake_munge)
    with make_session_factory(munge_app.config["HPCDET_ENGINE"])() as session:
        from hpcdet.master.security import tokens

        theirs, row = tokens.issue(session, "somebody", "api", dt.timedelta(days=1))
        session.commit()
        their_id = row.id
    assert_error(mc.delete(f"/api/v1/auth/tokens/{their_id}", headers=bearer(mine["token"])),
                 404, "not_found")
    assert mc.get("/api/v1/auth/whoami", headers=bearer(theirs)).status_code == 200


def test_the_owner_recorded_is_the_proven_user(
        mc: FlaskClient, munge_app: Flask, fake_munge: FakeMunge) -> None:
    token = login(mc, fake_munge)["token"]
    created = mc.post("/api/v1/experiments", json={"config": CONFIG, "context": make_context()},
                      headers={**bearer(token), "X-Hpcdet-User": "user_a"})
    assert created.status_code == 201, created.get_json()
    with make_session_factory(munge_app.config["HPCDET_ENGINE"])() as session:
        assert session.scalars(select(Experiment.owner)).all() == [ME]


def web_link(mc: FlaskClient, token: str) -> str:
    answer = mc.post("/api/v1/auth/web_link", headers=bearer(token))
    assert answer.status_code == 201
    path: str = answer.get_json()["path"]
    return path


def test_a_web_link_signs_in_once_with_a_strict_httponly_cookie(
        mc: FlaskClient, munge_app: Flask, fake_munge: FakeMunge) -> None:
    path = web_link(mc, login(mc, fake_munge)["token"])
    browser = munge_app.test_client()
    assert browser.get("/").status_code == 302  # not signed in: sent to /login
    answer = browser.get(path)
    assert answer.status_code == 302 and answer.headers["Location"] == "/"
    cookie = answer.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Secure" not in cookie
    page = browser.get("/")
    assert page.status_code == 200 and ME in page.get_data(as_text=True)
    assert browser.get("/api/v1/auth/whoami").get_json()["username"] == ME
    again = munge_app.test_client().get(path)
    assert again.status_code == 401 and "det user web-login" in again.get_data(as_text=True)


def test_over_https_the_cookie_is_secure(mc: FlaskClient, munge_app: Flask,
                                         fake_munge: FakeMunge) -> None:
    path = web_link(mc, login(mc, fake_munge)["token"])
    answer = munge_app.test_client().get(path, base_url="https://localhost")
    assert "Secure" in answer.headers["Set-Cookie"]


def test_an_expired_web_link_does_nothing(mc: FlaskClient, munge_app: Flask,
                                          fake_munge: FakeMunge) -> None:
    path = web_link(mc, login(mc, fake_munge)["token"])
    [link] = [r for r in rows(munge_app) if r.kind == "web_link"]
    set_token(munge_app, link.id,
              expires_at=dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1))
    answer = munge_app.test_client().get(path)
    assert answer.status_code == 401 and "Set-Cookie" not in answer.headers


def signed_in_browser(mc: FlaskClient, app: Flask, fake: FakeMunge) -> tuple[FlaskClient, str]:
    browser = app.test_client()
    browser.get(web_link(mc, login(mc, fake)["token"]))
    page = browser.get("/").get_data(as_text=True)
    match = re.search(r'<meta name="csrf-token" content="([^"]+)">', page)
    assert match, page
    return browser, match.group(1)


def test_a_state_changing_request_without_the_csrf_token_does_nothing(
        mc: FlaskClient, munge_app: Flask, fake_munge: FakeMunge) -> None:
    browser, csrf = signed_in_browser(mc, munge_app, fake_munge)
    body = {"config": CONFIG, "context": make_context()}
    assert_error(browser.post("/api/v1/experiments", json=body), 403, "csrf")
    assert_error(browser.post("/api/v1/experiments", json=body,
                              headers={"X-CSRF-Token": "forged"}), 403, "csrf")
    with make_session_factory(munge_app.config["HPCDET_ENGINE"])() as session:
        assert session.scalars(select(Experiment)).all() == []
    created = browser.post("/api/v1/experiments", json=body, headers={"X-CSRF-Token": csrf})
    assert created.status_code == 201, created.get_json()


def test_the_csrf_token_is_tied_to_the_session(mc: FlaskClient, munge_app: Flask,
                                               fake_munge: FakeMunge) -> None:
    _, csrf_one = signed_in_browser(mc, munge_app, fake_munge)
    browser_two, csrf_two = signed_in_browser(mc, munge_app, fake_munge)
    assert csrf_one != csrf_two
    assert_error(browser_two.post("/api/v1/auth/tokens", json={},
                                  headers={"X-CSRF-Token": csrf_one}), 403, "csrf")


def test_sign_out_needs_the_csrf_token(mc: FlaskClient, munge_app: Flask,
                                       fake_munge: FakeMunge) -> None:
    browser, csrf = signed_in_browser(mc, munge_app, fake_munge)
    assert browser.post("/logout").status_code == 403
    assert browser.get("/").status_code == 200  # still signed in
    assert browser.post("/logout", data={"csrf_token": csrf}).status_code == 302
    assert browser.get("/").status_code == 302


def test_the_name_form_is_refused_on_a_munge_master(munge_app: Flask) -> None:
    browser = munge_app.test_client()
    answer = browser.post("/login", data={"name": "user_a"})
    assert answer.status_code == 403 and "Set-Cookie" not in answer.headers
    assert "det user web-login" in browser.get("/login").get_data(as_text=True)
    browser.set_cookie("hpcdet_user", "user_a")
    assert browser.get("/").status_code == 302


def test_csrf_token_derivation_is_not_the_stored_hash() -> None:
    assert csrf_token("hdt_x") != hash_token("hdt_x")[:43]


def test_an_open_master_still_takes_the_header(client: FlaskClient) -> None:
    who = client.get("/api/v1/auth/whoami", headers={"X-Hpcdet-User": "ada"}).get_json()
    assert who == {"username": "ada", "auth_mode": "open", "admin": False}


OPEN_READS = {"/api/v1/master", "/api/v1/openapi.json", "/api/v1/trials/<int:trial_id>/preemption",
              "/api/v1/trials/<int:trial_id>/experiment_best_validation"}


def test_every_read_refuses_a_forged_name_header(mc: FlaskClient, munge_app: Flask,
                                                 fake_munge: FakeMunge) -> None:
    """Finding 2 on every GET route: a name header alone is 401 on a munge master."""
    token = login(mc, fake_munge)["token"]
    reads = sorted(r.rule for r in munge_app.url_map.iter_rules()
                   if r.rule.startswith("/api/v1/") and "GET" in (r.methods or ())
                   and r.rule not in OPEN_READS)
    assert len(reads) > 15, reads
    for rule in reads:
        url = (rule.replace("<int:exp_id>", "1").replace("<int:trial_id>", "1")
               .replace("<int:task_id>", "1").replace("<uuid>", "no-such-uuid")
               .replace("<name>", "no-such-template").replace("<project>", "no-such-project")
               .replace("<identifier>", "no-such-model").replace("<int:number>", "1"))
        assert "<" not in url, rule
        assert_error(mc.get(url, headers={"X-Hpcdet-User": "user_a"}), 401, "login_required")
        answer = mc.get(url, headers=bearer(token))
        # det master config|logs: cluster admins only, and this user is none
        allowed = (403,) if rule in ("/api/v1/master/config", "/api/v1/master/logs") \
            else (200, 404)
        assert answer.status_code in allowed, (rule, answer.get_json())


def test_a_master_without_munged_answers_503(mc: FlaskClient, fake_munge: FakeMunge,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def down(credential: str) -> munge.Credential:
        raise munge.MungeError("unmunge cannot reach munged: Failed to access", unavailable=True)

    monkeypatch.setattr(munge, "decode", down)
    message = assert_error(mc.post("/api/v1/auth/login", json={
        "credential": fake_munge.encode(munge.login_payload("http://localhost:8080"))}),
        503, "munge_unavailable")
    assert "systemctl status munge" in message


def link_for(app: Flask, user: str) -> str:
    """A one-time sign-in link of ``user`` (made in the database: the fake MUNGE proves only
    the user running the tests)."""
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        token, _ = issue(session, user, "web_link", dt.timedelta(seconds=60))
        session.commit()
    return f"/login/{token}"


def whoami(browser: FlaskClient) -> str | None:
    answer = browser.get("/api/v1/auth/whoami")
    return answer.get_json()["username"] if answer.status_code == 200 else None


@pytest.mark.parametrize("headers", [
    {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},
    {"Sec-Fetch-Site": "same-site"},
    {"Referer": "http://evil.example/page"},
    {"Origin": "http://evil.example"},
])
def test_a_sign_in_link_opened_from_another_site_is_not_used(
        munge_app: Flask, headers: dict[str, str]) -> None:
    """Issue 28, finding 4: another site navigating a browser to an intruder's link signed it
    in as the intruder. Refused, and the link stays for its owner to open."""
    path = link_for(munge_app, "intruder")
    browser = munge_app.test_client()
    refused = browser.get(path, headers=headers)
    assert refused.status_code == 403 and "Set-Cookie" not in refused.headers
    assert "another site" in refused.get_data(as_text=True)
    assert whoami(browser) is None
    own = browser.get(path, headers={"Sec-Fetch-Site": "none",
                                     "Referer": "http://localhost/login"})
    assert own.status_code == 302 and whoami(browser) == "intruder"


def test_a_link_for_another_user_never_replaces_a_session_silently(
        mc: FlaskClient, munge_app: Flask, fake_munge: FakeMunge) -> None:
    """Issue 28, finding 4: a browser signed in as user_a that opened intruder's link was
    silently signed in as intruder. It is asked first; only its own confirm switches."""
    browser, csrf = signed_in_browser(mc, munge_app, fake_munge)
    old_cookie = browser.get_cookie(SESSION_COOKIE)
    assert old_cookie is not None
    path = link_for(munge_app, "intruder")
    asked = browser.get(path, headers={"Sec-Fetch-Site": "none"})
    page = asked.get_data(as_text=True)
    assert asked.status_code == 200 and "Set-Cookie" not in asked.headers
    assert "intruder" in page and ME in page and whoami(browser) == ME
    assert browser.post(path, data={"csrf_token": "forged"}).status_code == 403
    assert munge_app.test_client().post(path).status_code == 403  # no session to confirm
    assert whoami(browser) == ME
    switched = browser.post(path, data={"csrf_token": csrf}, headers={
        "Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"})
    assert switched.status_code == 302 and whoami(browser) == "intruder"
    stale = munge_app.test_client()
    stale.set_cookie(SESSION_COOKIE, old_cookie.value)
    assert whoami(stale) is None  # the replaced session was revoked


def test_a_page_holding_the_csrf_token_is_never_compressed(mc: FlaskClient, munge_app: Flask,
                                                           fake_munge: FakeMunge) -> None:
    # Compressed, a page that holds the token and echoes a search would leak the token
    # through its length (BREACH).
    browser, csrf = signed_in_browser(mc, munge_app, fake_munge)
    page = browser.get("/?q=" + csrf[:8], headers={"Accept-Encoding": "gzip"})
    assert csrf in page.get_data(as_text=True)
    assert "Content-Encoding" not in page.headers and len(page.get_data()) > 1024
