"""Who may change an object, as the web pages ask it; the rules live in :mod:`authz`.

A page shows its Pause/Kill buttons only to those who may press them; the API checks again
(:func:`hpcdet.master.security.authz.require`).

Determined lets an experiment's owner and admins pause, kill or archive it. A master that
identifies its users applies the rule: with ``auth.mode: munge`` users are proven (MUNGE
login, tokens); with ``auth.mode: open`` and ``auth.require_user: true`` they are names
(``X-Hpcdet-User``), which guards against mistakes between colleagues, not impostors. An
open master without ``require_user`` (meant for one person or a trusted group) cannot tell
people apart and lets every caller change everything.
An experiment created without a name (owner ``anonymous``) may be changed by anybody.
"""

from __future__ import annotations

from hpcdet.master.security.authz import ANONYMOUS, CHANGING_ROLES, is_admin
from hpcdet.master.settings.core import MasterSettings

__all__ = ["ANONYMOUS", "may_modify"]


def may_modify(settings: MasterSettings, actor: str, owner: str,
               role: str | None = None) -> bool:
    """Whether ``actor`` (with ``role`` in the object's workspace, if any) may change
    ``owner``'s experiment, task or template (the rule of :func:`authz.access`)."""
    if is_admin(settings, actor) or actor == owner or owner == ANONYMOUS:
        return True
    return role in CHANGING_ROLES
