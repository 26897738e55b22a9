"""The transport layer without a network: the one quoting function (parsed by a real POSIX
shell), the local transport's file operations, the remote context unpacking (through a
transport that is not the local one), and the SSH connection's refusals and backoff.

The SSH transport itself, against a real sshd, is tests/integration/test_it_ssh_transport.py.
"""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher.commands import CommandRunner, Completed
from hpcdet.dispatcher.jobdir import prepare_job_dir
from hpcdet.dispatcher.transport import Entry, LocalTransport, Transport
from hpcdet.dispatcher.transport.quoting import command_line
from hpcdet.errors import SchedulerError, ValidationError
from hpcdet.jobfiles import UnsafeFileError

# Values a hostile experiment name, path or option could carry into a command line.
HOSTILE = ["plain", "two words", ";", "a;rm -rf /", "$(id)", "`id`", "${HOME}", "'single'",
           '"double"', "back\\slash", "-n", "--help", "-", "*", "?", "[a]", "~", "a\tb", "",
           "ünïcödé ☃", "|", "&&", "> /tmp/x", "#comment", "!", "%s\\0"]


def test_every_hostile_token_reaches_the_process_exactly() -> None:
    """A real sh parses the line the SSH server would be sent: printf sees exactly argv."""
    line = command_line(["printf", "%s\\0", *HOSTILE])
    out = subprocess.run(["sh", "-c", line], capture_output=True, check=True).stdout
    assert out.decode().split("\0")[:-1] == HOSTILE
    assert shlex.split(line) == ["printf", "%s\\0", *HOSTILE]


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\x00b"])
def test_newline_cr_and_nul_are_refused_naming_the_argument(bad: str) -> None:
    with pytest.raises(ValidationError, match="SSH command argument 2"):
        command_line(["squeue", "--name", bad])


def test_an_empty_command_is_refused() -> None:
    with pytest.raises(ValidationError, match="at least a program name"):
        command_line([])


def test_the_runner_counts_commands_run_by_any_executor() -> None:
    seen: list[tuple[str, ...]] = []

    def remote(argv: tuple[str, ...], timeout: float, stdin: bytes | None) -> Completed:
        seen.append(argv)
        return Completed(0 if argv[0] == "squeue" else 3, "out", "boom")

    runner = CommandRunner(executor=remote)
    assert runner(["squeue", "-h"]) == "out"
    with pytest.raises(SchedulerError, match="sbatch exited with 3: boom"):
        runner(["sbatch", "x"])
    assert runner.count == 2 and seen == [("squeue", "-h"), ("sbatch", "x")]


# ---- the local transport --------------------------------------------------------------


def test_local_files_keep_modes_offsets_and_refuse_links(tmp_path: Path) -> None:
    files = LocalTransport()
    root = str(tmp_path / "a" / "b")
    files.make_dirs(root, 0o700)
    files.write_file(f"{root}/f", b"0123456789", 0o600)
    assert (os.stat(root).st_mode & 0o777, os.stat(f"{root}/f").st_mode & 0o777) == (0o700, 0o600)
    assert files.read_file(f"{root}/f", 3, 4) == b"3456" and files.file_size(f"{root}/f") == 10
    assert files.file_size(f"{root}/none") is None
    os.symlink("/etc/hostname", f"{root}/link")
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        files.read_file(f"{root}/link")
    assert {(e.name, e.is_dir, e.is_link) for e in files.list_dir(root)} == {
        ("f", False, False), ("link", False, True)}
    files.remove_tree(str(tmp_path / "a"))
    assert not files.exists(str(tmp_path / "a")) and os.path.exists("/etc/hostname")
    assert files.file_ops > 0


class ElsewhereTransport(Transport):
    """A transport that is not the local one (so the context is written member by member,
    as over SFTP), keeping its files in a directory of this host; records each write."""

    name = "elsewhere"

    def __init__(self) -> None:
        self.local = LocalTransport()
        self.runner = self.local.runner
        self.writes: list[str] = []

    def make_dirs(self, path: str, mode: int) -> None:
        self.local.make_dirs(path, mode)

    def write_file(self, path: str, data: bytes, mode: int, *, atomic: bool = True) -> None:
        self.writes.append(path)
        self.local.write_file(path, data, mode, atomic=atomic)

    def read_file(self, path: str, offset: int = 0, limit: int | None = None) -> bytes:
        return self.local.read_file(path, offset, limit)

    def file_size(self, path: str) -> int | None:
        return self.local.file_size(path)

    def is_dir(self, path: str) -> bool:
        return self.local.is_dir(path)

    def exists(self, path: str) -> bool:
        return self.local.exists(path)

    def list_dir(self, path: str) -> list[Entry]:
        return self.local.list_dir(path)

    def rename(self, source: str, target: str) -> None:
        self.local.rename(source, target)

    def remove_tree(self, path: str) -> None:
        self.local.remove_tree(path)


