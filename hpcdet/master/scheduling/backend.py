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
    # resource_manager.slurm_api: the default (cli) is every backend's own; another is
    # passed only where asked for (settings refuse it for a scheduler without it).
    extra: dict[str, object] = {} if rm.slurm_api == "cli" else {"slurm_api": rm.slurm_api}
    role = "backend"
    if isinstance(rm.transport, RestSettings):
        # The scheduler's verbs through slurmrestd; job files still through ``transport``.
        role, extra = "rest_backend", {"rest": rm.transport}
    return get_backend(rm.type, role, template_dir=rm.template_dir, runas=runas,
                       gpu_request=gpu_request(settings), transport=transport, **extra)


def startup_problem(settings: MasterSettings) -> str | None:
    """Why the backend cannot work on this host as configured (the master refuses to start
    with this line); None when it can. Only ``slurm_api: pyslurm`` needs a look (is pyslurm
    installed, built for this Slurm?): the default asks nothing but the scheduler's
    commands, and builds no backend here."""
    if settings.resource_manager.slurm_api == "cli":
        return None
    return make_backend(settings).startup_problem()
