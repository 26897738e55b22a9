"""A script's identity-changing directives, as sbatch/qsub read them, never pass det sbatch,
det qsub or the master's /tasks check (issue 28, finding 7): the reader is the run-as
helper's (:mod:`hpcdet.runas.directives`), so the helper and the master agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher.pbs import qsub_command
from hpcdet.dispatcher.slurm import sbatch_command
from hpcdet.dispatcher.slurm.sbatch_options import script_settings
from hpcdet.dispatcher.tasks import task_dialect
from hpcdet.errors import ValidationError
from hpcdet.master.api.refusals import http_status
from hpcdet.master.errors import Invalid
from hpcdet.master.scheduling.task_submission import parse_request

SBATCH_IDENTITY = [
    "#SBATCH --ui=0", "#SBATCH --get-user", "#SBATCH --gid=0", "#SBATCH  --uid 0",
    "#SBATCH --partition=debug --uid=0", "#SBATCH--gi=0", "#SLURM --uid=0",
    "#SBATCH --time=1\n" + "# padding\n" * 110_000 + "#SBATCH --uid=0",  # past 1 MiB
]
PBS_IDENTITY = [
    "#PBS -u root", "#PBS -uroot", "#PBS -N x -u root", "#PBS-u root",
    "#PBS -W Group_List=wheel", "#PBS -W depend=afterok:1,user_list=root",
    "#PBS -l walltime=1:00 \\\n  -W group_list=wheel",
]


def _body(tmp_path: Path, scheduler: str, script: str) -> dict[str, Any]:
    return {"scheduler": scheduler, "script": script, "script_name": "job.sh", "args": [],
            "options": [], "cwd": str(tmp_path), "environment": {}}


@pytest.mark.parametrize("directives", SBATCH_IDENTITY)
def test_the_master_refuses_a_slurm_script_that_changes_identity(tmp_path: Path,
                                                                 directives: str) -> None:
    script = f"#!/bin/bash\n{directives}\ntrue\n"
    with pytest.raises(ValidationError, match="det sbatch cannot honour --(uid|gid|get-user)"):
        task_dialect("slurm").check_script(script)
    with pytest.raises(Invalid, match="script: det sbatch cannot honour") as info:
        parse_request(_body(tmp_path, "slurm", script), "slurm")
    assert http_status(info.value) == 400


@pytest.mark.parametrize("directives", PBS_IDENTITY)
def test_the_master_refuses_a_pbs_script_that_changes_identity(tmp_path: Path,
                                                               directives: str) -> None:
    script = f"#!/bin/bash\n{directives}\ntrue\n"
    with pytest.raises(ValidationError, match="det qsub cannot honour -(u|W)"):
        task_dialect("pbs").check_script(script)
    with pytest.raises(Invalid, match="script: det qsub cannot honour") as info:
        parse_request(_body(tmp_path, "pbs", script), "pbs")
    assert http_status(info.value) == 400


@pytest.mark.parametrize("directive", ["-W Group_List=wheel", "-W User_List=root"])
def test_det_qsub_matches_attribute_names_as_the_pbs_server(tmp_path: Path,
                                                            directive: str) -> None:
    (tmp_path / "job.sh").write_text(f"#!/bin/sh\n#PBS -N x\n#PBS {directive}\necho\n")
    with pytest.raises(ValidationError, match="det qsub cannot honour -W"):
        qsub_command.prepare(["job.sh"], {}, str(tmp_path), lambda: None)


def test_an_ambiguous_abbreviation_names_every_option_sbatch_has(tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text("#!/bin/sh\n#SBATCH --cluste=c2\necho\n")
    with pytest.raises(ValidationError, match=r"job.sh line 2: option --cluste is ambiguous "
                       r"\(could be --cluster, --cluster-constraint, --clusters\)"):
        sbatch_command.prepare(["job.sh"], {}, str(tmp_path), lambda: None)


def test_legitimate_slurm_scripts_read_as_sbatch_reads_them(tmp_path: Path) -> None:
    script = ("#!/bin/bash\n# a comment\n#SBATCH --part=debug\n# another\n"
              "#SBATCH --time=1 --tasks-per-node=2\nhostname\n")
    task_dialect("slurm").check_script(script)
    assert script_settings(script) == [("partition", "debug"), ("time", "1"),
                                       ("ntasks-per-node", "2")]
    (tmp_path / "job.sh").write_text(script)
    prepared = sbatch_command.prepare(["job.sh"], {}, str(tmp_path), lambda: None)
    assert ["partition", "debug"] in prepared.body["options"]


def test_legitimate_pbs_scripts_read_as_qsub_reads_them(tmp_path: Path) -> None:
    """-V stays det qsub's: it sends the user's variables (the helper, run through sudo,
    refuses it); ``#PBS-V`` is read, as qsub needs no blank after the prefix."""
    script = "#!/bin/sh\n#PBS -N x\n: a colon line\n#PBS-V\n#PBS -W umask=077\necho\n"
    task_dialect("pbs").check_script(script)
    (tmp_path / "job.sh").write_text(script)
    prepared = qsub_command.prepare(["job.sh"], {"GREETING": "hi"}, str(tmp_path),
                                    lambda: None)
    assert prepared.body["environment"]["GREETING"] == "hi"
    assert ["W", "umask=077"] in prepared.body["options"]
