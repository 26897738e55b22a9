"""The Slurm backend through slurmrestd on the dev cluster's Slurm 25.11, against the CLI
backend: statuses equal the CLI reader's (squeue + sacct) for the same jobs, one request per
poll, a poll when nothing changed one cheap "no change" request; cancel, hold, release and
update change what squeue shows; the queue, the pools and node hosts read as the CLI's; in
run-as-owner mode each owner's token comes from the run-as helper, minted as the owner."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from test_it_multiuser import RUNUSER, SERVICE, users

from hpcdet.dispatcher.base import JobPhase, JobRef, UnsupportedError
from hpcdet.dispatcher.commands import CommandRunner, Completed, run_locally
from hpcdet.dispatcher.queue import JobUpdate, JobUpdateRefusedError
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.rest.backend import RestSlurmBackend
from hpcdet.dispatcher.slurm.rest.submit import submit_body
from hpcdet.dispatcher.slurm.rest.tokens import ScontrolTokens
from hpcdet.dispatcher.transport.settings import RestSettings, TokenSourceSettings
from hpcdet.errors import SchedulerError

__all__ = ["users"]  # the fixture the per-user test uses
pytestmark = [pytest.mark.slurm, pytest.mark.slurm2511]


@pytest.fixture
def rest(slurmrestd: str) -> Iterator[RestSlurmBackend]:
    backend = RestSlurmBackend(rest=RestSettings(slurmrestd, TokenSourceSettings(
        "scontrol", lifespan_seconds=600)))
    yield backend
    backend.close()


@pytest.fixture
def submitted() -> Iterator[Callable[..., str]]:
    """sbatch ARGS... --wrap CMD; every job cancelled after the test."""
    ids: list[str] = []

    def sbatch(*args: str, wrap: str = "true") -> str:
        out = subprocess.run(["sbatch", "--parsable", "-J", "hpcdet-rest-it", "-o", "/dev/null",
                              *args, "--wrap", wrap], capture_output=True, text=True, check=True)
        ids.append(out.stdout.strip().split(";")[0])
        return ids[-1]

    yield sbatch
    if ids:
        subprocess.run(["scancel", *ids], check=False)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def squeue_state(job_id: str) -> str:
    return subprocess.run(["squeue", "-h", "--states=all", "-j", job_id, "-o", "%T"],
                          capture_output=True, text=True).stdout.strip()


def forgotten_job() -> str | None:
    """A job accounting knows and the controller no longer holds (past MinJobAge)."""
    listed = subprocess.run(["sacct", "-a", "-X", "-n", "-P", "-o", "JobIDRaw,JobID",
                             "-S", "now-2days"], capture_output=True, text=True).stdout
    held = set(subprocess.run(["squeue", "-h", "--states=all", "-o", "%i"],
                              capture_output=True, text=True).stdout.split())
    for line in listed.splitlines():
        raw, _, job_id = line.partition("|")
        if raw == job_id and raw.isdigit() and raw not in held:
            return raw
    return None


def test_rest_statuses_equal_the_cli_statuses(rest: RestSlurmBackend,
                                              submitted: Callable[..., str]) -> None:
    held = [submitted("-H"), submitted("-H")]
    array = submitted("-H", "-a", "0-3%2")
    done = submitted()
    cancelled = submitted("-H")
    subprocess.run(["scancel", cancelled], check=True)
    wait_for(lambda: squeue_state(done) == "COMPLETED", 240, f"job {done} to complete")
    wait_for(lambda: squeue_state(cancelled) == "CANCELLED", 30, f"job {cancelled} cancelled")
    never = str(int(done) + 1_000_000)
    ids = [*held, *(f"{array}_{index}" for index in range(4)), done, cancelled, never]
    old = forgotten_job()
    ids += [old] if old else []
    refs = [JobRef(job_id, "/nonexistent") for job_id in ids]
    cli = SlurmBackend().poll(refs)
    assert rest.client.version == "v0.0.44"  # asked once, before the poll is counted
    before = rest.client.count
    found = rest.poll(refs)
    # One controller request, plus one accounting request for the ids it does not hold.
    assert rest.client.count - before == 2
    assert found == cli
    assert found[never].phase is JobPhase.MISSING
    assert found[done].phase is JobPhase.COMPLETED and found[done].source == "squeue"
    assert found[cancelled].phase is JobPhase.CANCELLED
    assert {found[f"{array}_{i}"].reason for i in range(4)} == {"JobHeldUser"}
    if old:
        assert found[old].source == "sacct"


def test_a_poll_when_nothing_changed_is_one_cheap_request(rest: RestSlurmBackend,
                                                         submitted: Callable[..., str]) -> None:
    job = submitted("-H")
    refs = [JobRef(job, "/nonexistent")]
    replies: list[dict[str, Any]] = []
    get = rest.client.get

    def recording_get(*args: Any, **kwargs: Any) -> dict[str, Any]:
        replies.append(get(*args, **kwargs))
        return replies[-1]

    rest.client.get = recording_get  # type: ignore[method-assign]
    first = rest.poll(refs)
    assert len(replies) == 1 and replies[0]["jobs"]

    def unchanged_poll() -> bool:
        # Other tests change the cluster meanwhile: a later poll finds a quiet moment.
        before = len(replies)
        assert rest.poll(refs) == first
        assert len(replies) == before + 1  # every poll: one request
        return replies[-1]["jobs"] == []

    # Beside the other cluster tests the controller's jobs change every few seconds; a
    # quiet second comes within a minute or two.
    wait_for(unchanged_poll, 240, "a poll with nothing changed")
    assert any("No job changes" in str(w) for w in replies[-1]["warnings"])


def squeue_fields(job_id: str, fields: str) -> str:
    return subprocess.run(["squeue", "-h", "--states=all", "-j", job_id, "-o", fields],
                          capture_output=True, text=True).stdout.strip()


def test_update_hold_release_cancel(rest: RestSlurmBackend,
                                    submitted: Callable[..., str]) -> None:
    # Held and not eligible for an hour: released, it still cannot start under the test.
    first, second, bystander = (submitted("-H", "--begin=now+3600") for _ in range(3))
    rest.update_job(first, JobUpdate(partition="debug", nice=5))
    assert squeue_fields(first, "%P %y") == "debug 5"
    with pytest.raises(JobUpdateRefusedError, match="Invalid qos specification"):
        rest.update_job(first, JobUpdate(qos="no-such-qos"))
    rest.release(first)
    # Released: no hold reason (None until the scheduler looks, then BeginTime), priority > 0.
    state, priority, reason = squeue_fields(first, "%T %Q %r").split()
    assert (state, reason in ("None", "BeginTime"), int(priority) > 0) == ("PENDING", True, True)
    rest.hold(first)
    assert squeue_fields(first, "%r") == "JobHeldAdmin"  # held by root, as scontrol hold
    with pytest.raises(UnsupportedError, match="not available through slurmrestd"):
        rest.requeue(first)
    before = rest.client.count
    rest.cancel([first, second, str(int(second) + 1_000_000)])  # an unknown id is no error
    assert rest.client.count - before == 1
    wait_for(lambda: squeue_fields(first, "%T") == squeue_fields(second, "%T") == "CANCELLED",
             30, "both jobs cancelled")
    assert squeue_fields(bystander, "%T") == "PENDING"  # only the jobs named


def test_queue_pools_and_node_hosts_read_as_the_cli(rest: RestSlurmBackend,
                                                    submitted: Callable[..., str]) -> None:
    mine = {submitted("-H"), submitted("-H", "-a", "0-3%2"), submitted("-H", "-p", "debug")}
    cli = SlurmBackend()
    by_id = {entry.job_id.partition("_")[0]: entry for entry in cli.read_queue()
             if entry.job_id.partition("_")[0] in mine}
    found = {entry.job_id.partition("_")[0]: entry for entry in rest.read_queue()
             if entry.job_id.partition("_")[0] in mine}
    assert found == by_id and len(found) == 3
    pools, cli_pools = rest.read_pools(), cli.read_pools()
    assert [p.name for p in pools] == [p.name for p in cli_pools]
    for pool, cli_pool in zip(pools, cli_pools, strict=True):
        # slurmrestd does not say which partition is the default (docs/admin/slurmrestd.md).
        assert not pool.is_default
        assert [(n.name, n.cpus, n.gpus, n.gpu_types) for n in pool.nodes] == [
            (n.name, n.cpus, n.gpus, n.gpu_types) for n in cli_pool.nodes]
    assert next(p for p in pools if p.name == "debug").jobs_pending >= 1
    nodes = [node.name for node in cli_pools[0].nodes]
    assert rest.node_hosts(nodes) == cli.node_hosts(nodes)


OWNED_SCRIPT = """#!/bin/bash
#SBATCH --job-name=hpcdet-rest-owner
#SBATCH --chdir=/tmp
#SBATCH --output=/dev/null
#SBATCH --hold
true
"""


def _as_service_account() -> CommandRunner:
    """A runner that starts each command as the service account (``runuser -u hpcdet``), as
    a run-as-owner master runs its ``sudo -n -u OWNER hpcdet-runas ...``."""
    def executor(argv: tuple[str, ...], timeout: float, stdin: bytes | None) -> Completed:
        return run_locally((RUNUSER, "-u", SERVICE, "--", *argv), timeout, stdin)

    return CommandRunner(executor=executor)


@pytest.mark.multiuser
@pytest.mark.usefixtures("users")
def test_per_user_tokens_act_as_the_owner_and_no_one_else(slurmrestd: str) -> None:
    """Run-as-owner through slurmrestd: each owner's token is minted by the run-as helper's
    ``token`` verb as the owner (sudo, as the service account would). A job submitted with
    user_a's token is user_a's; the backend holds, updates and cancels it as user_a;
    user_b's token cannot cancel it."""
    runas = RunAs(runner=_as_service_account())  # owner mode on
    backend = RestSlurmBackend(rest=RestSettings(slurmrestd, TokenSourceSettings(
        "scontrol", lifespan_seconds=600)), runas=runas)
    job = ""
    try:
        reply = backend.client.post(backend.client.slurm("job/submit"),
                                    submit_body(OWNED_SCRIPT, "owned.sh"), as_user="user_a")
        job = str(reply["job_id"])
        assert squeue_fields(job, "%u %r") == "user_a JobHeldUser"
        backend.update_job(job, JobUpdate(nice=7), owner="user_a")
        backend.release(job, owner="user_a")
        backend.hold(job, owner="user_a")
        # Held by its owner (root's hold would read JobHeldAdmin); release reset the nice.
        assert squeue_fields(job, "%u %r") == "user_a JobHeldUser"
        with pytest.raises(SchedulerError, match="Access/permission denied"):
            backend.cancel([job], owner="user_b")
        assert squeue_fields(job, "%T") == "PENDING"
        backend.cancel([job], owner="user_a")
        wait_for(lambda: squeue_fields(job, "%T") == "CANCELLED", 30, "user_a's cancel")
        # The master's own token (None: the version was asked with it) and one per user,
        # each minted once, through the helper.
        tokens = backend.client.tokens
        assert isinstance(tokens, ScontrolTokens)
        assert set(tokens._tokens) == {None, "user_a", "user_b"} and tokens.renewals == 3
        assert list(runas.runner.calls) == [runas.argv(user, "token", "600")
                                            for user in ("user_a", "user_b")]
    finally:
        if job:
            subprocess.run(["scancel", job], check=False)
        backend.close()


def test_find_reads_as_the_cli(rest: RestSlurmBackend, submitted: Callable[..., str]) -> None:
    """By name, the newest job: in the controller, else in accounting (an array task counts
    as its array, as in sacct's JobID), else nothing."""
    submitted("-H", "-a", "0-1")
    listed = subprocess.run(["sacct", "-a", "-X", "-n", "-P", "-o", "JobName", "-S",
                             "now-2days"], capture_output=True, text=True).stdout.split()
    names = [*list(dict.fromkeys(listed))[:20], "hpcdet-rest-it", "no-such-job-name"]
    found = rest.find(names)
    assert found == SlurmBackend().find(names)
    assert "hpcdet-rest-it" in found and "no-such-job-name" not in found
