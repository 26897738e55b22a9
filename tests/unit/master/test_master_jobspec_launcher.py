"""The experiment's ``slurm.launcher`` / ``pbs.launcher`` reaches the job spec and script."""

from __future__ import annotations

from typing import Any

import pytest

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.transport.local import LOCAL
from hpcdet.expconf import validate
from hpcdet.master.queue.pools import Pool
from hpcdet.master.scheduling.jobspec import TrialRun, build_job_spec
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

RUN = TrialRun(7, 42, 1, "/shared/jobs/exp-7/trial-42")
CPU_POOL = Pool("debug", "debug", slot_type="cpu", cpus_per_node=4)
SLURM = MasterSettings(resource_manager=ResourceManagerSettings())
BASE = {"entrypoint": "model_def:Trial",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}}}


def config(section: str, **keys: Any) -> dict[str, Any]:
    return {"resources": {"slots_per_trial": 4}, section: {"slots_per_node": 2, **keys}}


@pytest.mark.parametrize(("conf", "expected"), [
    (config("slurm"), "default"),
    (config("slurm", launcher=None), "default"),
    (config("slurm", launcher="mpiexec"), "mpiexec"),
    (config("slurm", launcher="srun-pmix"), "srun-pmix"),
    # The scheduler's own section decides: a Slurm master ignores the pbs: section.
    (config("pbs", launcher="mpiexec"), "default"),
])  # fmt: skip
def test_the_slurm_section_picks_the_launcher(conf: dict[str, Any], expected: str) -> None:
    assert build_job_spec(SLURM, conf, RUN, CPU_POOL, files=LOCAL).launcher == expected


def test_the_script_starts_ranks_with_mpiexec() -> None:
    spec = build_job_spec(SLURM, config("slurm", launcher="mpiexec"), RUN, CPU_POOL, files=LOCAL)
    script = SlurmBackend().render(spec).script
    assert "mpiexec -n 4 --map-by ppr:2:node --bind-to none \\" in script.splitlines()


@pytest.mark.parametrize(("section", "value", "valid"), [
    ("slurm", "mpirun", "default, srun, srun-pmix, mpiexec"),
    ("pbs", "srun", "default, mpiexec"),
])
def test_a_bad_launcher_is_refused_by_its_config_path(section: str, value: str,
                                                      valid: str) -> None:
    errors = validate({**BASE, section: {"launcher": value}})
    assert errors == [f"<config>.{section}.launcher: must be one of {valid}, got {value!r}"]
