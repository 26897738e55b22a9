"""``det shell`` against a fake master: what is sent, the ssh argv, the key files."""

from __future__ import annotations

import json
import signal
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from hpcdet.cli import shell as shell_cli
from hpcdet.cli.main import CliError
from hpcdet.cli.shell import host_alias, key_files, ssh_argv

pytestmark = pytest.mark.interactive

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport
HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk8c8y0pZ1o0QvQ4fW2m1u0k8q3t3j5o2x1bq2X7n9V"
CLIENT_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n" \
             "-----END OPENSSH PRIVATE KEY-----\n"


def keys(ready: bool = True, state: str = "RUNNING", **extra: Any) -> dict[str, Any]:
    where = {"host": "node1", "port": 40022, "user": "alice"} if ready else \
        {"host": None, "port": None, "user": None}
    return {"task_id": 7, "state": state, "ready": ready, "client_private_key": CLIENT_KEY,
            "host_public_key": HOST_KEY, **where, **extra}


def task(**extra: Any) -> dict[str, Any]:
    return {"id": 7, "job_id": "812", "state": "QUEUED", "name": "det-shell", "kind": "shell",
            "owner": "alice", "nodes": None, **extra}


def test_the_ssh_argv_uses_only_the_shells_key_and_pinned_host_key(tmp_path: Path) -> None:
    argv = ssh_argv(7, keys(), tmp_path / "id", tmp_path / "known hosts", ("-L", "8888:x:8888"),
                    "hostname; exit 3")
    assert argv[1:3] == ["-i", str(tmp_path / "id")]
    options = [argv[i + 1] for i, word in enumerate(argv) if word == "-o"]
    assert {"IdentitiesOnly=yes", "StrictHostKeyChecking=yes", "BatchMode=yes",
            f'UserKnownHostsFile="{tmp_path / "known hosts"}"', "GlobalKnownHostsFile=/dev/null",
            "HostKeyAlias=hpcdet-shell-7"} <= set(options)
    assert argv[-7:] == ["-p", "40022", "alice@node1", "-L", "8888:x:8888", "--",
                         "hostname; exit 3"]


@pytest.mark.parametrize("bad", [{"host": "-oProxyCommand=id"}, {"host": "node 1"},
                                 {"user": "-lroot"}, {"user": "a@b"}, {"port": "22"},
                                 {"port": 0}, {"port": True}, {"host": None}])
def test_the_ssh_argv_refuses_what_ssh_would_read_as_options(tmp_path: Path,
                                                             bad: dict[str, Any]) -> None:
    with pytest.raises(CliError):
        ssh_argv(7, keys(**bad), tmp_path / "id", tmp_path / "kh")


def test_the_key_files_are_private_and_removed_afterwards() -> None:
    with key_files(7, keys()) as (key, known_hosts):
        assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        assert stat.S_IMODE(known_hosts.stat().st_mode) == 0o600
        assert key.read_text() == CLIENT_KEY
        assert known_hosts.read_text() == f"{host_alias(7)} {HOST_KEY}\n"
    assert not key.parent.exists()
    with pytest.raises(CliError, match="no valid host key"):
        with key_files(7, keys(host_public_key="ssh-ed25519 AAAA\n@cert-authority * x")):
            pass


def test_start_waits_then_runs_the_command_and_exits_with_its_code(
        det: Det, fake_master: FakeMaster, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    fake_master.add("POST", "/shells", {"task": task(), "warnings": []}, status=201)
    fake_master.add("GET", "/shells/7/keys", keys(False, "QUEUED"), keys())
    ran: list[Sequence[str]] = []

    def fake_ssh(argv: Sequence[str]) -> int:
        ran.append(argv)
        key = Path(argv[argv.index("-i") + 1])
        assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.read_text() == CLIENT_KEY
        return 3

    monkeypatch.setattr(shell_cli, "run_ssh", fake_ssh)
    result = det("shell", "start", "--config", "idle_timeout=30m", "--command",
                 "hostname; echo $SLURM_JOB_ID")
    assert result.exit_code == 3, result.output
    [request] = fake_master.sent("POST", "/shells")
    assert json.loads(request.content) == {"config": {"idle_timeout": "30m"}}
    [argv] = ran
    assert argv[-3:] == ["alice@node1", "--", "hostname; echo $SLURM_JOB_ID"]
    assert "Waiting for shell 7 (QUEUED)" in result.stderr
    assert not Path(argv[argv.index("-i") + 1]).exists()


def test_start_detached_prints_the_id(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("POST", "/shells", {"task": task(), "warnings": ["w1"]}, status=201)
    result = det("shell", "start", "-d")
    assert (result.exit_code, result.stdout) == (0, "7\n") and "w1" in result.stderr


def test_open_passes_ssh_args_and_says_when_the_shell_has_ended(
        det: Det, fake_master: FakeMaster, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[Sequence[str]] = []
    monkeypatch.setattr(shell_cli, "run_ssh", lambda argv: ran.append(argv) or 0)
    fake_master.add("GET", "/shells/7/keys", keys())
    assert det("shell", "open", "7", "--", "-L", "8888:localhost:8888").exit_code == 0
    assert ran[0][-3:] == ["alice@node1", "-L", "8888:localhost:8888"]
    fake_master.add("GET", "/shells/8/keys", keys(False, "CANCELED"))
    ended = det("shell", "open", "8")
    assert ended.exit_code == 1 and "shell 8 is CANCELED: det shell logs 8" in ended.stderr
    assert "Traceback" not in ended.output


def test_list_and_kill(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/tasks", {"tasks": [task(nodes="node1")], "total": 1})
    listed = det("shell", "list")
    assert listed.exit_code == 0 and "det-shell" in listed.stdout and "node1" in listed.stdout
    [request] = fake_master.sent("GET", "/tasks")
    assert request.url.params["kind"] == "shell" and request.url.params["mine"] == "true"
    fake_master.add("GET", "/tasks/7", {"task": task()})
    fake_master.add("POST", "/tasks/7/kill", {"task": task(state="STOPPING_KILLED")})
    killed = det("shell", "kill", "7")
    assert killed.exit_code == 0 and "STOPPING_KILLED" in killed.stdout
    fake_master.add("GET", "/tasks/9", {"task": task(id=9, kind="command")})
    assert "task 9 is not a shell" in det("shell", "kill", "9").stderr


def test_a_hang_up_ends_det_through_its_cleanup_and_ends_ssh(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGHUP)
    pid_file = tmp_path / "ssh.pid"
    with pytest.raises(SystemExit) as ended:
        # The pause lets det reach its wait, where a real hang-up finds it; one that comes
        # while Popen is still returning is covered too (handlers restored), but its child
        # cannot be ended: det has no handle on it yet.
        shell_cli.run_ssh(["sh", "-c", f'echo $$ > "{pid_file}"; sleep 1; kill -HUP $PPID; '
                                       "exec sleep 30"])
    assert ended.value.code == 128 + signal.SIGHUP
    assert signal.getsignal(signal.SIGHUP) == before
    # The stand-in for ssh was ended and reaped, not left running behind det.
    assert not Path("/proc", pid_file.read_text().strip()).exists()
