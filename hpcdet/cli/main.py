"""The ``det`` root group, the state every command shares, and the one place where errors
become messages and exit codes.

Exit status: 0 success; 1 an error (the master refused or could not be reached, a bad
configuration or context directory, an experiment followed with ``--follow`` that did not
end COMPLETED); 2 a usage error (click's); 130 interrupted with Ctrl-C (the shell's
128 + SIGINT convention; Determined's ``det`` uses 3).

Errors are shown as one ``Error: ...`` line on stderr (a configuration error adds one
indented line per problem). Only ``--debug`` shows a traceback.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from hpcdet import __version__
from hpcdet.cli._lazy import LazyGroup
from hpcdet.errors import ConfigError, HpcdetError, MasterError

if TYPE_CHECKING:
    import httpx

    from hpcdet.client import MasterClient

DEFAULT_MASTER = "http://localhost:8080"
EXIT_ERROR = 1
EXIT_INTERRUPTED = 130

# Every command: where it lives, and its short help, shown by ``det --help`` without
# importing its module (tests/unit/cli checks that each is the command's own).
_COMMANDS: dict[str, tuple[str, str]] = {
    "experiment": ("hpcdet.cli.experiment:experiment", "Create, inspect and stop experiments."),
    "trial": ("hpcdet.cli.trial:trial", "Inspect trials: state, metrics, checkpoints, logs."),
    "master": ("hpcdet.cli.master_cmd:master", "Ask the master about itself."),
    "version": ("hpcdet.cli.master_cmd:version",
                "Show the client's version and, if it answers, the master's."),
    "template": ("hpcdet.cli.template:template",
                 "Manage config templates that experiments can start from."),
    "preview-search": ("hpcdet.cli.preview:preview_search",
                       "Show the trials a search would run; submits nothing."),
    "checkpoint": ("hpcdet.cli.checkpoint:checkpoint",
                   "List, inspect, download and delete checkpoints."),
    "resource-pool": ("hpcdet.cli.resource_pool:resource_pool",
                      "Show the resource pools (Slurm partitions and custom pools)."),
    "job": ("hpcdet.cli.job:job", "Slurm's job queue: list it, and change the priority, order "
            "or pool of queued jobs."),
    "sbatch": ("hpcdet.cli.sbatch:sbatch",
               "Submit a batch script to Slurm through the master, as sbatch does."),
    "qsub": ("hpcdet.cli.qsub:qsub", "Submit a batch script to PBS through the master, as "
             "qsub does."),
    "task": ("hpcdet.cli.task:task",
             "Follow the batch jobs submitted with det sbatch (command tasks)."),
    "cmd": ("hpcdet.cli.command:cmd",
            "Run commands as jobs in a resource pool (as Determined's det cmd)."),
    "notebook": ("hpcdet.cli.notebook:notebook",
                 "JupyterLab in a job, opened through the master (as Determined's det "
                 "notebook)."),
    "shell": ("hpcdet.cli.shell:shell",
              "Interactive shells in jobs, opened with ssh (as Determined's det shell)."),
    "tensorboard": ("hpcdet.cli.tensorboard:tensorboard",
                    "TensorBoard over experiments' metrics, run as a job (as Determined's)."),
    "user": ("hpcdet.cli.user:user",
             "Sign in to the master (MUNGE), see who you are, manage API tokens."),
    "token": ("hpcdet.cli.user:token",
              "API tokens for scripts: Authorization: Bearer TOKEN, or DET_USER_TOKEN for det."),
    "workspace": ("hpcdet.cli.workspace:workspace",
                  "Manage workspaces: who may see and change the experiments shared in them."),
    "project": ("hpcdet.cli.workspace:project",
                "Manage projects: named groups of experiments inside a workspace."),
    "model": ("hpcdet.cli.model:model",
              "Manage the model registry: models and their versions (checkpoints)."),
    "rbac": ("hpcdet.cli.rbac:rbac",
             "See roles and assign workspace roles (viewer, editor, admin) to users."),
    "user-group": ("hpcdet.cli.user_group:user_group",
                   "Manage user groups; give them workspace roles with det rbac assign-role "
                   "-g."),
}
_SUBCOMMANDS = {name: target for name, (target, _) in _COMMANDS.items()}
_SUMMARIES = {name: summary for name, (_, summary) in _COMMANDS.items()}
_ALIASES = {"e": "experiment", "t": "trial", "tpl": "template", "c": "checkpoint",
            "rp": "resource-pool", "j": "job", "w": "workspace", "p": "project", "m": "model",
            "command": "cmd", "u": "user", "tkn": "token"}


class CliState:
    """What the root group hands every command: the master's address, the caller, flags.

    :meth:`client` builds the :class:`~hpcdet.client.MasterClient` on first use (importing
    the client only then). Unit tests pass ``CliState(transport=...)`` (an httpx transport,
    see :class:`hpcdet.client_http.HttpxTransport`) as click's ``obj`` to answer requests
    with a fake master, ``poll_interval=0`` to follow without waiting, and ``munge_encode``
    to replace :func:`hpcdet.munge.encode` with a fake. (A plain class, not a dataclass:
    ``dataclasses`` and what it imports cost every ``det`` command ~1.5 ms.)
    """

    def __init__(self, *, master: str = DEFAULT_MASTER, user: str | None = None,
                 debug: bool = False, poll_interval: float = 1.0,
                 transport: httpx.BaseTransport | None = None, munge_encode: Any = None) -> None:
        self.master = master
        self.user = user
        self.debug = debug
        self.poll_interval = poll_interval
        self.transport = transport
        self.munge_encode = munge_encode
        self._client: MasterClient | None = None

    def client(self) -> MasterClient:
        """The client for ``self.master``, created once per command.

        It sends ``DET_USER_TOKEN`` or the stored session token (``~/.hpcdet/auth.json``)
        when there is one, and logs in with MUNGE when the master asks who is calling.
        """
        if self._client is None:
            from hpcdet.cli import session

            self._client = session.open_client(self.master, user=self.user,
                                               transport=self.transport,
                                               encode=self.munge_encode,
                                               on_degraded=_warn_degraded)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


pass_state = click.make_pass_decorator(CliState)


class CliError(click.ClickException):
    """An error already worded for the user; click prints ``Error: <message>`` and exits 1."""

    exit_code = EXIT_ERROR


class Interrupted(CliError):
    """Ctrl-C: exits 130."""

    exit_code = EXIT_INTERRUPTED


class RootGroup(LazyGroup):
    """The ``det`` group: turns every exception a command raises into :class:`CliError`."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, BrokenPipeError):
            raise
        except KeyboardInterrupt as exc:
            raise Interrupted("interrupted") from exc
        except Exception as exc:
            if ctx.params.get("debug"):
                import traceback

                traceback.print_exception(exc)
            raise CliError(error_message(exc, debug=bool(ctx.params.get("debug")))) from exc


