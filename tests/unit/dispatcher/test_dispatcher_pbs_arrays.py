"""PBS job arrays (hpcdet.dispatcher.pbs.arrays): limits, rendering, the index mapping run
for real by bash, subjob ids, and polling, finding and cancelling subjobs.

Recorded on the dev server (OpenPBS 23.06.06; tests/data/pbs/README.md): ``server.json``
(``max_array_size`` 10000), ``array-poll-dsv.txt`` and ``array-queue.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher import ArrayLimits, ArraySpec, JobPhase, JobRef, JobSpec
from hpcdet.dispatcher.arrays import write_index
from hpcdet.dispatcher.pbs import arrays
from hpcdet.dispatcher.pbs.backend import PbsBackend
from hpcdet.dispatcher.queue import JobUpdate, JobUpdateRefusedError
from hpcdet.errors import SchedulerError, ValidationError

DATA = Path(__file__).resolve().parents[2] / "data" / "pbs"


def data(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def _spec(job_dir: str = "/shared/exp-1/trial-1") -> JobSpec:
    return JobSpec(name="det-1-1-1", job_dir=job_dir, nodes=1, ranks_per_node=2,
                   command=("python3", "-m", "hpcdet.harness"), partition="workq",
                   time_limit="10:00", comment="hpcdet:dev:experiment-1:array", nice=5,
                   requeue=True)


def _array(root: Path, count: int, throttle: int | None = None) -> ArraySpec:
    scripts = tuple(str(root / f"trial-{n}" / "job-1.sh") for n in range(count))
    return ArraySpec("det-array-1-1", str(root / "arrays" / "det-array-1-1"), scripts, throttle)


def test_limits_come_from_one_qstat_of_the_server_read_once(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"qstat": data("server.json")})
    backend = PbsBackend(runner=runner)
    assert backend.array_limits() == ArrayLimits(10000, arrays.NO_JOB_COUNT_LIMIT)
    assert backend.array_limits().max_array_size == 10000
    assert runner.calls == [("qstat", "-B", "-f", "-F", "json")]


def test_an_overall_max_queued_is_the_job_count_limit() -> None:
    server = {"vm": {"max_array_size": 500, "max_queued": "[o:PBS_ALL=2000] [u:PBS_GENERIC=10]"}}
    assert arrays.parse_array_limits(server) == ArrayLimits(500, 2000)
    assert arrays.parse_array_limits({"vm": {}}) == ArrayLimits(10000, arrays.NO_JOB_COUNT_LIMIT)


def test_the_array_script_has_the_trials_lines_and_its_own(tmp_path: Path) -> None:
    backend = PbsBackend()
    array = _array(tmp_path, 4, throttle=2)
    submission = backend.render_array(_spec(), array)
    lines = submission.script.splitlines()
    assert "#PBS -J 0-3%2" in lines
    assert "#PBS -N det-array-1-1" in lines and "#PBS -N det-1-1-1" not in lines
    assert f"#PBS -o {array.array_dir}/" in lines and f"#PBS -e {array.array_dir}/" in lines
    assert not any(line.startswith("#PBS -o /shared") for line in lines)
    assert "#PBS -l select=1:ncpus=2:mpiprocs=2" in lines and "#PBS -q workq" in lines
    assert "#PBS -l walltime=00:10:00" in lines and "#PBS -p -5" in lines
    assert "#PBS -v HPCDET_JOB_TAG=hpcdet:dev:experiment-1:array" in lines
    assert "#PBS -r y" in lines and "#PBS -k oed" in lines
    assert submission.argv == ("qsub", f"{array.array_dir}/array.sh")


@pytest.mark.parametrize(("size", "throttle", "expected"), [
    (10, None, "0-9"), (10, 4, "0-9%4"), (3, 3, "0-2"), (2, 8, "0-1")])
def test_the_range_throttles_only_when_it_limits(size: int, throttle: int | None,
                                                expected: str) -> None:
    assert arrays.array_range(size, throttle) == expected


def test_a_one_subjob_array_is_refused(tmp_path: Path) -> None:
    """PBS refuses ``-J 0-0``: a lone trial goes as a plain job (the master's chunking)."""
    with pytest.raises(ValidationError, match="at least two"):
        PbsBackend().render_array(_spec(), _array(tmp_path, 1))


@pytest.mark.parametrize(("name", "directory"), [
    ("det array", "/x/arrays/a"), ("det-array:1", "/x/arrays/a"), ("a", "/x/arr ays/a"),
    ("a", "/x/arrays/a\n#PBS -l select=99")])
def test_unsafe_names_and_directories_are_refused(name: str, directory: str) -> None:
    array = ArraySpec(name, directory, ("/x/trial-1/job-1.sh", "/x/trial-2/job-1.sh"))
    with pytest.raises(ValidationError):
        PbsBackend().render_array(_spec(), array)


def _run_subjob(script: Path, job_id: str, index: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PBS_JOBID": job_id, "PBS_ARRAY_INDEX": index}
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                          check=False)


def test_each_subjob_runs_its_own_trials_script_with_its_logs_there(tmp_path: Path) -> None:
    """The index mapping, run by bash: subjob i runs line i+1's script, output in its dir
    under the subjob's id, the name the master reads a PBS job's logs under."""
    backend = PbsBackend()
    array = _array(tmp_path, 3)
    for script in array.scripts:
        Path(script).parent.mkdir(parents=True)
        Path(script).write_text('echo "ran $0"; echo oops >&2; exit 3\n')
    submission = backend.render_array(_spec(), array)
    write_index(array, backend.transport)
    Path(submission.script_path).write_text(submission.script)
    done = _run_subjob(Path(submission.script_path), "77[1].vm", "1")
    assert done.returncode == 3, done.stderr
    trial = Path(array.scripts[1]).parent
    assert (trial / "77[1].vm.OU").read_text() == f"ran {array.scripts[1]}\n"
    assert (trial / "77[1].vm.ER").read_text() == "oops\n"
    assert not list(Path(array.scripts[0]).parent.glob("77*"))
    missing = _run_subjob(Path(submission.script_path), "77[3].vm", "3")  # no line 4
    assert missing.returncode == 1 and "no trial script for subjob 3" in missing.stderr
    for index in ("", "1;id", "-1"):
        bad = _run_subjob(Path(submission.script_path), "77[1].vm", index)
        assert bad.returncode == 1 and "not an index" in bad.stderr
    hostile = _run_subjob(Path(submission.script_path), "77[1].vm/../../x", "1")
    assert hostile.returncode == 1 and "unexpected PBS_JOBID" in hostile.stderr


def test_a_trials_own_script_records_its_exit_under_the_subjob_id(tmp_path: Path) -> None:
    backend = PbsBackend(rsh_agent="/bin/false")
    spec = JobSpec(name="det-1-1-1", job_dir=str(tmp_path), nodes=1, ranks_per_node=1,
                   command=("true",))
    script = tmp_path / "job.sh"
    script.write_text(backend.render(spec).script.replace('mpiexec --hostfile "$PBS_NODEFILE"',
                                                          "env"))
    done = _run_subjob(script, "12[4].vm", "4")
    assert (tmp_path / "exit-12[4].vm").read_text() == f"{done.returncode}\n"


@pytest.mark.parametrize(("array_id", "index", "expected"), [
    ("123[].vm", 4, "123[4].vm"), ("123[]", 0, "123[0]"),
    ("123[].pbs.example.org", 9999, "123[9999].pbs.example.org")])
def test_subjob_ids(array_id: str, index: int, expected: str) -> None:
    assert PbsBackend.array_task_id(array_id, index) == expected
    assert PbsBackend.array_entry(expected) == (array_id, 1)
    assert expected.startswith(PbsBackend.array_task_prefix(array_id))


@pytest.mark.parametrize("array_id", ["123.vm", "123[4].vm", "123[]x", "x[].vm", "1[];id"])
def test_anything_but_an_array_id_is_refused(array_id: str) -> None:
    with pytest.raises(ValidationError):
        PbsBackend.array_task_id(array_id, 0)


@pytest.mark.parametrize("job_id", ["123.vm", "123[].vm", "123", "12_3"])
def test_only_subjobs_are_array_entries(job_id: str) -> None:
    assert PbsBackend.array_entry(job_id) is None
    assert PbsBackend.array_pending_task_ids(job_id) == []


def test_submit_array_writes_the_index_and_returns_the_arrays_id(
        tmp_path: Path, recorded_slurm: Any) -> None:
    runner = recorded_slurm({"qsub": "41[].vm\n"})
    backend = PbsBackend(runner=runner)
    array = _array(tmp_path, 2)
    submission = backend.render_array(_spec(), array)
    assert backend.submit_array(submission, array) == "41[].vm"
    assert (Path(array.array_dir) / "tasks").read_text() == "".join(
        f"{script}\n" for script in array.scripts)
    assert Path(submission.script_path).stat().st_mode & 0o777 == 0o700
    assert runner.calls == [("qsub", submission.script_path)]


def test_a_plain_job_id_from_qsub_is_not_taken_for_an_array(
        tmp_path: Path, recorded_slurm: Any) -> None:
    backend = PbsBackend(runner=recorded_slurm({"qsub": "41.vm\n"}))
    array = _array(tmp_path, 2)
    with pytest.raises(ValidationError):
        backend.submit_array(backend.render_array(_spec(), array), array)


def test_poll_reads_subjobs_one_record_each(tmp_path: Path, recorded_slurm: Any) -> None:
    runner = recorded_slurm({"qstat": data("array-poll-dsv.txt")})
    jobs = [JobRef(job_id, str(tmp_path)) for job_id in json.loads(data("array-poll-ids.json"))]
    result = PbsBackend(runner=runner).poll(jobs)
    expected = json.loads(data("array-poll-phases.json"))
    assert {job_id: status.phase.value for job_id, status in result.items()} == expected
    assert len(runner.calls) == 1 and runner.calls[0][1:3] == ("-x", "-t")
    assert set(expected.values()) >= {JobPhase.RUNNING.value, JobPhase.CANCELLED.value}


def test_cancel_of_one_trial_is_qdel_of_its_subjob(recorded_slurm: Any) -> None:
    runner = recorded_slurm()
    PbsBackend(runner=runner).cancel(["41[2].vm"])
    assert runner.calls == [("qdel", "41[2].vm")]


def test_the_queue_lists_subjobs_in_place_of_their_array(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"qstat": data("array-queue.json")})
    entries = PbsBackend(runner=runner).read_queue()
    assert runner.calls == [("qstat", "-t", "-f", "-F", "json")]
    assert [(e.job_id, e.state) for e in entries] == [
        ("1[0].vm", "R"), ("1[1].vm", "R"), ("1[2].vm", "Q"), ("1[3].vm", "Q")]
    assert {e.comment for e in entries} == {"hpcdet:it:experiment-9:array"}
    assert entries[0].node_names == ("pbsn1",) and entries[2].pending
    assert {PbsBackend.array_entry(e.job_id) for e in entries} == {("1[].vm", 1)}


def test_a_subjobs_priority_change_is_refused_saying_why(recorded_slurm: Any) -> None:
    """qalter/qmove of a subjob: "Invalid request" (exit 156, measured)."""
    def qalter(argv: Any) -> str:
        raise SchedulerError(argv, 156, "", "qalter: Invalid request 1[3].vm\n")
    backend = PbsBackend(runner=recorded_slurm({"qalter": qalter}))
    with pytest.raises(JobUpdateRefusedError, match="no single subjob") as refused:
        backend.update_job("1[3].vm", JobUpdate(nice=10))
    assert "Invalid request" in refused.value.reason


def test_find_answers_an_arrays_name_with_the_arrays_id(recorded_slurm: Any) -> None:
    """A master restarted between qsub and recording the ids finds the array by name."""
    jobs = json.loads(data("array-queue.json"))
    jobs["Jobs"] = dict(reversed(list(jobs["Jobs"].items())))  # subjobs before the array
    runner = recorded_slurm({"qstat": json.dumps(jobs)})
    assert PbsBackend(runner=runner).find(["det-array-x-1"]) == {"det-array-x-1": "1[].vm"}
    assert runner.calls == [("qstat", "-x", "-f", "-F", "json")]
