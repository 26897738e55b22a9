"""The job side of det shell (hpcdet.harness.shell_service): sshd_config, the environment
file and session wrapper it writes, the socket table it reads, and a missing sshd."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hpcdet.harness import shell_service
from hpcdet.harness.shell_service import (
    ShellServiceError,
    environment_file,
    session_wrapper,
    sshd_config,
    tcp_states,
)

pytestmark = pytest.mark.interactive


def options(config: str) -> dict[str, str]:
    lines = [line for line in config.splitlines() if line and not line.startswith("#")]
    return dict(line.split(" ", 1) for line in lines)


def test_sshd_config_is_the_shells_own_and_public_key_only() -> None:
    config = sshd_config("/scratch/jobs/task-7/", 40022, "alice", "/usr/lib/openssh/sftp-server")
    found = options(config)
    assert found["Port"] == "40022"
    assert found["HostKey"] == '"/scratch/jobs/task-7/ssh_host_ed25519_key"'
    assert found["AuthorizedKeysFile"] == '"/scratch/jobs/task-7/authorized_keys"'
    assert found["ForceCommand"] == '"/scratch/jobs/task-7/shell-session.sh"'
    assert found["AllowUsers"] == '"alice"'
    assert (found["UsePAM"], found["PasswordAuthentication"],
            found["KbdInteractiveAuthentication"]) == ("no", "no", "no")
    assert found["Subsystem"] == 'sftp "/usr/lib/openssh/sftp-server"'
    assert "Subsystem" not in options(sshd_config("/j", 1, "a", None))


def test_sshd_config_takes_spaces_but_no_line_breaks_or_quotes() -> None:
    found = options(sshd_config("/my jobs/task-1", 2222, "alice", None))
    assert found["HostKey"] == '"/my jobs/task-1/ssh_host_ed25519_key"'
    for job_dir in ("/jobs\nPermitRootLogin yes", "/jobs\r", "/jobs\x00", '/jobs"x'):
        with pytest.raises(ShellServiceError):
            sshd_config(job_dir, 2222, "alice", None)
    with pytest.raises(ShellServiceError):
        sshd_config("/jobs", 2222, "alice\nAllowUsers *", None)
    with pytest.raises(ShellServiceError):
        sshd_config("/jobs", 0, "alice", None)


def test_the_environment_file_carries_the_job_minus_session_variables_and_secrets(
        tmp_path: Path) -> None:
    text = environment_file({"SLURM_JOB_ID": "812", "DET_TASK_ID": "7",
                             "TRICKY": "a b'$(id)\"\nnext line", "TERM": "dumb",
                             "HOME": "/nowhere", "SSH_CONNECTION": "x", "DET_USER_TOKEN": "t",
                             "AWS_SECRET_ACCESS_KEY": "s", "MY_PASSWORD": "p",
                             "BASH_FUNC_f%%": "() { id; }", "not-a-name": "x"})
    file = tmp_path / "env.sh"
    file.write_text(text)
    shown = subprocess.run(
        ["bash", "-c", '. "$1"; printf "%s|" "$SLURM_JOB_ID" "$DET_TASK_ID" "$TRICKY" '
         '"${TERM-unset}" "${HOME-unset}" "${SSH_CONNECTION-unset}" "${DET_USER_TOKEN-unset}" '
         '"${AWS_SECRET_ACCESS_KEY-unset}" "${MY_PASSWORD-unset}"', "bash", str(file)],
        env={"PATH": "/usr/bin:/bin", "TERM": "xterm-client"}, capture_output=True, text=True,
        check=True).stdout
    assert shown.split("|")[:-1] == ["812", "7", "a b'$(id)\"\nnext line", "xterm-client", "unset",
                                     "unset", "unset", "unset", "unset"]


def test_the_session_wrapper_runs_the_command_or_a_shell_in_the_job(tmp_path: Path) -> None:
    (tmp_path / shell_service.ENVIRONMENT).write_text("export FROM_JOB='job value'\n")
    work = tmp_path / "work dir"
    work.mkdir()
    wrapper = tmp_path / "session.sh"
    wrapper.write_text(session_wrapper(str(tmp_path), str(work)))
    wrapper.chmod(0o700)
    env = {"PATH": "/usr/bin:/bin", "SHELL": "/bin/bash",
           "SSH_ORIGINAL_COMMAND": 'echo "$FROM_JOB"; pwd; exit 3'}
    ran = subprocess.run([str(wrapper)], env=env, capture_output=True, text=True)
    assert (ran.returncode, ran.stdout) == (3, f"job value\n{work}\n")
    del env["SSH_ORIGINAL_COMMAND"]
    interactive = subprocess.run([str(wrapper)], env=env, input="echo in-$FROM_JOB\n",
                                 capture_output=True, text=True)
    assert "in-job value" in interactive.stdout


def test_the_socket_table_finds_listening_and_established_sockets(tmp_path: Path) -> None:
    table = tmp_path / "tcp"
    table.write_text(
        "  sl  local_address rem_address   st tx_queue rx_queue\n"
        "   0: 00000000:9C46 00000000:0000 0A 00000000:00000000\n"
        "   1: 0100007F:9C46 0100007F:D2F0 01 00000000:00000000\n"
        "   2: 0100007F:D2F0 0100007F:9C46 01 00000000:00000000\n")
    assert tcp_states(0x9C46, [str(table), str(tmp_path / "missing")]) == ["0A", "01"]
    assert tcp_states(22, [str(table)]) == []


def test_a_node_without_sshd_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shell_service, "SSHD_DIRS", ())
    with pytest.raises(ShellServiceError, match="needs OpenSSH's sshd on the node"):
        shell_service.find_sshd("/nonexistent")


def test_main_fails_clearly_without_the_masters_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shell_service, "find_sshd", lambda path: "/usr/sbin/sshd")
    assert shell_service.main(["--job-dir", str(tmp_path)]) == 1
    assert "ssh_host_ed25519_key is missing (the master writes it" in capsys.readouterr().err
