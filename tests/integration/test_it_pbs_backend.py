"""The PBS backend against the real dev OpenPBS server (``scripts/dev-pbs up``).

Jobs run as ``user_a`` (root may not submit): a :class:`UserRunner`, the real command
runner with every command started through ``runuser -u user_a``, stands in for the run-as
helper. All "hosts" are this machine, so the two execution hosts are told apart by
``PBS_NODENUM`` and the mom's port, not by the host name.
"""

from __future__ import annotations

import os
import pwd
import shutil
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from hpcdet.dispatcher.base import JobPhase, JobRef, JobSpec, JobStatus
from hpcdet.dispatcher.commands import CommandRunner
from hpcdet.dispatcher.pbs.backend import PbsBackend, parse_qsub_output
from hpcdet.dispatcher.queue import JobUpdate

pytestmark = pytest.mark.pbs

PBS_BIN = "/opt/pbs/bin"
USER = "user_a"
RANK_PROGRAM = ("import os, socket; e = os.environ; print('RANK', e['OMPI_COMM_WORLD_RANK'], "
                "e['OMPI_COMM_WORLD_SIZE'], e.get('PBS_NODENUM'), e.get('PBS_MOMPORT'), "
                "socket.gethostname(), e.get('DET_PROBE'), e.get('PBS_JOBID'), flush=True)")


def _missing(reason: str) -> None:
    """Skip locally, fail in CI (the rule of tests/conftest.py's ``missing``)."""
    if os.environ.get("CI") == "true" or os.environ.get("HPCDET_REQUIRE_ALL") == "1":
        pytest.fail(f"required test component missing: {reason}", pytrace=False)
    pytest.skip(reason)


class UserRunner(CommandRunner):
    """The real runner, starting each PBS command as ``USER`` with ``runuser``."""

    def __call__(self, argv: Sequence[str], *, timeout: float = 60,
                 stdin: bytes | None = None) -> str:
        home = pwd.getpwnam(USER).pw_dir
        env = [f"HOME={home}", f"PATH={PBS_BIN}:/usr/bin:/bin",
               f"PBS_CONF_FILE={os.environ.get('PBS_CONF_FILE', '/etc/pbs.conf')}"]
        return super().__call__(["runuser", "-u", USER, "--", "env", "-i", *env, *argv],
                                timeout=timeout, stdin=stdin)


@pytest.fixture(scope="module")
def runner() -> UserRunner:
    if shutil.which("qstat", path=f"{PBS_BIN}:/usr/bin") != f"{PBS_BIN}/qstat":
        _missing("OpenPBS is not installed (run scripts/dev-pbs up)")
    if os.geteuid() != 0:
        _missing("submitting as user_a needs runuser: run as root")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        _missing(f"user {USER} is missing: run scripts/dev-cluster users")
    probe = UserRunner()
    try:
        probe([f"{PBS_BIN}/qstat", "-B"])
    except Exception as exc:  # noqa: BLE001 - any failure means no usable server
        _missing(f"no OpenPBS server answers: {exc}")
    if shutil.which("mpiexec") is None:
        _missing("OpenMPI's mpiexec is not installed")
    return probe


@pytest.fixture
def job_dir() -> Iterator[Path]:
    """A fresh job directory (with ``context/``) in ``USER``'s home, owned by ``USER``."""
    entry = pwd.getpwnam(USER)
    path = Path(entry.pw_dir) / "hpcdet-it" / f"pbs-{uuid.uuid4().hex[:8]}"
    (path / "context").mkdir(parents=True)
    for item in (path.parent, path, path / "context"):
        os.chown(item, entry.pw_uid, entry.pw_gid)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def submit(backend: PbsBackend, spec: JobSpec) -> str:
    """Render, write the script as ``USER``'s file, and qsub it as ``USER``."""
    submission = backend.render(spec)
    path = Path(submission.script_path)
    path.write_text(submission.script, encoding="utf-8")
    entry = pwd.getpwnam(USER)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    path.chmod(0o700)
    return parse_qsub_output(submission.argv, backend.runner(submission.argv))


def wait_for(backend: PbsBackend, job: JobRef, phases: set[JobPhase],
             timeout: float = 120) -> JobStatus:
    deadline = time.monotonic() + timeout
    status = backend.poll([job])[job.job_id]
    while status.phase not in phases and time.monotonic() < deadline:
        time.sleep(1)
        status = backend.poll([job])[job.job_id]
    assert status.phase in phases, status
    return status


def spec(job_dir: Path, name: str, **changes: object) -> JobSpec:
    values: dict[str, object] = {
        "name": name, "job_dir": str(job_dir), "nodes": 2, "ranks_per_node": 2,
        "command": ("python3", "-c", RANK_PROGRAM), "time_limit": "00:02:00",
        "comment": f"hpcdet:it:{name}", "environment": {"DET_PROBE": "probe value"},
    }
    values.update(changes)
    return JobSpec(**values)  # type: ignore[arg-type]


def test_two_hosts_two_ranks_each_complete(runner: UserRunner, job_dir: Path) -> None:
    backend = PbsBackend(runner=runner, bin_dir=PBS_BIN)
    job_id = submit(backend, spec(job_dir, f"it-mpi-{job_dir.name}"))
    status = wait_for(backend, JobRef(job_id, str(job_dir)), {JobPhase.COMPLETED,
                                                              JobPhase.FAILED})
    output = (job_dir / f"{job_id}.OU").read_text(encoding="utf-8")
    errors = (job_dir / f"{job_id}.ER").read_text(encoding="utf-8")
    assert status.phase is JobPhase.COMPLETED, (status, output, errors)
    assert status.exit_code == 0
    assert (job_dir / f"exit-{job_id}").read_text(encoding="utf-8").strip() == "0"
    ranks = [line.split() for line in output.splitlines() if line.startswith("RANK ")]
    assert sorted(int(words[1]) for words in ranks) == [0, 1, 2, 3], output
    assert {words[2] for words in ranks} == {"4"}
    # Two ranks on each execution host (each mom has its own node number and port).
    hosts = [(words[3], words[4]) for words in ranks]
    assert sorted(hosts.count(host) for host in set(hosts)) == [2, 2], output
    assert all(" ".join(words[6:8]) == "probe value" for words in ranks), output
    assert status.nodes == "pbsn1,pbsn2"


