"""The PBS backend's commands and their parsing, against REAL recorded OpenPBS output.

The runner is the fake :class:`RecordedSlurmRunner` of conftest (it answers by argv[0]);
the real server is exercised by tests/integration/test_it_pbs_backend.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher.base import JobPhase, JobRef, UnsupportedError, get_backend
from hpcdet.dispatcher.pbs.backend import PbsBackend, parse_qsub_output
from hpcdet.dispatcher.queue import JobUpdate, JobUpdateRefusedError
from hpcdet.errors import SchedulerError, ValidationError

DATA = Path(__file__).resolve().parents[2] / "data" / "pbs"


def data(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def refusal(argv: tuple[str, ...], name: str) -> SchedulerError:
    """A recorded failure: stderr lines, then ``exit N``."""
    lines = data(name).splitlines()
    code = int(lines[-1].split()[1])
    return SchedulerError(argv, code, "", "\n".join(lines[:-1]) + "\n")


def test_get_backend_builds_the_pbs_backend() -> None:
    assert isinstance(get_backend("pbs"), PbsBackend)


def test_qsub_output_is_the_job_id() -> None:
    assert parse_qsub_output(["qsub"], data("qsub-directives-stdout.txt")) == "8.vm"
    with pytest.raises(SchedulerError, match="could not make sense"):
        parse_qsub_output(["qsub"], "qsub: Unknown queue\n")


def test_poll_is_one_qstat_and_unknown_ids_are_missing(recorded_slurm: Any, tmp_path: Path) -> None:
    def qstat(argv: Sequence[str]) -> str:
        raise SchedulerError(argv, 153, data("poll-dsv.txt"),
                             data("poll-dsv-stderr.txt").rsplit("exit", 1)[0])
    runner = recorded_slurm({"qstat": qstat})
    backend = PbsBackend(runner=runner)
    ids = ["6.vm", "7.vm", "9.vm", "10.vm", "11.vm", "999.vm"]
    statuses = backend.poll([JobRef(job_id, str(tmp_path)) for job_id in ids])
    assert len(runner.calls) == 1
    assert runner.calls[0][:8] == ("qstat", "-x", "-t", "-f", "-F", "dsv", "-D", "\x1f")
    assert runner.calls[0][8:] == tuple(ids)
    assert [statuses[i].phase for i in ids] == [
        JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.TIMEOUT, JobPhase.CANCELLED,
        JobPhase.COMPLETED, JobPhase.MISSING]
    assert statuses["7.vm"].exit_code == 3
    assert statuses["11.vm"].restarts == 1
    assert statuses["999.vm"].source == "none"


def test_poll_of_many_jobs_lists_every_job_once(recorded_slurm: Any, tmp_path: Path) -> None:
    runner = recorded_slurm({"qstat": data("poll-dsv.txt")})
    backend = PbsBackend(runner=runner, poll_by_id_max=2)
    ids = ["6.vm", "7.vm", "9.vm", "12345.vm"]
    statuses = backend.poll([JobRef(job_id, str(tmp_path)) for job_id in ids])
    assert runner.calls == [("qstat", "-x", "-t", "-f", "-F", "dsv", "-D", "\x1f")]
    assert [statuses[i].phase for i in ids] == [JobPhase.COMPLETED, JobPhase.FAILED,
                                                JobPhase.TIMEOUT, JobPhase.MISSING]


def test_poll_reads_the_exit_file_of_a_forgotten_job(recorded_slurm: Any, tmp_path: Path) -> None:
    (tmp_path / "exit-5.vm").write_text("143\n", encoding="utf-8")
    runner = recorded_slurm({"qstat": SchedulerError(("qstat",), 153, "",
                                                     "qstat: Unknown Job Id 5.vm\n")})
    status = PbsBackend(runner=runner).poll([JobRef("5.vm", str(tmp_path))])["5.vm"]
    assert (status.phase, status.exit_code, status.source) == (JobPhase.FAILED, 143,
                                                               "exit-file")


def test_poll_raises_when_the_server_is_down(recorded_slurm: Any, tmp_path: Path) -> None:
    down = SchedulerError(("qstat",), 15010, "", "Connection refused\nqstat: cannot connect "
                          "to server vm (errno=15010)\n")
    backend = PbsBackend(runner=recorded_slurm({"qstat": down}))
    with pytest.raises(SchedulerError):
        backend.poll([JobRef("5.vm", str(tmp_path))])


def test_poll_refuses_a_hostile_id(recorded_slurm: Any, tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        PbsBackend(runner=recorded_slurm()).poll([JobRef("5.vm;rm -rf /", str(tmp_path))])


def test_cancel_is_one_qdel_and_finished_jobs_are_fine(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"qdel": refusal(("qdel",), "qdel-finished-stderr.txt")})
    PbsBackend(runner=runner).cancel(["6.vm", "7.vm", "6.vm"])
    assert runner.calls == [("qdel", "6.vm", "7.vm")]


def test_cancel_raises_other_refusals(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"qdel": SchedulerError(("qdel",), 159, "",
                                                    "qdel: Unauthorized Request  6.vm\n")})
    with pytest.raises(SchedulerError):
        PbsBackend(runner=runner).cancel(["6.vm"])


def test_find_searches_job_names_in_one_qstat(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"qstat": data("finished-directives.json")})
    found = PbsBackend(runner=runner).find(["from-directives", "nothing"])
    assert found == {"from-directives": "8.vm"}
    assert runner.calls == [("qstat", "-x", "-f", "-F", "json")]


def test_read_queue_orders_running_then_priority(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"qstat": data("queue-mixed.json")})
    entries = PbsBackend(runner=runner).read_queue()
    assert [(e.job_id, e.state, e.pending) for e in entries] == [
        ("61.vm", "R", False), ("64.vm", "H", True), ("62.vm", "Q", True)]
    running, held, low = entries
    assert running.comment == "hpcdet:dev:trial-1:run-1"
    assert (running.cpus, running.nodes, running.tasks, running.user) == (4, 2, 4, "user_a")
    assert (low.priority, low.nice) == (-5, 5)
    assert low.reason == "Not Running: Not enough free nodes available"
    assert held.partition == "debug" and held.comment is None
    assert running.submit_time is not None and running.submit_time.startswith("2026-11-25T")


def test_read_queue_of_an_empty_server(recorded_slurm: Any) -> None:
    assert PbsBackend(runner=recorded_slurm({"qstat": data("queue-empty.json")})).read_queue() == []


def test_read_pools_gives_every_queue_all_nodes(recorded_slurm: Any) -> None:
    def qstat(argv: Sequence[str]) -> str:
        return data("server.json") if "-B" in argv else data("queues-busy.json")
    runner = recorded_slurm({"qstat": qstat, "pbsnodes": data("nodes-busy.json")})
    pools = {pool.name: pool for pool in PbsBackend(runner=runner).read_pools()}
    assert len(runner.calls) == 3
    assert set(pools) == {"workq", "debug", "express", "short"}
    assert pools["workq"].is_default and not pools["debug"].is_default
    assert (pools["workq"].jobs_pending, pools["debug"].jobs_pending) == (1, 1)
    nodes = pools["short"].nodes
    assert [(n.name, n.state, n.cpus, n.cpus_allocated, n.up) for n in nodes] == [
        ("pbsn1", "allocated", 2, 2, True), ("pbsn2", "allocated", 2, 2, True)]


def test_idle_nodes_read_idle(recorded_slurm: Any) -> None:
    def qstat(argv: Sequence[str]) -> str:
        return data("server.json") if "-B" in argv else data("queues.json")
    runner = recorded_slurm({"qstat": qstat, "pbsnodes": data("nodes.json")})
    pool = PbsBackend(runner=runner).read_pools()[0]
    assert {n.state for n in pool.nodes} == {"idle"}


def test_update_job_qalter_p_then_qmove(recorded_slurm: Any) -> None:
    runner = recorded_slurm()
    PbsBackend(runner=runner).update_job("3.vm", JobUpdate(partition="debug", nice=10))
    assert runner.calls == [("qalter", "-p", "-10", "3.vm"), ("qmove", "debug", "3.vm")]


def test_update_job_refusal_carries_pbs_reason(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"qalter": refusal(("qalter",), "qalter-finished-stderr.txt")})
    with pytest.raises(JobUpdateRefusedError, match="Job has finished"):
        PbsBackend(runner=runner).update_job("6.vm", JobUpdate(nice=1))


def test_update_job_refuses_qos_and_bad_queue(recorded_slurm: Any) -> None:
    backend = PbsBackend(runner=recorded_slurm())
    with pytest.raises(UnsupportedError, match="qos"):
        backend.update_job("3.vm", JobUpdate(qos="high"))
    with pytest.raises(ValidationError):
        backend.update_job("3.vm", JobUpdate(partition="debug -x"))


def test_nice_to_pass_and_reason_words(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"qstat": data("queue-mixed.json")})
    backend = PbsBackend(runner=runner)
    _, held, low = backend.read_queue()
    assert backend.nice_to_pass(low, held, ahead=True) == -1  # -p 1 beats Priority 0
    assert backend.nice_to_pass(low, held, ahead=False) == 1
    assert backend.reason_words(low.reason) == "waiting for free nodes"
    words = backend.reason_words("Not Running: Insufficient amount of resource: ncpus (R: 64 A: 4)")
    assert words == "waiting for free resources (ncpus (R: 64 A: 4))"
    assert backend.reason_words("something new") == "something new"
