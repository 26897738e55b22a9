"""Slurm job arrays (hpcdet.dispatcher.slurm.arrays): limits, rendering, the index mapping
run for real by bash, and polling, finding and cancelling array tasks.

Recorded on the dev cluster (Slurm 22.05): ``scontrol show config`` prints
``MaxArraySize            = 1001``; ``squeue -h --states=all --jobs=6_1,6_3,7 -O
"JobArrayID:|,State:|,..." --array`` printed ``6_3|PENDING|0||JobArrayTaskLimit|``,
``7|RUNNING|0|node1|None|``, ``6_1|RUNNING|0|node1|None|`` (with ``JobID`` instead, the
pending task 6_3 printed the array's raw id and the running 6_1 its own raw id);
``sacct -X --jobs=1_1`` printed ``1_1|3|COMPLETED|0:0|node1|None``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher import ArrayLimits, ArraySpec, JobPhase, JobRef, JobSpec
from hpcdet.dispatcher.slurm import arrays
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.errors import ValidationError

CONFIG = """\
Configuration data as of 2026-11-26T14:33:02
AccountingStorageType   = accounting_storage/slurmdbd
MaxArraySize            = 1001
MaxJobCount             = 20000
MinJobAge               = 300 sec
SLURM_VERSION           = 22.05.8
"""


def _spec(job_dir: str = "/shared/exp-1/trial-1") -> JobSpec:
    return JobSpec(name="det-1-1-1", job_dir=job_dir, nodes=1, ranks_per_node=2,
                   command=("python3", "-m", "hpcdet.harness"), partition="batch",
                   time_limit="10:00", comment="hpcdet:dev:experiment-1:array")


def _array(root: Path, count: int, throttle: int | None = None) -> ArraySpec:
    scripts = tuple(str(root / f"trial-{n}" / "job-1.sh") for n in range(count))
    return ArraySpec("det-array-1-1", str(root / "arrays" / "det-array-1-1"), scripts, throttle)


def test_limits_come_from_one_scontrol_show_config_read_once(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"scontrol": CONFIG})
    backend = SlurmBackend(runner=runner)
    assert backend.array_limits() == ArrayLimits(1001, 20000)
    assert backend.array_limits() == ArrayLimits(1001, 20000)
    assert runner.calls == [("scontrol", "show", "config")]


def test_missing_limits_are_slurms_defaults() -> None:
    assert arrays.parse_array_limits("Configuration data\n") == ArrayLimits(1001, 10000)


def test_the_array_script_has_the_trials_options_and_its_own(tmp_path: Path,
                                                             recorded_slurm: Any) -> None:
    backend = SlurmBackend(runner=recorded_slurm())
    array = _array(tmp_path, 10, throttle=4)
    submission = backend.render_array(_spec(), array)
    lines = submission.script.splitlines()
    assert "#SBATCH --array=0-9%4" in lines
    assert "#SBATCH --job-name=det-array-1-1" in lines
    assert f"#SBATCH --chdir={array.array_dir}" in lines
    assert f"#SBATCH --output={array.array_dir}/slurm-%A_%a.out" in lines
    assert "#SBATCH --partition=batch" in lines and "#SBATCH --time=10:00" in lines
    assert "#SBATCH --comment=hpcdet:dev:experiment-1:array" in lines
    assert submission.argv == ("sbatch", "--parsable", f"{array.array_dir}/array.sh")


@pytest.mark.parametrize(("size", "throttle", "expected"), [
    (10, None, "0-9"), (10, 4, "0-9%4"), (3, 3, "0-2"), (3, 8, "0-2")])
def test_the_range_throttles_only_when_it_limits(size: int, throttle: int | None,
                                                expected: str) -> None:
    assert arrays.array_range(size, throttle) == expected


@pytest.mark.parametrize("script", ["relative/job-1.sh", "/x/job-1.sh\n/evil/job-1.sh",
                                    "/x/run.sh", "/x/job-.sh"])
def test_an_unsafe_task_script_is_refused(tmp_path: Path, script: str) -> None:
    array = ArraySpec("det-array-1-1", str(tmp_path), (script,))
    with pytest.raises(ValidationError):
        arrays.check_array(array)


def test_an_empty_or_unthrottled_array_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="no tasks"):
        arrays.check_array(ArraySpec("a", str(tmp_path), ()))
    with pytest.raises(ValidationError, match="throttle"):
        arrays.check_array(_array(tmp_path, 2, throttle=0))


def _run_task(script: Path, array_id: str, index: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SLURM_ARRAY_JOB_ID": array_id, "SLURM_ARRAY_TASK_ID": str(index)}
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                          check=False)


def test_each_task_runs_its_own_trials_script_with_its_logs_there(
        tmp_path: Path, recorded_slurm: Any) -> None:
    """The index mapping, run by bash: task i runs line i+1's script, output in its dir."""
    backend = SlurmBackend(runner=recorded_slurm())
    array = _array(tmp_path, 3)
    for script in array.scripts:
        Path(script).parent.mkdir(parents=True)
        Path(script).write_text('echo "ran $0"; echo oops >&2; exit 3\n')
    submission = backend.render_array(_spec(), array)
    arrays.write_index(array, backend.transport)
    Path(submission.script_path).write_text(submission.script)
    done = _run_task(Path(submission.script_path), "77", 1)
    assert done.returncode == 3
    trial = Path(array.scripts[1]).parent
    assert (trial / "slurm-77_1.out").read_text() == f"ran {array.scripts[1]}\n"
    assert (trial / "slurm-77_1.err").read_text() == "oops\n"
    assert not (Path(array.scripts[0]).parent / "slurm-77_0.out").exists()
    missing = _run_task(Path(submission.script_path), "77", 3)  # no line 4
    assert missing.returncode == 1 and "no trial script for task 3" in missing.stderr


