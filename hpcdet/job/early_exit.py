"""Why a trial's code stopped before its searcher asked it to, and how it says so.

The vocabulary is shared by both ends of ``POST /api/v1/trials/<id>/early_exit``: the Core
API (``core.train.report_early_exit``) and the harness send it, the master stores it in
the trial and hands it to the searcher when the job ends. Standard library only:
``import hpcdet`` exposes :class:`InvalidHP` from here and must stay light.
"""

from __future__ import annotations

import enum


class EarlyExitReason(str, enum.Enum):
    """Why a trial exited early (Determined's ``EarlyExitReason``); the value goes on the wire.

    ``INVALID_HP``: these hyperparameters cannot be trained (the searcher replaces the
    trial without spending its budget). ``ERRORED``: the code gave up on an error.
    ``USER_REQUESTED_STOP``: the code decided to stop on its own.
    """

    INVALID_HP = "invalid_hp"
    ERRORED = "errored"
    USER_REQUESTED_STOP = "user_requested_stop"

    @classmethod
    def parse(cls, value: object) -> EarlyExitReason:
        """A reason from a member, its value (``invalid_hp``) or its name (``INVALID_HP``).

        Raises ValueError naming the accepted reasons for anything else.
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value.strip().upper() in cls.__members__:
            return cls.__members__[value.strip().upper()]
        accepted = ", ".join(reason.value for reason in cls)
        raise ValueError(f"unknown early exit reason {value!r}; use one of {accepted}")


# Determined's name (not ...Error), so scripts port unchanged.
class InvalidHP(Exception):
    """Raise it from training code when its hyperparameters cannot work.

    When the harness runs the entrypoint in-process, it reports an ``invalid_hp`` early
    exit for the trial and exits 0; the searcher then tries other hyperparameters without
    counting this trial against its budget. Available as ``hpcdet.InvalidHP``::

        if hparams["hidden"] % hparams["heads"]:
            raise hpcdet.InvalidHP("hidden must be a multiple of heads")
    """
