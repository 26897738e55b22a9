"""The SSH transport against a real OpenSSH server (scripts/dev-sshd on 127.0.0.1).

What goes over the wire is checked at the other end: the remote process's argv, stdin and
exit status; files written over SFTP with their modes; host keys refused or accepted as
documented (docs/admin/ssh.md); the connection coming back after sshd restarts.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest
from it_helpers import REPO

from hpcdet.dispatcher.jobdir import prepare_job_dir
from hpcdet.dispatcher.transport import HostKeyError, SshSettings, TransportUnavailableError
from hpcdet.dispatcher.transport.sftp import SshTransport
from hpcdet.errors import SchedulerError
from hpcdet.jobfiles import UnsafeFileError

pytestmark = [pytest.mark.ssh]
HOSTILE = ["two words", ";", "a;touch /tmp/hpcdet-pwned", "$(id)", "`id`", "${HOME}",
           "'single'", '"double"', "back\\slash", "-n", "--help", "*", "~", "a\tb", "",
           "ünïcödé ☃", "|", "&& echo no", "#not a comment"]


def settings_for(sshd: dict[str, str], **changes: object) -> SshSettings:
    values: dict[str, object] = {
        "host": sshd["HPCDET_SSHD_HOST"], "port": int(sshd["HPCDET_SSHD_PORT"]),
        "user": sshd["HPCDET_SSHD_USER"], "key_file": sshd["HPCDET_SSHD_KEY"],
        "known_hosts": sshd["HPCDET_SSHD_KNOWN_HOSTS"], "connect_timeout": 5.0}
    values.update(changes)
    return SshSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
def transport(sshd: dict[str, str]) -> Iterator[SshTransport]:
    ssh = SshTransport(settings_for(sshd))
    yield ssh
    ssh.close()


def dev_sshd(verb: str) -> None:
    subprocess.run([str(REPO / "scripts" / "dev-sshd"), verb], check=True, timeout=120)


def test_the_remote_process_gets_exactly_the_argv(transport: SshTransport) -> None:
    out = transport.runner(["printf", "%s\\0", *HOSTILE])
    assert out.split("\0")[:-1] == HOSTILE
    assert not os.path.exists("/tmp/hpcdet-pwned")
    assert transport.runner.count == 1 and transport.connection.connects == 1


def test_stdin_exit_status_and_stderr_come_back(transport: SshTransport) -> None:
    assert transport.runner(["cat"], stdin=b"a tar, say\n") == "a tar, say\n"
    with pytest.raises(SchedulerError) as failed:
        transport.runner(["sh", "-c", "cat; echo refused >&2; exit 7"], stdin=b"in")
    assert (failed.value.returncode, failed.value.stdout, failed.value.stderr.strip()) == (
        7, "in", "refused")
    with pytest.raises(SchedulerError) as slow:
        transport.runner(["sleep", "5"], timeout=0.5)
    assert slow.value.returncode == 124
    with pytest.raises(SchedulerError) as absent:
        transport.runner(["no-such-command-hpcdet"])
    assert absent.value.returncode == 127
    assert transport.connection.connects == 1  # one connection for all of it


def test_job_files_go_over_sftp_with_their_modes(transport: SshTransport, tmp_path: Path) -> None:
    root = tmp_path / "exp-1" / "trial-1"
    import io
    import tarfile

    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        info = tarfile.TarInfo("train.py")
        info.size = 9
        tar.addfile(info, io.BytesIO(b"print(1)\n"))
    prepare_job_dir(root, context_tar=context.getvalue(), trial_info={"trial_id": 1},
                    token="secret", files=transport)
    assert (root / "context" / "train.py").read_text() == "print(1)\n"
    assert [(root / n).stat().st_mode & 0o777 for n in ("", ".token", "trial.json")] == [
        0o700, 0o600, 0o600]
    assert transport.file_ops >= 5 and transport.runner.count == 0  # SFTP only, no commands
    (root / "slurm-1.out").write_bytes(b"0123456789")
    assert transport.read_file(str(root / "slurm-1.out"), 4, 3) == b"456"
    os.symlink("/etc/hostname", root / "slurm-2.out")
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        transport.read_file(str(root / "slurm-2.out"))
    with pytest.raises(FileNotFoundError):
        transport.read_file(str(root / "none"))
    transport.remove_tree(str(tmp_path / "exp-1"))
    assert not (tmp_path / "exp-1").exists() and os.path.exists("/etc/hostname")


def test_threads_share_the_one_connection(transport: SshTransport, tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 1000)
    failures: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for _ in range(5):
                assert transport.runner(["echo", str(n)]) == f"{n}\n"
                assert transport.read_file(str(tmp_path / "f")) == b"x" * 1000
        except BaseException as exc:  # collected for the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == [] and transport.connection.connects == 1


def test_an_unknown_host_key_is_refused(sshd: dict[str, str], tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    ssh = SshTransport(settings_for(sshd, known_hosts=str(empty)))
    with pytest.raises(HostKeyError) as refused:
        ssh.runner(["true"])
    message = str(refused.value)
    assert f"[127.0.0.1]:{sshd['HPCDET_SSHD_PORT']}" in message and str(empty) in message
    assert "ssh-keyscan" in message and "insecure_accept_new_host_key" in message
    assert empty.read_text() == "" and ssh.connection.connects == 0


def test_a_changed_host_key_is_refused_with_how_to_fix_it(sshd: dict[str, str],
                                                           tmp_path: Path) -> None:
    other = paramiko.Ed25519Key.from_private_key_file(sshd["HPCDET_SSHD_KEY"])  # not the host's
    known = tmp_path / "known_hosts"
    name = f"[127.0.0.1]:{sshd['HPCDET_SSHD_PORT']}"
    known.write_text(f"{name} {other.get_name()} {other.get_base64()}\n")
    ssh = SshTransport(settings_for(sshd, known_hosts=str(known),
                                    insecure_accept_new_host_key=True))
    with pytest.raises(HostKeyError) as refused:
        ssh.runner(["true"])
    message = str(refused.value)
    assert f"the SSH host key of {name} changed" in message and "refusing to connect" in message
    assert f"ssh-keygen -R '{name}' -f {known}" in message and "\n" not in message
    assert known.read_text().count("\n") == 1  # even the insecure flag never replaces a key
    with pytest.raises(HostKeyError, match="changed"):  # again, within the backoff
        ssh.runner(["true"])


def test_the_insecure_flag_accepts_and_records_a_new_key(sshd: dict[str, str],
                                                         tmp_path: Path) -> None:
    known = tmp_path / "ssh" / "known_hosts"
    ssh = SshTransport(settings_for(sshd, known_hosts=str(known),
                                    insecure_accept_new_host_key=True))
    assert ssh.runner(["echo", "in"]) == "in\n"
    host_key = Path(sshd["HPCDET_SSHD_DIR"], "ssh_host_ed25519_key.pub").read_text().split()[1]
    assert f"[127.0.0.1]:{sshd['HPCDET_SSHD_PORT']} ssh-ed25519 {host_key}" in known.read_text()
    ssh.close()
    strict = SshTransport(settings_for(sshd, known_hosts=str(known)))  # now it is known
    assert strict.runner(["echo", "again"]) == "again\n"
    strict.close()


def test_the_connection_comes_back_after_sshd_restarts(transport: SshTransport,
                                                       tmp_path: Path) -> None:
    assert transport.runner(["echo", "before"]) == "before\n"
    dev_sshd("down")
    try:
        with pytest.raises(TransportUnavailableError, match="127.0.0.1"):
            transport.runner(["echo", "during"])
        with pytest.raises(TransportUnavailableError):
            transport.file_size(str(tmp_path))
    finally:
        dev_sshd("up")
    deadline = time.monotonic() + 60  # the backoff waits at most 30 s between tries
    while True:
        try:
            assert transport.runner(["echo", "after"]) == "after\n"
            break
        except TransportUnavailableError:
            assert time.monotonic() < deadline, "never reconnected"
            time.sleep(0.5)
    (tmp_path / "f").write_text("still here")
    assert transport.read_file(str(tmp_path / "f")) == b"still here"
    assert transport.connection.connects == 2