def error_message(exc: Exception, *, debug: bool = False) -> str:
    """The text after ``Error:`` for an exception a command raised."""
    if isinstance(exc, ConfigError):
        if len(exc.errors) == 1:
            return f"{exc.title}: {exc.errors[0]}"
        return f"{exc.title}:\n  " + "\n  ".join(exc.errors)
    if isinstance(exc, MasterError) and exc.status is None and not _is_tls_error(exc):
        return f"{exc} (set the master's address with -m/--master or DET_MASTER)"
    if isinstance(exc, HpcdetError):
        return str(exc)
    hint = "" if debug else " (run with --debug for the traceback)"
    return f"unexpected {type(exc).__name__}: {exc}{hint}"


def _is_tls_error(exc: Exception) -> bool:
    from hpcdet.client_tls import MasterTlsError

    return isinstance(exc, MasterTlsError)


def _default_user() -> str | None:
    """The login name, found as ``getpass.getuser`` finds it (the first of ``LOGNAME``,
    ``USER``, ``LNAME``, ``USERNAME`` that is set, else the password database): importing
    getpass (and termios with it) would cost every ``det`` command ~0.5 ms."""
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if os.environ.get(name):
            return os.environ[name]
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return None


@click.group(
    cls=RootGroup,
    lazy_subcommands=_SUBCOMMANDS,
    summaries=_SUMMARIES,
    aliases=_ALIASES,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Exit status: 0 success, 1 error, 2 usage error, 130 interrupted.",
)
@click.option("-m", "--master", "master", envvar="DET_MASTER", show_envvar=True,
              default=DEFAULT_MASTER, show_default=True, metavar="URL",
              help="Address of the master (host:port, http:// or https:// URL; "
              "DET_MASTER_CERT_FILE: its CA, or noverify).")
@click.option("-u", "--user", "user", envvar="DET_USER", show_envvar=True,
              default=_default_user, show_default="your login name",
              help="Who you are to an open master (auth.mode: open). A munge master "
              "ignores it: det user login proves your Unix user.")
@click.option("--debug", is_flag=True, help="Show the full traceback when something fails.")
@click.version_option(__version__, "-v", "--version", prog_name="det",
                      message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context, master: str, user: str | None, debug: bool) -> None:
    """Train models on a Slurm cluster through an hpcdet master.

    Start with `det experiment create CONFIG.yaml CONTEXT_DIR --follow`.
    """
    state = ctx.ensure_object(CliState)
    state.master, state.user, state.debug = master, user or None, debug
    ctx.call_on_close(state.close)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``det`` console script."""
    cli.main(args=argv, prog_name="det", terminal_width=_help_width())


def _help_width() -> int:
    """The width click gives help text (the terminal's, at most 78, at least 50), found as
    ``shutil.get_terminal_size`` finds it: click would import shutil for it, which costs
    ``det --help`` ~2 ms (it loads bz2 and lzma)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return max(min(columns or 80, 80) - 2, 50)


def _warn_degraded(health: str) -> None:
    """One line on stderr: the states the command shows may be stale."""
    problems = health.removeprefix("degraded").strip("; ")
    click.echo(f"warning: the master reports itself degraded ({problems}); states shown may "
               "be stale (det master info)", err=True)
