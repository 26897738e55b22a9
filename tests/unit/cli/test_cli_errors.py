"""Every failure ends as ``Error: ...`` on stderr and a non-zero exit, without a traceback
unless ``--debug``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from hang_guard import HANG_GUARD_S

from hpcdet.cli.main import EXIT_INTERRUPTED, CliState, cli, error_message
from hpcdet.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]
Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_master_is_one_line() -> None:
    port = _closed_port()
    result = CliRunner().invoke(cli, ["-m", f"127.0.0.1:{port}", "master", "info"],
                                prog_name="det")
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)
    [line] = result.stderr.splitlines()
    assert line.startswith(f"Error: cannot reach the master at http://127.0.0.1:{port}: ")
    assert line.endswith("(set the master's address with -m/--master or DET_MASTER)")


def test_unreachable_master_in_a_real_process_has_no_traceback() -> None:
    port = _closed_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "DET_MASTER": f"http://127.0.0.1:{port}"}
    done = subprocess.run(
        [sys.executable, "-c", "from hpcdet.cli import main; main()", "experiment", "list"],
        capture_output=True, text=True, env=env, timeout=HANG_GUARD_S)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"Error: cannot reach the master at http://127.0.0.1:{port}")
    assert len(done.stderr.splitlines()) == 1


def test_invalid_config_shows_every_detail_line(det: Det, fake_master: FakeMaster,
                                                tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("resources: {slots_per_trial: -1}\n")
    details = ["<config>.resources.slots_per_trial: must be >= 0, got -1",
               "<config>.searcher: is required"]
    fake_master.add_error("POST", "/experiments", 400, "invalid_config",
                          "invalid experiment configuration", details)
    result = det("experiment", "create", str(tmp_path / "c.yaml"), str(tmp_path))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines()[-3:] == [
        "Error: invalid experiment configuration", *(f"  {d}" for d in details)]


def test_not_found(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add_error("GET", "/trials/99", 404, "not_found", "trial 99 not found")
    result = det("trial", "describe", "99")
    assert (result.exit_code, result.stderr) == (1, "Error: trial 99 not found\n")


def test_answer_that_is_not_json(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/master", httpx.Response(502, text="<html>bad gateway</html>"))
    result = det("master", "info")
    assert result.exit_code == 1
    assert result.stderr == "Error: master answered 502 Bad Gateway: <html>bad gateway</html>\n"


def _raise(exc: BaseException) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc
    return handler


def test_unexpected_error_is_one_line_with_a_hint(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/master", _raise(RuntimeError("boom")))
    result = det("master", "info")
    assert result.exit_code == 1
    assert result.stderr == ("Error: unexpected RuntimeError: boom "
                             "(run with --debug for the traceback)\n")


def test_debug_shows_the_traceback(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/master", _raise(RuntimeError("boom")))
    result = det("--debug", "master", "info")
    assert result.exit_code == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.endswith("Error: unexpected RuntimeError: boom\n")


def test_debug_shows_the_traceback_of_expected_errors_too(det: Det,
                                                          fake_master: FakeMaster) -> None:
    fake_master.add_error("GET", "/master", 500, "internal", "database is locked")
    result = det("--debug", "master", "info")
    assert "Traceback" in result.stderr and "MasterError" in result.stderr
    assert result.stderr.endswith("Error: database is locked\n")


def test_ctrl_c_exits_130(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/experiments", _raise(KeyboardInterrupt()))
    result = det("experiment", "list")
    assert result.exit_code == EXIT_INTERRUPTED == 130
    assert result.stderr == "Error: interrupted\n"


def test_malformed_yaml_through_the_cli(det: Det, fake_master: FakeMaster, tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("name: x\nentrypoint: a: b\n")
    result = det("e", "create", str(tmp_path / "c.yaml"), str(tmp_path))
    assert result.exit_code == 1
    assert result.stderr == (f"Error: malformed YAML: {tmp_path / 'c.yaml'}:2:14: "
                             "mapping values are not allowed here\n")
    assert fake_master.requests == []


def test_too_large_context_is_refused_before_upload(det: Det, fake_master: FakeMaster,
                                                    tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("name: x\n")
    with open(tmp_path / "big.bin", "wb") as handle:
        handle.truncate(100 * 1024 * 1024)
    result = det("e", "create", str(tmp_path / "c.yaml"), str(tmp_path))
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: context directory") and "big.bin (100.0 MiB)" in line
    assert fake_master.requests == []


def test_missing_context_directory(det: Det, tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("name: x\n")
    result = det("e", "create", str(tmp_path / "c.yaml"), str(tmp_path / "nope"))
    assert result.exit_code == 1
    assert result.stderr == f"Error: context directory '{tmp_path / 'nope'}' does not exist\n"


def test_missing_config_file(det: Det, tmp_path: Path) -> None:
    result = det("e", "create", str(tmp_path / "c.yaml"), str(tmp_path))
    assert result.exit_code == 1
    assert result.stderr == f"Error: configuration file '{tmp_path / 'c.yaml'}' does not exist\n"


def test_config_error_with_several_lines() -> None:
    error = ConfigError(["a: wrong", "b: missing"], title="invalid experiment configuration")
    assert error_message(error) == "invalid experiment configuration:\n  a: wrong\n  b: missing"


def test_usage_errors_exit_2(det: Det) -> None:
    result = det("trial", "logs", "1", "--head", "3", "--tail", "3")
    assert result.exit_code == 2
    assert "--head and --tail cannot be used together" in result.stderr


def test_state_is_injectable() -> None:
    state = CliState(master="http://m:1", user="bob")
    assert state.client().url == "http://m:1"
    state.close()
    assert state._client is None


@pytest.mark.parametrize("args", [["-m", "master.example:8080"], []])
def test_master_address(fake_master: FakeMaster, args: list[str],
                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DET_MASTER", "envhost:9")
    fake_master.add("GET", "/master", {"version": "0.1.0"})
    CliRunner().invoke(cli, [*args, "master", "info"], obj=CliState(transport=fake_master))
    expected = "master.example:8080" if args else "envhost:9"
    assert fake_master.requests[0].url.netloc.decode() == expected


def test_user_header(fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/master", {"version": "0.1.0"})
    CliRunner().invoke(cli, ["-u", "carol", "master", "info"],
                       obj=CliState(transport=fake_master))
    assert fake_master.requests[0].headers["X-Hpcdet-User"] == "carol"
