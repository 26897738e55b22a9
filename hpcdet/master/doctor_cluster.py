"""``det-master doctor``'s checks of the scheduler, through the dispatcher's neutral interface
and the configured transport: its commands answer, the service account has the rights the
master uses, and a compute node can import the harness with the jobs' Python.
"""

from __future__ import annotations

import secrets
import shutil
import sys
import time
from pathlib import Path

from hpcdet.dispatcher.base import Backend, JobPhase, JobRef, JobSpec
from hpcdet.dispatcher.jobdir import CONTEXT_DIR
from hpcdet.errors import HpcdetError
from hpcdet.master.doctor_checks import FAIL, OK, WARN, Doctor, Result

HARNESS_PROBE = "import hpcdet.harness"
POLL_SECONDS = 2.0


def check_scheduler(doctor: Doctor, backend: Backend) -> Result:
    """The scheduler's version command and its pools answer through the transport."""
    from hpcdet.dispatcher.transport import make_transport

    rm = doctor.settings.resource_manager
    plugin = rm.scheduler
    fix = (f"put {plugin.display_name}'s commands on the master's PATH (or fix "
           "resource_manager.transport); check the controller is up")
    try:
        version = make_transport(rm.transport).runner(plugin.version_command, timeout=30)
        pools = backend.read_pools()
    except HpcdetError as exc:
        return Result("scheduler", FAIL, f"{plugin.display_name}: {str(exc).splitlines()[0]}",
                      fix)
    names = ", ".join(sorted(pool.name for pool in pools)) or "none"
    return Result("scheduler", OK, f"{version.strip()}; pools: {names}")


def check_operator(doctor: Doctor, backend: Backend) -> Result:
    """The service account has the scheduler rights the master uses (a warning: the master
    runs without them, but cannot raise a job's priority or manage fair-share accounts)."""
    from hpcdet.dispatcher.transport import make_transport

    plugin = doctor.settings.resource_manager.scheduler
    module = plugin.module("operator")
    if module is None:
        return Result("operator", WARN, f"cannot check {plugin.display_name} rights")
    runner = make_transport(doctor.settings.resource_manager.transport).runner
    problem = module.operator_problem(runner, doctor.service_user)
    if problem:
        return Result("operator", WARN, problem, module.operator_fix(doctor.service_user))
    return Result("operator", OK, f"{doctor.service_user} is a {plugin.display_name} operator")


def check_harness(doctor: Doctor, backend: Backend) -> Result:
    """A one-node job runs the jobs' Python with ``-c "import hpcdet.harness"``; bounded by
    ``harness_timeout``, cancelled if still running then, its directory removed."""
    # In the job root itself (1733 in owner mode: anyone may add an entry), not in a
    # user's directory there: doctor may run as root and must leave nothing of root's.
    job_dir = (Path(doctor.settings.resource_manager.job_storage_root)
               / f".hpcdet-doctor-{secrets.token_hex(4)}")
    fix = (f"install hpcdet on the compute nodes at {sys.executable} (a shared venv, "
           "docs/admin/packages.md), with the job root on a filesystem they mount")
    try:
        job_dir.mkdir(mode=0o700)
        (job_dir / CONTEXT_DIR).mkdir(mode=0o700)  # where the job script starts
        return _run_probe(doctor, backend, job_dir, fix)
    except (HpcdetError, OSError) as exc:
        return Result("harness", FAIL, f"the probe job failed: {str(exc).splitlines()[0]}",
                      fix)
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)


def _run_probe(doctor: Doctor, backend: Backend, job_dir: Path, fix: str) -> Result:
    spec = JobSpec(name="hpcdet-doctor", job_dir=str(job_dir), nodes=1, ranks_per_node=1,
                   command=(sys.executable, "-c", HARNESS_PROBE), time_limit="00:05:00",
                   signal=None, partition=doctor.settings.resource_manager
                   .default_compute_resource_pool)
    job_id = backend.submit(backend.render(spec))
    deadline = time.monotonic() + doctor.harness_timeout
    while time.monotonic() < deadline:
        status = backend.poll([JobRef(job_id, str(job_dir))]).get(job_id)
        if status is not None and status.phase.is_terminal:
            if status.phase is JobPhase.COMPLETED:
                return Result("harness", OK, f"job {job_id} imported hpcdet.harness "
                              f"on {status.nodes or 'a compute node'}")
            log = _job_log(doctor, job_dir, job_id)
            return Result("harness", FAIL, f"job {job_id} ended {status.phase.value}"
                          f"{': ' + log if log else ''}", fix)
        time.sleep(POLL_SECONDS)  # the scheduler's own pace; the deadline bounds it
    backend.cancel([job_id])
    return Result("harness", FAIL, f"job {job_id} did not finish in "
                  f"{doctor.harness_timeout:g} s (cancelled)",
                  "check the pool has free nodes (or raise --harness-timeout)")


def _job_log(doctor: Doctor, job_dir: Path, job_id: str) -> str:
    """The last line of the probe job's error output, if it left one."""
    plugin = doctor.settings.resource_manager.scheduler
    for stream in ("err", "out"):
        path = job_dir / plugin.log_name(job_id, stream)
        try:
            lines = path.read_text(errors="replace").strip().splitlines()
        except OSError:
            continue
        if lines:
            return lines[-1][:300]
    return ""
