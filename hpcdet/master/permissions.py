"""Who may change an experiment: on a master that names its users, the owner and admins.

Determined lets an experiment's owner and admins pause, kill or archive it. A master that
identifies its users applies the rule: with ``auth.mode: munge`` users are proven (MUNGE
login, tokens); with ``auth.mode: open`` and ``auth.require_user: true`` they are names
(``X-Hpcdet-User``), which guards against mistakes between colleagues, not impostors. An
open master without ``require_user`` (meant for one person or a trusted group) cannot tell
people apart and lets every caller change everything.
An experiment created without a name (owner ``anonymous``) may be changed by anybody.
"""

from __future__ import annotations

from hpcdet.master.errors import ApiError
from hpcdet.master.settings import MasterSettings

ANONYMOUS = "anonymous"


def may_modify(settings: MasterSettings, actor: str, owner: str) -> bool:
    """Whether ``actor`` may pause, activate, cancel, kill or archive ``owner``'s experiment."""
    if not settings.identifies_users or owner == ANONYMOUS:
        return True
    return actor == owner or actor in settings.admins


def require_modify(settings: MasterSettings, actor: str, owner: str, what: str) -> None:
    """403 ``forbidden`` unless :func:`may_modify`; the message says who may."""
    if not may_modify(settings, actor, owner):
        raise ApiError(403, "forbidden", f"user {actor!r} may not change {what}: only its "
                       f"owner {owner!r} or an admin (master.yaml auth.admins) may")
