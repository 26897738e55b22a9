"""hpcdet.munge reading what ``munge``/``unmunge`` print: FAKE binaries (shell scripts with
canned output) stand in for MUNGE here; tests/integration/test_it_identity.py uses the real
ones."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from hpcdet import munge

DECODED = """STATUS:          Success (0)
ENCODE_HOST:     login1 (10.0.0.1)
TTL:             300
UID:             user_a (1002)
GID:             user_a (1003)
LENGTH:          30

hpcdet-login http://master:8080"""
REPLAYED = DECODED.replace("Success (0)", "Replayed credential (17)")


def fake_binary(tmp_path: Path, name: str, stdout: str, status: int = 0,
                stderr: str = "") -> str:
    path = tmp_path / name
    (tmp_path / f"{name}.out").write_text(stdout)
    (tmp_path / f"{name}.err").write_text(stderr)
    path.write_text(f"#!/bin/sh\ncat > /dev/null\ncat '{tmp_path}/{name}.out'\n"
                    f"cat '{tmp_path}/{name}.err' >&2\nexit {status}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_decode_reads_uid_gid_and_payload(tmp_path: Path) -> None:
    credential = munge.decode("MUNGE:x", binary=fake_binary(tmp_path, "unmunge", DECODED))
    assert credential == munge.Credential(uid=1002, gid=1003,
                                          payload="hpcdet-login http://master:8080")


def test_a_replay_names_the_reason(tmp_path: Path) -> None:
    with pytest.raises(munge.MungeError) as info:
        munge.decode("MUNGE:x", binary=fake_binary(tmp_path, "unmunge", REPLAYED, 17))
    assert str(info.value) == "the MUNGE credential was refused: Replayed credential"


def test_a_bad_credential_uses_stderr(tmp_path: Path) -> None:
    binary = fake_binary(tmp_path, "unmunge", "", 2,
                         "unmunge: Error: Failed to match armor prefix\n")
    with pytest.raises(munge.MungeError, match="Failed to match armor prefix"):
        munge.decode("junk", binary=binary)


def test_encode_failure_says_how_to_check(tmp_path: Path) -> None:
    binary = fake_binary(tmp_path, "munge", "", 1,
                         "munge: Error: Failed to access \"/run/munge/munge.socket.2\"\n")
    with pytest.raises(munge.MungeError) as info:
        munge.encode("x", binary=binary)
    assert "systemctl status munge" in str(info.value)
    assert "munge -n | unmunge" in str(info.value) and "Failed to access" in str(info.value)


def test_missing_binaries(tmp_path: Path) -> None:
    with pytest.raises(munge.MungeError, match="munge command was not found"):
        munge.encode("x", binary=str(tmp_path / "absent"))
    with pytest.raises(munge.MungeError, match="unmunge was not found"):
        munge.decode("x", binary=str(tmp_path / "absent"))


def test_encode_returns_the_credential(tmp_path: Path) -> None:
    assert munge.encode("x", binary=fake_binary(tmp_path, "munge", "MUNGE:abc:\n")) \
        == "MUNGE:abc:"


def test_munged_unreachable_is_not_a_refused_credential(tmp_path: Path) -> None:
    binary = fake_binary(tmp_path, "unmunge", "", 6, 'unmunge: Error: Failed to access '
                         '"/run/munge/munge.socket.2": No such file or directory '
                         '(Did you start munged?)\n')
    with pytest.raises(munge.MungeError) as info:
        munge.decode("MUNGE:x", binary=binary)
    assert info.value.unavailable and "cannot reach munged" in str(info.value)