def test_a_trials_own_script_records_its_exit_under_the_task_id(tmp_path: Path) -> None:
    """The exit file of a task is exit-<array id>_<index>, its job id in the master."""
    backend = SlurmBackend()
    spec = JobSpec(name="det-1-1-1", job_dir=str(tmp_path), nodes=1, ranks_per_node=1,
                   command=("true",))
    script = tmp_path / "job.sh"
    script.write_text(backend.render(spec).script.replace("srun ", "env "))
    done = _run_task(script, "12", 4)
    assert (tmp_path / "exit-12_4").read_text() == f"{done.returncode}\n"


def test_poll_reads_array_tasks_one_line_each(tmp_path: Path, recorded_slurm: Any) -> None:
    runner = recorded_slurm({
        "squeue": "6_3|PENDING|0||JobArrayTaskLimit|\n7|RUNNING|0|node1|None|\n"
                  "6_1|RUNNING|0|node1|None|\n",
        "sacct": "6_0|40|COMPLETED|0:0|node1|None\n"})
    jobs = [JobRef(job_id, str(tmp_path)) for job_id in ("6_0", "6_1", "6_3", "7")]
    result = SlurmBackend(runner=runner).poll(jobs)
    assert {job_id: status.phase for job_id, status in result.items()} == {
        "6_0": JobPhase.COMPLETED, "6_1": JobPhase.RUNNING, "6_3": JobPhase.PENDING,
        "7": JobPhase.RUNNING}
    assert result["6_3"].reason == "JobArrayTaskLimit"
    squeue, sacct = runner.calls
    assert squeue[-1] == "--array" and "--Format=JobArrayID:|" in squeue[-2]
    assert squeue[3] == "--jobs=6_0,6_1,6_3,7" and sacct[4] == "--jobs=6_0"


def test_find_answers_an_arrays_name_with_its_array_id(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"squeue": "6_1|det-array-1-2|\n6_[2-5%2]|det-array-1-2|\n"})
    assert SlurmBackend(runner=runner).find(["det-array-1-2"]) == {"det-array-1-2": "6"}


def test_one_task_is_cancelled_by_its_task_id(recorded_slurm: Any) -> None:
    runner = recorded_slurm()
    SlurmBackend(runner=runner).cancel(["6_2"])
    assert runner.calls == [("scancel", "6_2")]
