"""The master's one scheduler backend, made from master.yaml's ``resource_manager``."""

from __future__ import annotations

from hpcdet.dispatcher import Backend, get_backend
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.runas import make_runas


def gpu_request(settings: MasterSettings) -> str:
    """How the cluster takes GPU requests: ``tres`` (Slurm ``--gpus``), ``gres`` (``--gres``
    only) or ``none`` (Determined's ``tres_supported``/``gres_supported``; PBS always asks
    for ``ngpus``)."""
    rm = settings.resource_manager
    if rm.tres_supported:
        return "tres"
    return "gres" if rm.gres_supported else "none"


def make_backend(settings: MasterSettings) -> Backend:
    """The backend ``resource_manager.type`` names, with its template folder and run-as."""
    rm = settings.resource_manager
    return get_backend(rm.type, template_dir=rm.template_dir, runas=make_runas(settings.runas),
                       gpu_request=gpu_request(settings))