def test_cancel_of_a_queued_job_polls_cancelled(runner: UserRunner, job_dir: Path) -> None:
    backend = PbsBackend(runner=runner, bin_dir=PBS_BIN)
    # Asks for more CPUs than the two hosts have together: it stays queued.
    job_id = submit(backend, spec(job_dir, f"it-q-{job_dir.name}", nodes=1,
                                  ranks_per_node=1, cpus_per_rank=64))
    job = JobRef(job_id, str(job_dir))
    assert wait_for(backend, job, {JobPhase.PENDING}).phase is JobPhase.PENDING
    backend.cancel([job_id])
    backend.cancel([job_id])  # already finished: not an error
    status = wait_for(backend, job, {JobPhase.CANCELLED}, timeout=30)
    assert status.native_state == "F"


def test_poll_of_three_jobs_is_one_qstat(runner: UserRunner, job_dir: Path) -> None:
    backend = PbsBackend(runner=runner, bin_dir=PBS_BIN)
    ids = [submit(backend, spec(job_dir, f"it-h{i}-{job_dir.name}", nodes=1,
                                ranks_per_node=1, cpus_per_rank=64))
           for i in range(2)]
    jobs = [JobRef(job_id, str(job_dir)) for job_id in ids]
    jobs.append(JobRef("999999.vm", str(job_dir)))  # unknown to qstat
    before = runner.count
    statuses = backend.poll(jobs)
    assert runner.count - before == 1
    assert [statuses[j.job_id].phase for j in jobs] == [JobPhase.PENDING, JobPhase.PENDING,
                                                        JobPhase.MISSING]
    backend.cancel(ids)


# On SIGTERM each rank leaves a file: its stdout may already be gone (mpiexec, which
# forwards it, gets the same SIGTERM).
# Each rank notes the SIGTERM and exits 0, as the harness does after checkpointing on it: a
# rank exiting non-zero makes Open MPI's mpiexec abort the job and SIGKILL the ranks still
# handling theirs (CI: rank 2 left no term-2 when ranks 0, 1 and 3 had exited 3).
TERM_PROGRAM = ("import os, signal, sys, time; r = os.environ['OMPI_COMM_WORLD_RANK']; "
                "d = os.environ['DET_JOB_DIR']; signal.signal(signal.SIGTERM, lambda *_: "
                "(open(os.path.join(d, 'term-' + r), 'w').close(), sys.exit(0))); "
                "print('UP', r, flush=True); time.sleep(120)")


def _text_or_empty(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def test_qdel_of_a_running_job_reaches_every_rank(runner: UserRunner, job_dir: Path) -> None:
    backend = PbsBackend(runner=runner, bin_dir=PBS_BIN)
    job_id = submit(backend, spec(job_dir, f"it-term-{job_dir.name}",
                                  command=("python3", "-c", TERM_PROGRAM),
                                  environment={"DET_JOB_DIR": str(job_dir)}))
    job = JobRef(job_id, str(job_dir))
    wait_for(backend, job, {JobPhase.RUNNING})
    output = job_dir / f"{job_id}.OU"
    deadline = time.monotonic() + 60
    # The MoM creates the output file a moment after the server reports R.
    while _text_or_empty(output).count("UP ") < 4 and time.monotonic() < deadline:
        time.sleep(0.5)
    backend.cancel([job_id])
    status = wait_for(backend, job, {JobPhase.CANCELLED}, timeout=60)
    # The server may report the job finished while a host's ranks are still in their handler
    # (PBS ends the job when the first host's session has): wait for their notes a while.
    def noted() -> list[str]:
        return sorted(path.name for path in job_dir.glob("term-*"))

    deadline = time.monotonic() + 30
    while len(noted()) < 4 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert noted() == ["term-0", "term-1", "term-2", "term-3"], _text_or_empty(output)
    # The script's trap recorded 128+SIGTERM before PBS's SIGKILL (kill_delay 5 s).
    assert (job_dir / f"exit-{job_id}").read_text(encoding="utf-8").strip() == "143"
    assert status.native_state == "F"


def test_queue_pools_and_update_of_a_queued_job(runner: UserRunner, job_dir: Path) -> None:
    backend = PbsBackend(runner=runner, bin_dir=PBS_BIN)
    name = f"it-upd-{job_dir.name}"
    job_id = submit(backend, spec(job_dir, name, nodes=1, ranks_per_node=1, cpus_per_rank=64))
    try:
        backend.update_job(job_id, JobUpdate(partition="debug", nice=-10))
        entry = next(e for e in backend.read_queue() if e.job_id == job_id)
        assert (entry.partition, entry.priority, entry.nice) == ("debug", 10, -10)
        assert entry.comment == f"hpcdet:it:{name}" and entry.pending and entry.cpus == 64
        pools = {pool.name: pool for pool in backend.read_pools()}
        assert {"workq", "debug", "express", "short"} <= set(pools)
        assert pools["workq"].is_default
        assert {node.name for node in pools["debug"].nodes} == {"pbsn1", "pbsn2"}
        assert pools["debug"].jobs_pending >= 1
        assert backend.find([name]) == {name: job_id}
    finally:
        backend.cancel([job_id])
