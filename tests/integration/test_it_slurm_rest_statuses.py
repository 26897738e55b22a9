"""Polling through slurmrestd on the dev cluster's Slurm 25.11: the REST reader's statuses
equal the CLI reader's (squeue + sacct) for the same jobs, one request per poll, and a poll
when nothing changed is one cheap "no change" request."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hpcdet.dispatcher.base import JobPhase, JobRef
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.rest.backend import RestSlurmBackend
from hpcdet.dispatcher.transport.settings import RestSettings, TokenSourceSettings

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
        out = subprocess.run(["sbatch", "--parsable", "-J", "hpcdet-rest-it", *args,
                              "--wrap", wrap], capture_output=True, text=True, check=True)
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
