"""``det user``: who you are to the master, your sessions and API tokens, web sign-in.

On a master with ``auth.mode: munge``, ``det`` proves your Unix user with MUNGE and keeps
the session token in ``~/.hpcdet/auth.json``; ``login`` does it now (every other command
does it by itself when needed). API tokens are for scripts and CI: send one as
``Authorization: Bearer TOKEN`` or set ``DET_USER_TOKEN`` for ``det``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.actions import show_command
from hpcdet.cli.main import CliState, pass_state
from hpcdet.cli.output import format_time, print_answer, print_json, render_table
from hpcdet.cli.user_admin import ADMIN_COMMANDS

JSON_OPTION = click.option("--json", "as_json", is_flag=True,
                           help="Print the master's answer as JSON, for scripts.")


@click.group(cls=AliasedGroup, aliases={"ls": "list"})
def user() -> None:
    """Sign in to the master (MUNGE), see who you are, manage API tokens."""


def _url(state: CliState) -> str:
    from hpcdet.client import normalize_master_url

    return normalize_master_url(state.master)


@user.command("login")
@JSON_OPTION
@pass_state
def login(state: CliState, as_json: bool) -> None:
    """Prove your Unix user to the master with MUNGE and keep the session token."""
    from hpcdet.cli import session

    entry = session.login(_url(state), transport=state.transport, encode=state.munge_encode)
    if as_json:
        print_json({k: v for k, v in entry.items() if k != "token"})
        return
    click.echo(f"Logged in to {_url(state)} as {entry.get('username')} "
               f"(until {format_time(entry.get('expires_at'))})")


@user.command("logout")
@pass_state
def logout(state: CliState) -> None:
    """Revoke this session on the master and forget its token."""
    from hpcdet.cli import session
    from hpcdet.client import MasterClient
    from hpcdet.errors import MasterError

    url = _url(state)
    entry = session.stored(url)
    if entry is not None:
        with MasterClient(url, token=entry["token"], transport=state.transport) as client:
            try:
                client.post("/auth/logout")
            except MasterError as exc:
                if exc.status != 401:
                    raise
    session.save(url, None)
    click.echo(f"Logged out of {url}")


user.add_command(show_command("whoami", "Print the user name the master knows you by.",
                              lambda: "/auth/whoami", lambda a: str(a.get("username"))))


@user.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include deactivated users.")
@JSON_OPTION
@pass_state
def list_users(state: CliState, show_all: bool, as_json: bool) -> None:
    """List the users who signed in to the master or were registered (det user create)."""
    answer = state.client().get("/users", params={"all": "1"} if show_all else None)
    print_answer(answer, as_json, lambda a: users_table(a.get("users") or []))


def users_table(users: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det user list`` shows."""
    return render_table(["Username", "Display name", "Admin", "Active", "First seen",
                         "Last seen"], [_user_row(u) for u in users])


def _user_row(u: Mapping[str, Any]) -> list[Any]:
    return [u.get("username"), u.get("display_name") or "", "yes" if u.get("admin") else "no",
            "yes" if u.get("active", True) else "no", format_time(u.get("first_seen")),
            format_time(u.get("last_seen"))]


@user.command("web-login")
@pass_state
def web_login(state: CliState) -> None:
    """Print a one-time link (valid about a minute) that signs a browser in as you."""
    answer = state.client().post("/auth/web_link")
    click.echo(f"{_url(state)}{answer.get('path')}")
    click.echo(f"Open it within a minute (until {format_time(answer.get('expires_at'))}); "
               "it works once.", err=True)


@user.group("token", cls=AliasedGroup, aliases={"ls": "list", "rm": "revoke"})
def token() -> None:
    """API tokens for scripts: Authorization: Bearer TOKEN, or DET_USER_TOKEN for det."""


@token.command("create")
@click.option("--name", "-d", "--description", "name", default="api", show_default=True,
              help="A label to recognise it by (-d/--description: Determined's spelling).")
@click.option("--expires-days", "-e", "--expiration-days", "expires_days",
              type=click.IntRange(1, 3650), default=30, show_default=True,
              help="Days until the token stops working (-e/--expiration-days: Determined's "
                   "spelling).")
@JSON_OPTION
@pass_state
def create_token(state: CliState, name: str, expires_days: int, as_json: bool) -> None:
    """Create an API token; it is printed once and never shown again."""
    answer = state.client().post("/auth/tokens", {"name": name, "expires_days": expires_days})
    if as_json:
        print_json(answer)
        return
    click.echo(str(answer.get("token")))
    click.echo(f"Token {answer.get('id')} ({name}) works until "
               f"{format_time(answer.get('expires_at'))}; keep it secret: it acts as you.",
               err=True)


@token.command("list")
@click.option("--all", "--show-inactive", "show_all", is_flag=True,
              help="Include expired and revoked ones.")
@JSON_OPTION
@pass_state
def list_tokens(state: CliState, show_all: bool, as_json: bool) -> None:
    """List your API tokens and sessions (never the tokens themselves)."""
    answer = state.client().get("/auth/tokens", params={"all": "1"} if show_all else None)
    print_answer(answer, as_json, lambda a: tokens_table(a.get("tokens") or []))


def tokens_table(tokens: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det token list`` and ``det token describe`` show."""
    return render_table(["ID", "Kind", "Name", "Created", "Expires", "Last used", "Revoked"],
                        [_token_row(t) for t in tokens])


def _token_row(t: Mapping[str, Any]) -> list[Any]:
    return [t.get("id"), t.get("kind"), t.get("name"), format_time(t.get("created_at")),
            format_time(t.get("expires_at")), format_time(t.get("last_used_at")),
            format_time(t.get("revoked_at"))]


@token.command("describe")
@click.argument("token_ids", metavar="ID...", type=int, nargs=-1, required=True)
@JSON_OPTION
@pass_state
def describe_tokens(state: CliState, token_ids: tuple[int, ...], as_json: bool) -> None:
    """Show your API tokens or sessions with these IDs (never the tokens themselves)."""
    from hpcdet.errors import HpcdetError

    answer = state.client().get("/auth/tokens", params={"all": "1"})
    found = {t.get("id"): t for t in answer.get("tokens") or []}
    missing = [str(i) for i in token_ids if i not in found]
    if missing:
        raise HpcdetError(f"no token of yours with ID {', '.join(missing)} (det token list "
                          "--all lists them)")
    chosen = [found[i] for i in dict.fromkeys(token_ids)]
    print_answer({"tokens": chosen}, as_json, lambda a: tokens_table(a["tokens"]))


@token.command("revoke")
@click.argument("token_id", metavar="ID", type=int)
@pass_state
def revoke_token(state: CliState, token_id: int) -> None:
    """Revoke token ID: it stops working at once."""
    state.client().delete(f"/auth/tokens/{token_id}")
    click.echo(f"Revoked token {token_id}")


# Determined's administration commands (det user create, activate, ...): hpcdet.cli.user_admin.
for _command in ADMIN_COMMANDS:
    user.add_command(_command)

__all__ = ["token", "user"]
