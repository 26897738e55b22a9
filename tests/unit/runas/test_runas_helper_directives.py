"""The run-as helper reads a script's directives as sbatch/qsub read them (issue 28, finding 7).

Before, it looked at the first word after each ``#SBATCH``/``#PBS`` in the first MiB, so an
abbreviation, a second option on a line, a directive further on or a differently cased PBS
attribute reached the scheduler.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hpcdet.runas import helper
from hpcdet.runas.helper import Caller, Config, Refused

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
REPO = Path(__file__).resolve().parents[3]
MIB = 1024 * 1024


def _setup(tmp_path: Path, scheduler: str) -> tuple[Config, Caller, Path]:
    root = tmp_path / "jobs"
    config = Config(job_root=str(root), service_user="nobody", scheduler=scheduler)
    job_dir = root / "user_a" / "exp-1" / "trial-1"
    job_dir.mkdir(parents=True)
    return config, Caller(os.getuid(), "user_a", frozenset({"users"}), "nobody"), job_dir


def _submit(tmp_path: Path, scheduler: str, script: str) -> list[str]:
    config, caller, job_dir = _setup(tmp_path, scheduler)
    (job_dir / "job.sh").write_text(script)
    return helper.plan("submit", [str(job_dir), "job.sh", "--"], config, caller)[1]


@pytest.mark.parametrize("directives", [
    "#SBATCH --ui=0",  # sbatch reads --uid
    "#SBATCH --get-user",  # --get-user-env
    "#SBATCH --gi=0",
    "#SBATCH --partition=debug --uid=0",  # a second option on the line
    "#SBATCH -J name --uid 0",
    "#SBATCH --time=1\n" + "# padding\n" * (MIB // 10 + 1) + "#SBATCH --uid=0",  # past 1 MiB
    "#SBATCH--uid=0",  # no blank needed after the magic word
    "#SLURM --gid=0",  # sbatch's other magic word
    '#SBATCH "--uid=0"',  # sbatch drops the quotes
    "#SBATCH --gid\\=0",  # and the backslash
])
def test_identity_directives_are_refused_however_sbatch_would_read_them(
        tmp_path: Path, directives: str) -> None:
    with pytest.raises(Refused, match="#SBATCH --(uid|gid|get-user-env) is not allowed") as info:
        _submit(tmp_path, "slurm", f"#!/bin/bash\n{directives}\ntrue\n")
    assert info.value.code == helper.EXIT_INVALID


@pytest.mark.parametrize(("directive", "reason"), [
    ("--u=0", "option --u is ambiguous (could be --uid, --usage, --use-min-nodes)"),
    ("--g=0", "option --g is ambiguous"), ("--bogus", "unknown sbatch option --bogus"),
    ("-N 1 stray --uid=0", "'stray' is not an sbatch option"),
])
def test_directives_sbatch_would_refuse_or_misread_are_refused(
        tmp_path: Path, directive: str, reason: str) -> None:
    with pytest.raises(Refused, match=re.escape(f"job.sh: line 2: {reason}")) as info:
        _submit(tmp_path, "slurm", f"#!/bin/bash\n#SBATCH {directive}\ntrue\n")
    assert info.value.code == helper.EXIT_INVALID


def test_a_script_too_large_to_read_whole_is_refused_not_read_in_part(tmp_path: Path) -> None:
    padding = "# padding\n" * (helper.MAX_SCRIPT_BYTES // 10)
    with pytest.raises(Refused, match=f"larger than {helper.MAX_SCRIPT_BYTES} bytes"):
        _submit(tmp_path, "slurm", f"#!/bin/bash\n{padding}#SBATCH --time=1\ntrue\n")


@pytest.mark.parametrize("directives", [
    "#PBS -W Group_List=wheel",  # the server matches attribute names without case
    "#PBS -W User_List=root",  # -u's attribute
    "#PBS -W depend=afterok:1,group_list=wheel",  # not the first attribute
    "#PBS -N x -u root",  # a second option on the line
    "#PBS-u root",  # no blank needed after the prefix
    "#PBS -hV",  # bundled flags
    "#PBS -l walltime=1:00 \\\n  -u root",  # a continued line
])
def test_pbs_identity_and_environment_directives_are_refused(tmp_path: Path,
                                                             directives: str) -> None:
    with pytest.raises(Refused, match="#PBS (-u|-V|-W \\w+) is not allowed") as info:
        _submit(tmp_path, "pbs", f"#!/bin/bash\n{directives}\ntrue\n")
    assert info.value.code == helper.EXIT_INVALID


@pytest.mark.parametrize(("scheduler", "script", "read"), [
    ("slurm", "#!/bin/bash\n# comments\n#SBATCH --part=debug\n#SBATCH --time=1 --export=NONE\n"
     "hostname\n#SBATCH --uid=0 after the first command: never read\n",
     [("partition", "debug"), ("time", "1"), ("export", "NONE")]),
    ("pbs", "#!/bin/bash\n#PBS -N x\n: a colon line\n#PBS -W umask=077\ntrue\n#PBS -u root\n",
     [("N", "x"), ("W", "umask=077")]),
])
def test_legitimate_scripts_pass_read_as_the_scheduler_reads_them(
        tmp_path: Path, scheduler: str, script: str, read: list[tuple[str, str]]) -> None:
    argv = _submit(tmp_path, scheduler, script)
    assert argv[-1].endswith("job.sh")
    reader = helper.directives.sbatch_settings if scheduler == "slurm" else \
        helper.directives.qsub_settings
    assert reader(script) == read


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.glob("*_*.*")))
def test_the_scripts_hpcdet_writes_pass(tmp_path: Path, name: str) -> None:
    scheduler = "pbs" if name.endswith(".pbs") else "slurm"
    script = (GOLDEN / name).read_text()
    assert helper.directives.refused_directives(script, scheduler, environment=True) == []
    _submit(tmp_path, scheduler, script)


def test_the_installed_helper_loads_only_a_root_owned_reader_beside_it(tmp_path: Path) -> None:
    """As scripts/install-runas-helper lays them out; `python3 -I` adds no path of ours."""
    installed = tmp_path / "hpcdet-runas"
    installed.write_text(f"#!{sys.executable} -I\n" + (REPO / "hpcdet/runas/helper.py")
                         .read_text().split("\n", 1)[1])
    installed.chmod(0o755)
    run = [sys.executable, "-I", str(installed)]
    missing = subprocess.run(run, capture_output=True, text=True, check=False)
    assert missing.returncode == helper.EXIT_CONFIG, missing
    assert missing.stderr == f"hpcdet-runas: cannot read {installed}-directives.py: No such " \
                             "file or directory\n"
    reader = Path(f"{installed}-directives.py")
    reader.write_text((REPO / "hpcdet/runas/directives.py").read_text())
    reader.chmod(0o666)
    writable = subprocess.run(run, capture_output=True, text=True, check=False)
    assert writable.returncode == helper.EXIT_CONFIG and "root-owned" in writable.stderr
    if os.geteuid() != 0:
        pytest.skip("a root-owned reader needs root")
    reader.chmod(0o644)
    loaded = subprocess.run(run, capture_output=True, text=True, check=False)
    assert loaded.returncode == helper.EXIT_USAGE, loaded  # loaded, then: no verb
    assert not (tmp_path / "__pycache__").exists()
