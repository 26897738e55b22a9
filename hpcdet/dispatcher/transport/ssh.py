"""One ``paramiko`` connection to a login node: scheduler commands over ``exec`` channels.

The connection is opened on first use and reused by every command (each on its own
channel: paramiko's :class:`~paramiko.Transport` is safe to share between threads). The
server's host key is checked against ``known_hosts``; an unknown key is refused unless
``insecure_accept_new_host_key`` is set (then it is added to that file), and a changed key
is always refused. Keepalive messages go every ``keepalive_seconds``. A connection that
breaks is dropped; the next use connects again, no sooner than an exponential backoff
(1 s, 2 s, 4 s ... at most :data:`MAX_BACKOFF_SECONDS`) after the last failed try, so an
unreachable login node costs each caller one fast :class:`TransportUnavailableError`.
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Callable, Sequence

import paramiko

from hpcdet.dispatcher.commands import TIMED_OUT, Completed
from hpcdet.dispatcher.transport.base import HostKeyError, TransportUnavailableError
from hpcdet.dispatcher.transport.quoting import command_line
from hpcdet.dispatcher.transport.settings import SshSettings

MAX_BACKOFF_SECONDS = 30.0
# paramiko's errors that mean the connection (not the command) failed.
CONNECTION_ERRORS = (paramiko.SSHException, EOFError, OSError)


class _RefuseUnknown(paramiko.MissingHostKeyPolicy):
    """paramiko's RejectPolicy, with a message saying how to accept the key."""

    def __init__(self, settings: SshSettings) -> None:
        self.settings = settings

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str,
                         key: paramiko.PKey) -> None:
        s = self.settings
        raise HostKeyError((), (
            f"the SSH host key of {s.host_key_name} ({key.get_name()} "
            f"{key.fingerprint}) is not in {s.known_hosts_path}: check the fingerprint with "
            f"the cluster's administrators, then add it (ssh-keyscan -p {s.port} {s.host} "
            f">> {s.known_hosts_path}), or set resource_manager.transport."
            "insecure_accept_new_host_key: true to accept it on first use"))


