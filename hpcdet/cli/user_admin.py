"""Determined's ``det user`` administration commands, as hpcdet's identity allows them.

hpcdet's users are the cluster's Unix users, proven with MUNGE: ``create`` registers one the
master's host knows, ``activate``/``deactivate`` let a user use the master or refuse them,
``edit`` sets a display name or ``--active``. Passwords, renaming, admin rights (named in
``auth.admins`` of master.yaml) and agent users are the cluster's: those commands and
options exist, as in Determined, and say so.
"""

from __future__ import annotations

from urllib.parse import quote

import click

from hpcdet.cli.actions import verb_command
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import print_answer

FROM_THE_CLUSTER = ("hpcdet's users are the cluster's Unix users, proven with MUNGE: their "
                    "names and passwords belong to the cluster (passwd, your site's identity "
                    "service; getent passwd NAME shows one), not to the master")
ADMIN_SETTING = ("cluster admins are named in auth.admins of the master's master.yaml (read "
                 "at start): an admin of the cluster edits it; hpcdet does not grant or take "
                 "admin rights at run time")
BOOL = click.Choice(["true", "false"], case_sensitive=False)


def _user_path(name: str, *rest: str) -> str:
    return "/" + "/".join(quote(part, safe="") for part in ("users", name, *rest))


def _refuse(what: str) -> CliError:
    """The one-line refusal of a command hpcdet's identity has no place for."""
    return CliError(f"{what}: {FROM_THE_CLUSTER}")


@click.command("create")
@click.argument("username")
@click.option("--admin", is_flag=True, help="Refused: " + ADMIN_SETTING.split(":")[0] + ".")
@click.option("--password", help="Refused: no passwords here (MUNGE proves the Unix user).")
@click.option("--remote", is_flag=True,
              help="Accepted and implied: every hpcdet user signs in with the cluster's "
                   "identity.")
@JSON_OPTION
@pass_state
def create_user(state: CliState, username: str, admin: bool, password: str | None,
                remote: bool, as_json: bool) -> None:
    """Register Unix user USERNAME with the master before their first sign-in (cluster
    admins; the master's host must know the user)."""
    if admin:
        raise CliError(f"--admin: {ADMIN_SETTING}")
    if password is not None:
        raise _refuse("--password: hpcdet has no passwords")
    answer = state.client().post("/users", {"username": username})
    print_answer(answer, as_json, lambda a: f"Registered user {a['user']['username']}")


activate_user = verb_command("activate", "Let USERNAME use the master again (cluster admins).",
                             "username", _user_path, "Activated user {}")
deactivate_user = verb_command("deactivate", "Refuse every request of USERNAME, sign-in "
                               "included (cluster admins; not yourself).", "username",
                               _user_path, "Deactivated user {}")


@click.command("edit")
@click.argument("target_user")
@click.option("--display-name", help="A new display name (yours, or anyone's for a cluster "
                                     "admin).")
@click.option("--active", type=BOOL, metavar="(true|false)",
              help="Activate or deactivate the user (cluster admins).")
@click.option("--username", "new_username", help="Refused: user names are the cluster's.")
@click.option("--admin", type=BOOL, metavar="(true|false)",
              help="Refused: cluster admins are named in auth.admins of master.yaml.")
@click.option("--remote", type=BOOL, metavar="(true|false)",
              help="Refused: every hpcdet user signs in with the cluster's identity.")
@JSON_OPTION
@pass_state
def edit_user(state: CliState, target_user: str, display_name: str | None,
              active: str | None, new_username: str | None, admin: str | None,
              remote: str | None, as_json: bool) -> None:
    """Set TARGET_USER's display name or whether they are active."""
    if admin is not None:
        raise CliError(f"--admin: {ADMIN_SETTING}")
    if new_username is not None:
        raise _refuse("--username: hpcdet cannot rename users")
    if remote is not None:
        raise _refuse("--remote: every hpcdet user is remote")
    body: dict[str, object] = {}
    if display_name is not None:
        body["display_name"] = display_name
    if active is not None:
        body["active"] = active.lower() == "true"
    if not body:
        raise click.UsageError("give --display-name and/or --active")
    answer = state.client().patch(_user_path(target_user), body)
    print_answer(answer, as_json, lambda a: f"Updated user {target_user}")


@click.command("change-password")
@click.argument("target_user", required=False)
def change_password(target_user: str | None) -> None:
    """Refused: hpcdet has no passwords (MUNGE proves your Unix user)."""
    raise _refuse("hpcdet has no passwords to change (use passwd, or your site's way)")


@click.command("rename")
@click.argument("target_user")
@click.argument("new_username")
def rename(target_user: str, new_username: str) -> None:
    """Refused: user names are the cluster's Unix user names."""
    raise _refuse("hpcdet cannot rename users")


@click.command("link-with-agent-user")
@click.argument("det_username")
@click.option("--agent-uid", type=int, help="Refused.")
@click.option("--agent-user", help="Refused.")
@click.option("--agent-gid", type=int, help="Refused.")
@click.option("--agent-group", help="Refused.")
def link_with_agent_user(det_username: str, agent_uid: int | None, agent_user: str | None,
                         agent_gid: int | None, agent_group: str | None) -> None:
    """Refused: a user is the Unix user MUNGE proves (no agent user to link)."""
    raise CliError("hpcdet links no agent users: which Unix user a job runs as is the "
                   "master's setting, and a user is the Unix user MUNGE proves (docs/admin/"
                   "security.md, \"What runs as whom\")")


__all__ = ["activate_user", "create_user", "deactivate_user", "edit_user"]


# What hpcdet.cli.user adds to ``det user`` (this module does not import the group: it is
# imported by it).
ADMIN_COMMANDS = (create_user, activate_user, deactivate_user, edit_user, change_password,
                  rename, link_with_agent_user)
