"""Where slurmrestd's JWTs come from, and when they are renewed.

Two sources (``resource_manager.transport.token_source``):

* ``file``: an operator (or a timer) keeps a token in a file; it is read again whenever the
  file changes (inode, size or mtime), so a renewed token is used at once. The file must be
  a regular file, owned by the master's user and private (no group or other bits): a token
  is a password to Slurm.
* ``scontrol``: the master runs ``scontrol token lifespan=N`` itself (through its local
  command runner: a token of its own user, which any user may mint) and renews the token
  once 80% of its life has passed, before slurmrestd would refuse it. In run-as-owner mode
  each owner's token is minted the same way *as the owner*, by the run-as helper's
  ``token`` verb through sudo, and cached and renewed per user: the master never holds
  the power to mint a token for someone else (docs/admin/slurmrestd.md).

Tokens never appear in logs or messages: errors name the file or the command only.
"""

from __future__ import annotations

import abc
import os
import re
import threading
import time
from collections.abc import Callable

from hpcdet import private_files
from hpcdet.dispatcher.commands import Runner
from hpcdet.dispatcher.transport.base import TransportUnavailableError
from hpcdet.errors import SchedulerError

# What scontrol prints (and what a token file may hold): SLURM_JWT=<token>.
_JWT_LINE = re.compile(r"^(?:SLURM_JWT=)?([A-Za-z0-9_.-]+)$")
# A token is renewed once this share of its lifespan has passed.
RENEW_AT = 0.8
#: Mints ``user``'s own token with a lifespan in seconds; returns what ``scontrol token``
#: prints (the run-as helper's ``token`` verb: :meth:`hpcdet.dispatcher.runas.RunAs.token`).
Minter = Callable[[str, int], str]


class TokenSource(abc.ABC):
    """Gives the token for requests as a user (None: the master's own user)."""

    #: Tokens obtained so far (a new one read from the file, or minted): tests watch it.
    renewals: int = 0

    @abc.abstractmethod
    def token(self, user: str | None = None) -> str:
        """A token valid now for ``user`` (None: the master's own user)."""

    def invalidate(self, user: str | None = None) -> None:  # noqa: B027 - optional
        """Forget ``user``'s token (slurmrestd refused it): the next call gets a new one."""


def parse_token(text: str, where: str) -> str:
    """The token in ``text`` (``<token>`` or ``SLURM_JWT=<token>``, one line)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    match = _JWT_LINE.match(lines[-1]) if len(lines) == 1 else None
    if match is None:
        # Never quote the text: it may be a token in a shape we did not expect.
        raise SchedulerError([where], 1, "", f"{where} holds no token "
                             "(expected one line: <token> or SLURM_JWT=<token>)")
    return match.group(1)


class FileTokens(TokenSource):
    """A token file kept fresh by someone else; read again when it changes."""

    def __init__(self, path: str) -> None:
        self.path = os.path.expanduser(path)
        self._seen: tuple[int, int, int] | None = None
        self._token = ""
        self._lock = threading.Lock()
        self.renewals = 0

    def token(self, user: str | None = None) -> str:
        if user is not None:
            raise SchedulerError(["token_source"], 1, "", "a token file gives the master's own "
                                 "token only; run-as-owner needs token_source type scontrol")
        with self._lock:
            info = check_private_file(self.path)
            seen = (info.st_ino, info.st_size, info.st_mtime_ns)
            if seen != self._seen:
                with open(self.path, encoding="utf-8") as handle:
                    self._token = parse_token(handle.read(), self.path)
                self._seen = seen
                self.renewals += 1
            return self._token

    def invalidate(self, user: str | None = None) -> None:
        with self._lock:
            self._seen = None


def check_private_file(path: str) -> os.stat_result:
    """``lstat`` of the token file ``path`` if it is private to this process's user
    (:func:`hpcdet.private_files.check_private_file`); else TransportUnavailableError saying
    what is wrong (the master keeps running and tries again next cycle, once an operator
    fixed it)."""
    try:
        return private_files.check_private_file(path, "token file")
    except private_files.UnsafeFileError as exc:
        raise TransportUnavailableError(["token_source"], str(exc)) from None


class ScontrolTokens(TokenSource):
    """Tokens minted by ``scontrol token lifespan=N``, each renewed at :data:`RENEW_AT` of N.

    The master's own (user None) is minted by the master, as itself. In run-as-owner mode
    each owner's comes from ``mint_as(user, N)``: the run-as helper's ``token`` verb
    (:meth:`hpcdet.dispatcher.runas.RunAs.token`), which runs ``scontrol token`` as that
    user. Without ``mint_as`` no other user's token can be had: the master never mints
    one for someone else (``username=``, root's or SlurmUser's power).
    """

    def __init__(self, runner: Runner, lifespan_seconds: int, *, mint_as: Minter | None = None,
                 scontrol: str = "scontrol",
                 clock: Callable[[], float] = time.monotonic) -> None:
        if lifespan_seconds < 10:
            raise ValueError("a token must live at least 10 seconds")
        self.runner, self.lifespan, self.mint_as, self.scontrol, self.clock = (
            runner, lifespan_seconds, mint_as, scontrol, clock)
        self._tokens: dict[str | None, tuple[str, float]] = {}  # user -> (token, renew at)
        self._minting: dict[str | None, threading.Lock] = {}  # user -> held while minting
        self._lock = threading.Lock()  # guards both dicts and renewals
        self.renewals = 0

    def token(self, user: str | None = None) -> str:
        # One mint per user at a time; another user's requests never wait on it (a mint
        # through sudo and the helper takes a while).
        with self._user_lock(user):
            now = self.clock()
            with self._lock:
                held = self._tokens.get(user)
            if held is not None and now < held[1]:
                return held[0]
            token = self._mint(user)
            with self._lock:
                self._tokens[user] = (token, now + RENEW_AT * self.lifespan)
                self.renewals += 1
            return token

    def invalidate(self, user: str | None = None) -> None:
        with self._lock:
            self._tokens.pop(user, None)

    def _user_lock(self, user: str | None) -> threading.Lock:
        with self._lock:
            return self._minting.setdefault(user, threading.Lock())

    def _mint(self, user: str | None) -> str:
        if user is None:
            argv = [self.scontrol, "token", f"lifespan={self.lifespan}"]
            return parse_token(self.runner(argv), "scontrol token")
        if self.mint_as is None:
            raise SchedulerError(["scontrol token"], 1, "", f"no token for {user}: another "
                                 "user's tokens come from the run-as helper "
                                 "(security.jobs_run_as: owner)")
        return parse_token(self.mint_as(user, self.lifespan), f"hpcdet-runas token (as {user})")
