"""``det shell``: an interactive shell in a job, reached with the system's ``ssh``.

``det shell start`` submits a shell (a command task whose job runs an ``sshd`` as its user,
docs/shell.md), waits until that sshd listens, then opens it (``--command CMD``: runs CMD
through the same path and exits with its exit code; ``-d``: prints the id and returns).
``det shell open ID`` attaches the terminal. ``det`` fetches the shell's client key and the
sshd's host key from its owner-only route, writes them into a private temporary directory
and runs ``ssh`` (an argv, never a shell string) with that key and the host key pinned.
``list``, ``logs`` and ``kill`` are the task commands narrowed to shells.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.command import config_body, config_options
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.output import format_time, render_table
from hpcdet.cli.task_kinds import kill_command, list_command, logs_command, submit
from hpcdet.cli.trial import is_terminal

HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$")
USER_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\$?$")
PUBLIC_KEY = re.compile(r"^ssh-ed25519 [A-Za-z0-9+/=]+( [^\n\r]*)?$")


@click.group(cls=AliasedGroup, aliases={"ls": "list"})
def shell() -> None:
    """Interactive shells in jobs, opened with ssh (as Determined's det shell)."""


@shell.command("start", context_settings={"allow_interspersed_args": False,
                                          "ignore_unknown_options": True})
@config_options("shell", "the shell starts in its copy", "opening it")
@click.option("--command", "remote_command", metavar="CMD", help="Run CMD in the shell "
              "(not interactively), print its output and exit with its exit code; the shell "
              "goes on running (det shell kill ID ends it).")
@click.argument("ssh_args", nargs=-1, type=click.UNPROCESSED)
@pass_state
def start(state: CliState, config_file: str | None, configs: Sequence[str],
          context_dir: str | None, detach: bool, remote_command: str | None,
          ssh_args: Sequence[str]) -> None:
    """Start a shell in a job, wait for it, then open it (SSH_ARGS, after --, go to ssh)."""
    task = submit(state, "/shells", config_body(config_file, configs, context_dir),
                  detach=detach)
    if task is None:
        return
    click.echo(f"Launched shell {task['id']} (job {task['job_id']}); det shell open "
               f"{task['id']} opens it again, det shell kill {task['id']} ends it", err=True)
    raise click.exceptions.Exit(open_shell(state, int(task["id"]), ssh_args, remote_command))


@shell.command("open", context_settings={"allow_interspersed_args": False,
                                         "ignore_unknown_options": True})
@click.argument("shell_id", type=int)
@click.argument("ssh_args", nargs=-1, type=click.UNPROCESSED)
@pass_state
def open_command(state: CliState, shell_id: int, ssh_args: Sequence[str]) -> None:
    """Open shell SHELL_ID in this terminal (SSH_ARGS, after --, go to ssh)."""
    raise click.exceptions.Exit(open_shell(state, shell_id, ssh_args, None))


def open_shell(state: CliState, shell_id: int, ssh_args: Sequence[str],
               remote_command: str | None) -> int:
    """Wait for the shell's sshd, then run ssh into it; ssh's exit status."""
    if list(ssh_args[:1]) == ["--"]:
        ssh_args = ssh_args[1:]
    keys = wait_for_keys(state, shell_id)
    with key_files(shell_id, keys) as (key, known_hosts):
        argv = ssh_argv(shell_id, keys, key, known_hosts, ssh_args, remote_command)
        return run_ssh(argv)


def wait_for_keys(state: CliState, shell_id: int) -> dict[str, Any]:
    """The shell's keys once its sshd listens (printing the state while it waits)."""
    client = state.client()
    shown = None
    while True:
        keys: dict[str, Any] = client.get(f"/shells/{shell_id}/keys")
        if keys.get("ready"):
            return keys
        if is_terminal(keys.get("state")):
            raise CliError(f"shell {shell_id} is {keys.get('state')}: det shell logs "
                           f"{shell_id} shows why")
        if keys.get("state") != shown:
            shown = keys.get("state")
            click.echo(f"Waiting for shell {shell_id} ({shown})...", err=True)
        time.sleep(state.poll_interval)


@contextlib.contextmanager
def key_files(shell_id: int, keys: Mapping[str, Any]) -> Iterator[tuple[Path, Path]]:
    """The client key and a known-hosts file pinning the sshd's key, in a private (0700)
    temporary directory removed afterwards."""
    host_key = str(keys.get("host_public_key") or "").strip()
    if not PUBLIC_KEY.match(host_key):
        raise CliError(f"the master sent no valid host key for shell {shell_id}")
    directory = Path(tempfile.mkdtemp(prefix="det-shell-"))
    try:
        key, known_hosts = directory / "id_ed25519", directory / "known_hosts"
        _write_private(key, str(keys["client_private_key"]))
        _write_private(known_hosts, f"{host_alias(shell_id)} {host_key}\n")
        yield key, known_hosts
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _write_private(path: Path, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text if text.endswith("\n") else text + "\n")


def host_alias(shell_id: int) -> str:
    """The name the host key is pinned under (whatever node the shell runs on)."""
    return f"hpcdet-shell-{shell_id}"


def ssh_argv(shell_id: int, keys: Mapping[str, Any], key: Path, known_hosts: Path,
             ssh_args: Sequence[str] = (), remote_command: str | None = None) -> list[str]:
    """The ssh command line: only this shell's key, only its pinned host key."""
    host, port, user = keys.get("host"), keys.get("port"), keys.get("user")
    if not (isinstance(host, str) and HOST_NAME.match(host)):
        raise CliError(f"the master sent an invalid host for shell {shell_id}: {host!r}")
    if not (isinstance(user, str) and USER_NAME.match(user)):
        raise CliError(f"the master sent an invalid user for shell {shell_id}: {user!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise CliError(f"the master sent an invalid port for shell {shell_id}: {port!r}")
    options = {
        "IdentitiesOnly": "yes", "IdentityAgent": "none", "BatchMode": "yes",
        "PasswordAuthentication": "no", "StrictHostKeyChecking": "yes",
        "UserKnownHostsFile": _config_path(known_hosts), "GlobalKnownHostsFile": "/dev/null",
        "HostKeyAlias": host_alias(shell_id), "CheckHostIP": "no", "UpdateHostKeys": "no",
    }
    argv = [shutil.which("ssh") or "ssh", "-i", str(key)]
    for name, value in options.items():
        argv += ["-o", f"{name}={value}"]
    argv += ["-p", str(port), f"{user}@{host}", *ssh_args]
    if remote_command is not None:
        argv += ["--", remote_command]
    return argv


def _config_path(path: Path) -> str:
    """A path as an ssh option value (double-quoted: a temporary directory may hold a
    space)."""
    text = str(path)
    if any(char in text for char in '"\n\r\x00'):
        raise CliError(f"cannot pass {text!r} to ssh: choose another TMPDIR")
    return f'"{text}"'


def run_ssh(argv: Sequence[str]) -> int:
    """Run ssh in this terminal; Ctrl-C goes to the remote side, not to det. A hang-up or
    SIGTERM ends det through its ``finally`` blocks (the key files are removed)."""
    if shutil.which(argv[0]) is None:
        raise CliError("det shell needs the OpenSSH client (ssh) on this machine")
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN),
                signal.SIGHUP: signal.signal(signal.SIGHUP, _leave),
                signal.SIGTERM: signal.signal(signal.SIGTERM, _leave)}
    ssh: subprocess.Popen[bytes] | None = None
    try:
        # Inside the try: a hang-up can arrive before Popen returns (ssh already running).
        ssh = subprocess.Popen(list(argv))
        return ssh.wait()
    finally:
        _end(ssh)
        for number, handler in previous.items():
            signal.signal(number, handler)


def _end(ssh: subprocess.Popen[bytes] | None) -> None:
    """Don't leave ssh (and the tunnels it holds) running when det is ended by a signal."""
    if ssh is None or ssh.poll() is not None:
        return
    ssh.terminate()
    try:
        ssh.wait(timeout=5)
    except subprocess.TimeoutExpired:
        ssh.kill()
        ssh.wait()


def _leave(number: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + number)


def shells_table(tasks: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det shell list`` prints."""
    headers = ["ID", "Owner", "Description", "State", "Job", "Node", "Pool", "Submitted"]
    rows = [[t.get("id"), t.get("owner"), t.get("name"), t.get("state"), t.get("job_id"),
             t.get("nodes"), t.get("pool") or t.get("partition"),
             format_time(t.get("submitted_at"))] for t in tasks]
    return render_table(headers, rows)


shell.add_command(list_command("shell", "shells", shells_table, ""))
shell.add_command(logs_command("shell", "shell", "the job's: its sshd's messages"))
shell.add_command(kill_command("shell", "shell", "End a shell: cancel its job (the master "
                               "cancels it within seconds)."))
