"""Rendering PBS job scripts: golden files, every directive, hostile values, qsub_args."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from hpcdet.dispatcher.base import BindMount, ContainerSpec, JobSpec
from hpcdet.dispatcher.pbs.backend import PbsBackend
from hpcdet.dispatcher.pbs.qsub_args import parse_qsub_args
from hpcdet.dispatcher.pbs.render import nice_of, priority, walltime
from hpcdet.errors import ConfigError, ValidationError

JOB_DIR = "/shared/hpcdet/exp-7/trial-42"


def pbs_spec(run_type: str = "none") -> JobSpec:
    """2 nodes x 4 ranks of 8 CPUs with 4 GPUs each, as the master asks for it."""
    read_only = run_type != "charliecloud"  # ch-run binds read-write only
    mounts = () if run_type == "none" else (
        BindMount("/shared/datasets", "/datasets", read_only),)
    image = {"none": None, "charliecloud": "/shared/images/hpcdet-bookworm"}.get(
        run_type, "/shared/images/pytorch-24.01.sif")
    return JobSpec(
        name="det-exp-7-trial-42", job_dir=JOB_DIR, nodes=2, ranks_per_node=4,
        command=("python3", "-m", "hpcdet.harness"), partition="gpu", cpus_per_rank=8,
        gpus_per_node=4, gpu_type="a100", time_limit="02:00:00", account="ml-team",
        wckey="vision", comment="hpcdet:prod:trial-42:run-1", nice=100,
        sbatch_args=("-l mem=64gb", "-W depend=afterok:12.pbs01", "-m abe"),
        environment={"DET_MASTER": "http://login01:8080", "DET_TRIAL_ID": "42",
                     "DET_JOB_DIR": JOB_DIR, "DET_SECRET": "it's $secret"},
        container=ContainerSpec(run_type, image, mounts, use_gpus=True),
        script_name="job-1.sh",
    )  # fmt: skip


@pytest.mark.parametrize("run_type", ["none", "apptainer", "charliecloud"])
def test_golden_script(run_type: str, golden_check: Callable[[str, str], None]) -> None:
    submission = PbsBackend().render(pbs_spec(run_type))
    golden_check(f"pbs_{run_type}.pbs", submission.script)
    assert submission.argv == ("qsub", f"{JOB_DIR}/job-1.sh")
    assert submission.script_path == f"{JOB_DIR}/job-1.sh"


def test_golden_script_is_valid_bash() -> None:
    script = PbsBackend().render(pbs_spec("apptainer")).script
    assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0


def test_directives_follow_the_spec() -> None:
    script = PbsBackend().render(pbs_spec()).script
    lines = [line for line in script.splitlines() if line.startswith("#PBS")]
    assert "#PBS -l select=2:ncpus=32:mpiprocs=4:ngpus=4:gpu_model=a100" in lines
    assert "#PBS -l place=scatter" in lines
    assert "#PBS -p -100" in lines  # nice 100 runs later: a lower PBS priority
    assert "#PBS -v HPCDET_JOB_TAG=hpcdet:prod:trial-42:run-1" in lines
    assert f"#PBS -o {JOB_DIR}/" in lines and "#PBS -r n" in lines
    assert lines[-3:] == ["#PBS -l mem=64gb", "#PBS -W depend=afterok:12.pbs01", "#PBS -m abe"]
    single = PbsBackend(gpu_type_resource="gpu_type").render(
        replace(pbs_spec(), nodes=1, requeue=True, nice=None, time_limit=None))
    assert "#PBS -l place=pack" in single.script and "#PBS -r y" in single.script
    assert "gpu_type=a100" in single.script
    assert "-l walltime" not in single.script and "#PBS -p" not in single.script


def test_mpiexec_starts_one_rank_per_slot_over_pbs_tmrsh() -> None:
    script = PbsBackend().render(pbs_spec()).script
    line = next(line for line in script.splitlines() if line.startswith("mpiexec "))
    assert line.startswith('mpiexec --hostfile "$PBS_NODEFILE" -n 8 --map-by ppr:4:node')
    assert f"--mca plm_rsh_agent {JOB_DIR}/.pbs-rsh-agent" in line
    assert "--leave-session-attached" in line
    for name in ("DET_MASTER", "DET_SECRET", "PBS_JOBID", "PBS_NODEFILE", "HPCDET_JOB_TAG"):
        assert f"-x {name}" in line
    assert "exec /opt/pbs/bin/pbs_tmrsh" in script
    ssh = PbsBackend(rsh_agent="ssh").render(pbs_spec()).script
    assert "--mca plm_rsh_agent ssh" in ssh and "pbs-rsh-agent" not in ssh


def test_the_script_exports_its_execution_from_run_count(tmp_path: Path) -> None:
    """PBS sets no requeue count: the script reads qstat's run_count (a requeued second
    execution is 1), beside pbs_tmrsh, and passes it to every rank."""
    script = PbsBackend().render(pbs_spec()).script
    assert "-x HPCDET_RESTART_COUNT" in script and "/opt/pbs/bin/qstat -f" in script
    assert "qstat -f" in PbsBackend(rsh_agent="ssh").render(pbs_spec()).script
    start = script.index("hpcdet_runs=")
    lines = script[start:script.index("\n", script.index("export HPCDET_RESTART_COUNT"))]
    fake = tmp_path / "qstat"  # a fake qstat printing what OpenPBS 23.06 prints
    for runs, count in (("    run_count = 2", "1"), ("", "0")):
        fake.write_text(f"#!/bin/sh\necho 'Job Id: 7.pbs'\necho '{runs}'\n")
        fake.chmod(0o755)
        test = lines.replace("/opt/pbs/bin/qstat", str(fake)) + "\necho $HPCDET_RESTART_COUNT"
        out = subprocess.run(["bash", "-c", test], capture_output=True, text=True, check=True,
                             env={"PBS_JOBID": "7.pbs", "PATH": "/usr/bin:/bin"}).stdout
        assert out.strip() == count


@pytest.mark.parametrize(("limit", "expected"), [
    ("02:00:00", "02:00:00"), ("1-02:00:00", "26:00:00"), ("30", "00:30:00"),
    ("90:00", "01:30:00"), ("2-0", "48:00:00"), ("1-1:30", "25:30:00"),
])  # fmt: skip
def test_walltime_from_slurm_time_limits(limit: str, expected: str) -> None:
    assert walltime(limit) == expected


def test_priority_is_minus_nice_then_squeezed() -> None:
    assert [priority(n) for n in (None, 0, 5, -5, 512, -5000, 10**9)] == [None, 0, -5, 5, -512,
                                                                          1023, -1024]


def test_every_resources_priority_gets_its_own_pbs_priority() -> None:
    """Placement's nice for priorities 1..99 (nice_step 100, weight 1): strictly ordered,
    not clamped together (42 and 80 both read -1024 once)."""
    pbs = [priority(100 * (p - 1) + 50) or 0 for p in range(1, 100)]
    assert all(a > b for a, b in zip(pbs, pbs[1:], strict=False))
    assert all(priority(nice_of(p)) == p for p in range(-1024, 1024))


@pytest.mark.parametrize(("field", "value"), [
    ("name", "a\nb"), ("name", "has space"), ("name", "x" * 231), ("name", "a@b"),
    ("job_dir", "relative/dir"), ("job_dir", "/with space"), ("partition", "q\r"),
    ("partition", "gpu -W x"), ("account", "a,b"), ("comment", "hpcdet:a,b"),
    ("comment", "x\x00"), ("time_limit", "2 hours"), ("qos", "normal"), ("exclude", "n1"),
    ("script_name", "../x.sh"), ("environment", {"BAD-NAME": "1"}),
    ("environment", {"OK": "line\nbreak"}), ("command", ("python3", "a\nb")),
    ("nodes", 0), ("ranks_per_node", True), ("gpu_type", "a100;rm"),
    ("container", ContainerSpec("apptainer", "/img\n.sif")), ("launcher", "srun"),
])  # fmt: skip
def test_hostile_values_are_refused(field: str, value: object) -> None:
    with pytest.raises((ValidationError, ConfigError)):
        PbsBackend().render(replace(pbs_spec(), **{field: value}))  # type: ignore[arg-type]


@pytest.mark.parametrize("arg", [
    "-N other", "-o /tmp/x", "-e /tmp/x", "-j oe", "-q express", "-l select=4:ncpus=2",
    "-lwalltime=99:00:00", "-l mem=1gb,place=free", "-W umask=000", "-W block=true",
    "-W sandbox=PRIVATE", "-W group_list=wheel", "-V", "-v A=1", "-I", "-X", "-r y", "-p 1023",
    "-A other", "-P other", "-J 1-10", "-u root", "-h", "-z", "-S /bin/sh", "-k n",
    "--mem=4G", "-l mem='4gb'", "plain", "-l", "-T x",
])  # fmt: skip
def test_qsub_args_hpcdet_controls_are_refused(arg: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_qsub_args([arg], path="exp.pbs.pbsbatch_args")
    assert caught.value.errors[0].startswith("exp.pbs.pbsbatch_args[0]: ")


def test_qsub_args_allowed_are_kept_in_order_once() -> None:
    args = parse_qsub_args(["-l mem=4gb", "-lsoftware=abaqus", "-W depend=afterok:1.vm",
                            "-m abe", "-M me@example.org", "-l mem=4gb"])
    assert [a.render() for a in args] == ["#PBS -l mem=4gb", "#PBS -l software=abaqus",
                                          "#PBS -W depend=afterok:1.vm", "#PBS -m abe",
                                          "#PBS -M me@example.org"]


def test_check_job_args_names_the_config_path() -> None:
    backend = PbsBackend()
    assert backend.check_job_args(["-l mem=4gb"], "pbs.pbsbatch_args") == ("-l mem=4gb",)
    with pytest.raises(ConfigError, match="-q is controlled by hpcdet"):
        backend.check_job_args(["-q express"], "pbs.pbsbatch_args")
