"""``det user ...`` against a real app (in process, httpx.WSGITransport) in munge mode,
with a FAKE munge on both sides: ~/.hpcdet/auth.json, automatic login, re-login."""

from __future__ import annotations

import json
import os
import pwd
import stat
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result
from fake_munge import FakeMunge
from flask import Flask

from hpcdet import munge
from hpcdet.cli.main import CliState, cli
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.app import create_app
from hpcdet.master.settings.core import MasterSettings

ME = pwd.getpwuid(os.getuid()).pw_name
URL = "http://localhost:8080"


@pytest.fixture
def fake_munge(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeMunge:
    fake = FakeMunge(os.getuid())
    monkeypatch.setattr(munge, "decode", fake.decode)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DET_USER_TOKEN", raising=False)
    monkeypatch.setenv("DET_USER", "user_a")  # ignored by a munge master
    return fake


@pytest.fixture
def munge_app(settings: MasterSettings, fake_munge: FakeMunge) -> Iterator[Flask]:
    app = create_app(replace(settings, auth_mode="munge", port=8080), backend=SlurmBackend())
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def det(munge_app: Flask, fake_munge: FakeMunge) -> Callable[..., Result]:
    transport = httpx.WSGITransport(app=munge_app)

    def invoke(*args: str, encode: Callable[[str], str] | None = None) -> Result:
        state = CliState(transport=transport, poll_interval=0,
                         munge_encode=encode or fake_munge.encode)
        return CliRunner().invoke(cli, ["-m", URL, *args], obj=state, prog_name="det")

    return invoke


def auth_file() -> Path:
    return Path(os.environ["HOME"]) / ".hpcdet" / "auth.json"


def test_det_logs_in_by_itself_and_keeps_the_token_private(det: Callable[..., Result]) -> None:
    result = det("user", "whoami")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == ME
    assert stat.S_IMODE(auth_file().stat().st_mode) == 0o600
    assert stat.S_IMODE(auth_file().parent.stat().st_mode) == 0o700
    entry = json.loads(auth_file().read_text())[URL]
    assert entry["username"] == ME and entry["token"].startswith("hdt_")


def test_the_stored_token_is_reused(det: Callable[..., Result]) -> None:
    assert det("user", "login").exit_code == 0
    token = json.loads(auth_file().read_text())[URL]["token"]

    def no_munge(payload: str) -> str:
        raise AssertionError("det should not log in again")

    assert det("user", "whoami", encode=no_munge).output.strip() == ME
    assert json.loads(auth_file().read_text())[URL]["token"] == token


def test_a_revoked_session_is_renewed_once(det: Callable[..., Result]) -> None:
    assert det("user", "login").exit_code == 0
    token_id = json.loads(auth_file().read_text())[URL]["token_id"]
    assert det("user", "token", "revoke", str(token_id)).exit_code == 0
    result = det("user", "whoami")
    assert result.exit_code == 0 and result.output.strip() == ME
    assert json.loads(auth_file().read_text())[URL]["token_id"] != token_id


def test_munge_not_running_says_how_to_check(det: Callable[..., Result]) -> None:
    def broken(payload: str) -> str:
        raise munge.MungeError(f"munge failed: Failed to access socket; {munge.CHECK_HINT}")

    result = det("user", "whoami", encode=broken)
    assert result.exit_code == 1
    assert "systemctl status munge" in result.output and "munge -n | unmunge" in result.output
    assert "Traceback" not in result.output


def test_api_tokens_for_scripts(det: Callable[..., Result], monkeypatch: pytest.MonkeyPatch,
                                munge_app: Flask) -> None:
    created = det("user", "token", "create", "--name", "ci", "--expires-days", "3")
    assert created.exit_code == 0, created.output
    token = created.stdout.strip().splitlines()[0]
    listed = det("user", "token", "list")
    assert "ci" in listed.output and token not in listed.output
    monkeypatch.setenv("DET_USER_TOKEN", token)

    def no_munge(payload: str) -> str:
        raise AssertionError("a script's token is never renewed")

    assert det("user", "whoami", encode=no_munge).output.strip() == ME
    token_id = json.loads(det("user", "token", "list", "--json").output)["tokens"]
    [api] = [t for t in token_id if t["kind"] == "api"]
    assert det("user", "token", "revoke", str(api["id"])).exit_code == 0
    result = det("user", "whoami", encode=no_munge)
    assert result.exit_code == 1 and "run det user login" in result.output


def test_det_token_is_determined_s_spelling_of_user_token(det: Callable[..., Result],
                                                           munge_app: Flask) -> None:
    created = det("token", "create", "-d", "ci", "-e", "2", "--json")
    assert created.exit_code == 0, created.output
    token_id = json.loads(created.stdout)["id"]
    described = det("tkn", "describe", str(token_id), "--json")
    assert described.exit_code == 0, described.output
    [shown] = json.loads(described.stdout)["tokens"]
    assert shown["name"] == "ci" and "token" not in shown
    assert det("token", "revoke", str(token_id)).exit_code == 0
    assert str(token_id) not in det("token", "ls").output.split()
    assert str(token_id) in det("token", "list", "--show-inactive").output.split()
    missing = det("token", "describe", "999999")
    assert missing.exit_code == 1 and "no token of yours with ID 999999" in missing.output
    assert "Traceback" not in missing.output
    assert det("u", "whoami").output.strip() == ME


def test_logout_forgets_the_token_and_revokes_it(det: Callable[..., Result],
                                                munge_app: Flask) -> None:
    assert det("user", "login").exit_code == 0
    token = json.loads(auth_file().read_text())[URL]["token"]
    assert det("user", "logout").exit_code == 0
    assert URL not in json.loads(auth_file().read_text())
    whoami = munge_app.test_client().get("/api/v1/auth/whoami",
                                         headers={"Authorization": f"Bearer {token}"})
    assert whoami.status_code == 401 and whoami.get_json()["error"]["code"] == "token_revoked"


def test_web_login_prints_a_one_time_link(det: Callable[..., Result], munge_app: Flask) -> None:
    result = det("user", "web-login")
    assert result.exit_code == 0, result.output
    link = result.stdout.strip()
    assert link.startswith(f"{URL}/login/hdt_")
    browser = munge_app.test_client()
    assert browser.get(link.removeprefix(URL)).status_code == 302
    assert browser.get(link.removeprefix(URL)).status_code == 401


def test_user_list_shows_who_signed_in(det: Callable[..., Result]) -> None:
    result = det("user", "list")
    assert result.exit_code == 0 and ME in result.output
