"""Issue 28, also seen: a hostile model-definition archive is refused where it enters.

A context with ``..``, an absolute path, a link, a device or a FIFO was accepted at ``det
experiment create`` (201) and failed only at submission (the run-as helper refused it; with
jobs run as the service account links and devices were silently dropped). Now create and
fork answer 400 naming the member, whichever account jobs run as, and store nothing.
"""

from __future__ import annotations

import base64
import io
import tarfile
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from lifecycle_helpers import session_of
from master_helpers import CONFIG, assert_error
from sqlalchemy import select

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.app import create_app
from hpcdet.master.models import Experiment
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.runas import RunAsSettings

ALICE = {"X-Hpcdet-User": "alice"}


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o644
    info.size = 3 if kind == tarfile.REGTYPE else 0
    return info


HOSTILE = [
    (_member("../evil.py"), "'..' leaves the context directory"),
    (_member("/etc/cron.d/evil"), "an absolute path"),
    (_member("pkg/../../evil.py"), "'..' leaves the context directory"),
    (_member("link", tarfile.SYMTYPE, "/etc/shadow"), "is a symbolic link"),
    (_member("inside", tarfile.SYMTYPE, "train.py"), "is a symbolic link"),
    (_member("hard", tarfile.LNKTYPE, "train.py"), "is a hard link"),
    (_member("tty", tarfile.CHRTYPE), "is a device"),
    (_member("disk", tarfile.BLKTYPE), "is a device"),
    (_member("fifo", tarfile.FIFOTYPE), "is a FIFO"),
    (_member("a\nb.py"), "holds a newline"),
]


def _context(*members: tarfile.TarInfo) -> bytes:
    """A tar.gz of ``train.py`` and ``members``, as a script (not det) could send it."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for member in (_member("train.py"), *members):
            tar.addfile(member, io.BytesIO(b"x=1") if member.isreg() else None)
    return out.getvalue()


@pytest.fixture(params=["service", "owner"])
def any_client(request: pytest.FixtureRequest, settings: MasterSettings) -> Iterator[FlaskClient]:
    """A master whose jobs run as the service account, then one whose run as the owner."""
    app = create_app(replace(settings, runas=RunAsSettings(jobs_run_as=request.param)),
                     backend=SlurmBackend())
    app.config["TESTING"] = True
    yield app.test_client()
    app.config["HPCDET_ENGINE"].dispose()


def _create(client: FlaskClient, context: bytes, **extra: Any) -> Any:
    return client.post("/api/v1/experiments", headers=ALICE, json={
        "config": CONFIG, "context": base64.b64encode(context).decode(), **extra})


@pytest.mark.parametrize(("member", "reason"), HOSTILE, ids=[m.name for m, _ in HOSTILE])
def test_a_hostile_member_is_refused_at_create_naming_it(
        any_client: FlaskClient, member: tarfile.TarInfo, reason: str) -> None:
    for dry_run in (False, True):
        message = assert_error(_create(any_client, _context(member), dry_run=dry_run), 400,
                               "bad_request")
        assert message.startswith(f"context: member {member.name!r}: "), message
        assert reason in message and "\n" not in message, message
    with session_of(any_client.application) as session:
        assert session.scalars(select(Experiment)).all() == []


def test_a_hostile_stored_context_is_refused_at_fork(client: FlaskClient, app: Flask) -> None:
    """A context an older master stored: the fork sends it through the same door (plain
    files and directories, ``./`` and a name starting with ``..`` included, still pass)."""
    plain = _context(_member("./", tarfile.DIRTYPE), _member("pkg", tarfile.DIRTYPE),
                     _member("pkg/model.py"), _member("./pkg/..data"))
    source = _create(client, plain)
    assert source.status_code == 201, source.get_json()
    exp_id = source.get_json()["experiment"]["id"]
    with session_of(app) as session:
        session.get_one(Experiment, exp_id).context = _context(
            _member("link", tarfile.SYMTYPE, "/etc/shadow"))
        session.commit()
    fork = client.post(f"/api/v1/experiments/{exp_id}/fork", headers=ALICE,
                       json={"config": CONFIG})
    assert assert_error(fork, 400, "bad_request").startswith("context: member 'link': ")
