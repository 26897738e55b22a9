"""The master's one scheduler backend, made from master.yaml's ``resource_manager``."""

from __future__ import annotations

from hpcdet.dispatcher import Backend, get_backend
from hpcdet.dispatcher.transport import RestSettings, SshSettings, make_transport
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
    """The backend ``resource_manager.type`` names, with its template folder, run-as and
    transport (``resource_manager.transport``: local, one SSH connection, or slurmrestd)."""
    rm = settings.resource_manager
    transport = make_transport(rm.transport)
    runas = make_runas(settings.runas, transport.runner)
    if isinstance(rm.transport, SshSettings) and runas is not None:
        runas.service_user = rm.transport.login_user  # sudo runs as the SSH login user
    role, rest = "backend", {}
    if isinstance(rm.transport, RestSettings):
        # The scheduler's verbs through slurmrestd; job files still through ``transport``.
        role, rest = "rest_backend", {"rest": rm.transport}
    return get_backend(rm.type, role, template_dir=rm.template_dir, runas=runas,
                       gpu_request=gpu_request(settings), transport=transport, **rest)