def tar_of(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644, **extra: Any
           ) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode = kind, mode
    for key, value in extra.items():
        setattr(info, key, value)
    return info


def test_a_remote_context_is_written_member_by_member_privately(tmp_path: Path) -> None:
    files = ElsewhereTransport()
    context = tar_of([(member("train.py", mode=0o755), b"print(1)\n"),
                      (member("data", tarfile.DIRTYPE, 0o555), None),
                      (member("data/x.csv"), b"1,2\n"), (member("deep/er/y.txt"), b"y"),
                      (member("up", tarfile.SYMTYPE, linkname="train.py"), None),
                      (member("/abs.txt"), b"a")])
    job_dir = tmp_path / "trial-1"
    prepare_job_dir(job_dir, context_tar=context, trial_info={"trial_id": 1}, token="t0k",
                    files=files)
    ctx = job_dir / "context"
    assert (ctx / "train.py").read_text() == "print(1)\n"
    assert (ctx / "train.py").stat().st_mode & 0o777 == 0o700  # owner bits, execute kept
    assert (ctx / "data" / "x.csv").stat().st_mode & 0o777 == 0o600
    assert (ctx / "data").stat().st_mode & 0o777 == 0o700  # writable: its files went in
    assert (ctx / "deep" / "er" / "y.txt").read_text() == "y"
    assert not (ctx / "up").exists()  # links are left out, as the run-as helper does
    assert (ctx / "abs.txt").read_text() == "a"  # the "data" filter strips a leading "/"
    assert (job_dir / ".token").stat().st_mode & 0o777 == 0o600
    assert f"{ctx}.partial/train.py" in files.writes  # unpacked aside, then renamed


@pytest.mark.parametrize("name", ["../escape.py", "a/../../escape"])
def test_a_remote_context_cannot_write_outside_its_directory(tmp_path: Path, name: str) -> None:
    context = tar_of([(member(name), b"x")])
    with pytest.raises(ValidationError, match="not a valid tar archive"):
        prepare_job_dir(tmp_path / "trial-1", context_tar=context, trial_info={}, token=None,
                        files=ElsewhereTransport())
    assert not (tmp_path / "escape.py").exists()
    assert not (tmp_path / "trial-1" / "context").exists()


# ---- the SSH connection's refusals and backoff (no server needed) ------------------------


def test_an_unreachable_login_node_is_retried_with_backoff(tmp_path: Path) -> None:
    from hpcdet.dispatcher.transport import SshSettings, TransportUnavailableError
    from hpcdet.dispatcher.transport.ssh import SshConnection

    known = tmp_path / "known_hosts"
    known.write_text("")
    now = [100.0]
    # Port 1 on 127.0.0.1: nothing listens, the connection is refused at once.
    connection = SshConnection(SshSettings(host="127.0.0.1", port=1, user="u",
                                           known_hosts=str(known), connect_timeout=2),
                               clock=lambda: now[0])
    waits = []
    for _ in range(7):
        with pytest.raises(TransportUnavailableError, match="cannot reach the login node "
                           r"u@127.0.0.1:1") as first:
            connection.transport()
        assert "next try" not in str(first.value) and first.value.retry_in is None  # tried
        with pytest.raises(TransportUnavailableError, match="next try in") as early:
            connection.transport()  # within the backoff: fails at once, nothing tried
        assert early.value.retry_in is not None and early.value.retry_in > 0
        waits.append(int(str(early.value).rsplit("next try in ", 1)[1].rstrip("s)")))
        now[0] += 100  # past any backoff
    assert waits == [1, 2, 4, 8, 16, 30, 30] and connection.connects == 0


def test_a_missing_known_hosts_file_is_refused_before_connecting(tmp_path: Path) -> None:
    from hpcdet.dispatcher.transport import HostKeyError, SshSettings
    from hpcdet.dispatcher.transport.ssh import SshConnection

    absent = tmp_path / "known_hosts"
    connection = SshConnection(SshSettings(host="127.0.0.1", port=1, known_hosts=str(absent)))
    with pytest.raises(HostKeyError, match=f"{absent} does not exist; add the login node's"):
        connection.transport()
    assert not absent.exists()
