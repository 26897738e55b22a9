"""Who is calling: a user (``X-Hpcdet-User``) or a trial's harness (Bearer token)."""

from __future__ import annotations

import hmac

from flask import current_app, request

from hpcdet.master.errors import ApiError
from hpcdet.master.models import Trial
from hpcdet.master.permissions import ANONYMOUS

USER_HEADER = "X-Hpcdet-User"


def current_user() -> str:
    """The calling user's name; 401 when the master requires one and none was sent."""
    name = (request.headers.get(USER_HEADER) or "").strip()
    if name:
        if len(name) > 128 or not name.isprintable():
            raise ApiError(400, "bad_request", f"invalid {USER_HEADER} header")
        return name
    if current_app.config["HPCDET_SETTINGS"].require_user:
        raise ApiError(401, "unauthorized", f"this master requires the {USER_HEADER} header "
                       "(det sends it from -u/--user or your login name)")
    return ANONYMOUS


def require_trial_token(trial: Trial) -> None:
    """401 unless the request carries ``trial``'s own bearer token."""
    require_token(trial.id, trial.token)


def require_token(trial_id: int, expected: str) -> None:
    """401 unless the request's bearer token is ``expected`` (trial ``trial_id``'s secret)."""
    header = request.headers.get("Authorization", "")
    token = header[7:] if header.startswith("Bearer ") else ""
    if not token or not hmac.compare_digest(token, expected):
        raise ApiError(401, "unauthorized", f"a valid token for trial {trial_id} is required")
