"""Build a trial of a ``PyTorchTrial`` class, handing it the hyperparameters the way its
``__init__`` asks for them (Determined's tutorials take ``(context)`` or
``(context, hparams)``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any


def instantiate_trial(trial_class: type[Any], context: Any, hparams: Mapping[str, Any],
                      **kwargs: Any) -> Any:
    """``trial_class(context)``, or ``trial_class(context, hparams)`` when its ``__init__``
    takes a second parameter (as Determined's ``mnist_pytorch`` tutorial's does: it is
    given by name if called ``hparams``, else by position). ``kwargs`` go along as given.
    """
    extra = _second_parameter(trial_class, kwargs)
    if extra is None:
        return trial_class(context, **kwargs)
    if extra.kind is inspect.Parameter.KEYWORD_ONLY or extra.name == "hparams":
        return trial_class(context, **{extra.name: dict(hparams)}, **kwargs)
    return trial_class(context, dict(hparams), **kwargs)


def _second_parameter(
    trial_class: type[Any], kwargs: Mapping[str, Any]
) -> inspect.Parameter | None:
    """The ``__init__`` parameter after ``context`` that wants the hyperparameters: a
    required one, or an optional one named ``hparams``; None if there is none (or the
    caller passes it in ``kwargs``)."""
    try:
        parameters = list(inspect.signature(trial_class).parameters.values())
    except (TypeError, ValueError):  # no signature to read (a C extension): the plain call
        return None
    named = [p for p in parameters[1:] if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    for parameter in named:
        if parameter.name in kwargs:
            continue
        required = parameter.default is inspect.Parameter.empty
        if required or parameter.name == "hparams":
            return parameter
        break
    return None