class SshConnection:
    """The one SSH connection, reopened with backoff when it breaks."""

    def __init__(self, settings: SshSettings, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._client: paramiko.SSHClient | None = None
        self._failures = 0
        self._retry_at = 0.0
        self._last_error = ""
        self._host_key_refused = False
        #: Successful connections so far (1 while the first one lasts).
        self.connects = 0

    def transport(self) -> paramiko.Transport:
        """The live connection, opened (again) if needed; raises when it cannot be."""
        with self._lock:
            if self._client is not None:
                live = self._client.get_transport()
                if live is not None and live.is_active():
                    return live
                self._drop()
            return self._connect()

    def broken(self, transport: paramiko.Transport | None) -> None:
        """Forget ``transport`` (a channel on it failed); the next use reconnects."""
        with self._lock:
            if self._client is not None and self._client.get_transport() is transport:
                self._drop()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _connect(self) -> paramiko.Transport:
        now = self._clock()
        if now < self._retry_at:
            kind = HostKeyError if self._host_key_refused else TransportUnavailableError
            wait = self._retry_at - now
            raise kind((), f"{self._last_error} (next try in {wait:.0f}s)", retry_in=wait)
        try:
            client = self._open()
        except HostKeyError as exc:
            raise self._failed(str(exc), HostKeyError) from None
        except paramiko.AuthenticationException as exc:
            raise self._failed(f"the SSH login to {self.settings.where} was refused ({exc}): "
                               "check resource_manager.transport.key_file and the login "
                               "node's authorized_keys") from None
        except paramiko.BadHostKeyException as exc:
            raise self._failed(self._changed_key_message(exc), HostKeyError) from None
        except CONNECTION_ERRORS as exc:
            reason = str(exc).replace("[Errno None] ", "") or type(exc).__name__
            raise self._failed(f"cannot reach the login node {self.settings.where}: "
                               f"{reason}") from None
        self._failures, self._retry_at = 0, 0.0
        self._client = client
        self.connects += 1
        live = client.get_transport()
        assert live is not None  # connect() succeeded
        live.set_keepalive(self.settings.keepalive_seconds)
        return live

    def _open(self) -> paramiko.SSHClient:
        s = self.settings
        client = paramiko.SSHClient()
        known = s.known_hosts_path
        if not os.path.exists(known):
            if not s.insecure_accept_new_host_key:
                raise HostKeyError((), (
                    f"resource_manager.transport.known_hosts: {known} does not exist; add "
                    f"the login node's host key to it (ssh-keyscan -p {s.port} {s.host} "
                    f">> {known}, after checking the fingerprint)"))
            os.makedirs(os.path.dirname(known) or ".", mode=0o700, exist_ok=True)
            os.close(os.open(known, os.O_WRONLY | os.O_CREAT, 0o600))
        client.load_host_keys(known)  # AutoAddPolicy saves new keys back to this file
        client.set_missing_host_key_policy(
            paramiko.AutoAddPolicy() if s.insecure_accept_new_host_key else _RefuseUnknown(s))
        try:
            client.connect(s.host, port=s.port, username=s.login_user, key_filename=s.key_file,
                           timeout=s.connect_timeout, banner_timeout=s.connect_timeout,
                           auth_timeout=s.connect_timeout, allow_agent=False,
                           look_for_keys=s.key_file is None)
        except BaseException:
            client.close()
            raise
        return client

    def _changed_key_message(self, exc: paramiko.BadHostKeyException) -> str:
        s = self.settings
        return (f"the SSH host key of {s.host_key_name} changed: it offers "
                f"{exc.key.get_name()} {exc.key.fingerprint}, {s.known_hosts_path} has "
                f"{exc.expected_key.fingerprint}; refusing to connect. If the login node "
                f"was reinstalled, remove the old key (ssh-keygen -R '{s.host_key_name}' -f "
                f"{s.known_hosts_path}) and add the new one after checking its fingerprint")

    def _failed(self, message: str,
                kind: type[TransportUnavailableError] = TransportUnavailableError,
                ) -> TransportUnavailableError:
        """Note a failed try (the next waits 1, 2, 4 ... s) and describe it."""
        self._failures += 1
        self._retry_at = self._clock() + min(MAX_BACKOFF_SECONDS, 2.0 ** (self._failures - 1))
        self._last_error = message
        self._host_key_refused = kind is HostKeyError
        return kind((), message)


class SshExecutor:
    """A :class:`~hpcdet.dispatcher.commands.Executor` that runs each command on the login
    node, on its own channel of the one connection, with ``argv`` quoted by
    :func:`~hpcdet.dispatcher.transport.quoting.command_line`."""

    def __init__(self, connection: SshConnection) -> None:
        self.connection = connection

    def __call__(self, argv: tuple[str, ...], timeout: float,
                 stdin: bytes | None) -> Completed:
        line = command_line(argv)
        channel = self._channel(argv)
        try:
            channel.exec_command(line)
            if stdin is not None:
                channel.sendall(stdin)
            channel.shutdown_write()
            out, err = _drain(channel, time.monotonic() + timeout)
            status = channel.recv_exit_status()
        except TimeoutError:
            return Completed(TIMED_OUT, "", f"timed out after {timeout:g}s on "
                             f"{self.connection.settings.where}")
        except CONNECTION_ERRORS as exc:
            self.connection.broken(channel.get_transport())
            raise TransportUnavailableError(argv, (
                f"lost the connection to {self.connection.settings.where} while running "
                f"{argv[0]}: {exc or type(exc).__name__}")) from None
        finally:
            channel.close()
        # -1: the server sent no status (the command was killed by a signal).
        return Completed(status if status >= 0 else 255, out, err)

    def _channel(self, argv: Sequence[str]) -> paramiko.Channel:
        """A new session channel; a stale connection is reopened once (nothing ran yet)."""
        for attempt in (1, 2):
            transport = self.connection.transport()
            try:
                return transport.open_session(timeout=self.connection.settings.connect_timeout)
            except paramiko.ChannelException as exc:  # the server said no; the connection is fine
                raise TransportUnavailableError(argv, (
                    f"{self.connection.settings.where} refused a channel for {argv[0]} "
                    f"({exc}): more commands at once than its MaxSessions?")) from None
            except CONNECTION_ERRORS as exc:
                self.connection.broken(transport)
                if attempt == 2:
                    raise TransportUnavailableError(argv, (
                        f"cannot open a channel to {self.connection.settings.where}: "
                        f"{exc or type(exc).__name__}")) from None
        raise AssertionError("unreachable")


def _drain(channel: paramiko.Channel, deadline: float) -> tuple[str, str]:
    """Everything the command writes to stdout and stderr, read as it comes (a full stderr
    window must not block a command whose stdout is still being read)."""
    out, err = bytearray(), bytearray()
    fd = channel.fileno()
    while True:
        progressed = False
        while channel.recv_ready():
            out += channel.recv(65536)
            progressed = True
        while channel.recv_stderr_ready():
            err += channel.recv_stderr(65536)
            progressed = True
        if channel.eof_received and not channel.recv_ready() and not channel.recv_stderr_ready():
            return out.decode(errors="replace"), err.decode(errors="replace")
        if channel.closed and not progressed:
            if not channel.eof_received:
                raise EOFError("the channel closed before the command's output ended")
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        if not progressed:
            select.select([fd], [], [], min(left, 1.0))

