"""An unmanaged run (``core_v2``) started by ``mpiexec`` in a user's own qsub job on the
dev OpenPBS server, reporting into a live PBS master.

The script passes no DistributedContext: hpcdet reads Open MPI's rank variables and joins
a gloo group itself, as its harness does. Both ranks share one trial, linked to the PBS
job; each rank's reports and checkpoint shard reach the master; the experiment shows in
``det experiment list`` as unmanaged and on its web page.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from it_helpers import BIN, REPO, LiveMaster
from it_pbs import PBS_BIN, USER, chown_tree, pbs_as, pbs_master, qdel_all, user_dir

pytestmark = [pytest.mark.pbs, pytest.mark.torch]

SCRIPT = """\
from hpcdet.experimental import core_v2

core_v2.init(config=core_v2.Config(name="unmanaged-mpiexec"))
rank, size = core_v2.distributed.rank, core_v2.distributed.size
for step in range(rank, 20, size):
    core_v2.train.report_training_metrics(steps_completed=step, metrics={"rank": float(rank)})
with core_v2.checkpoint.store_path({"steps_completed": 19}, shard=True) as (path, _):
    (path / f"state_{rank}").write_text(f"{rank}/{size}")
core_v2.close()
"""


@pytest.fixture
def master() -> Iterator[LiveMaster]:
    with pbs_master("unmanaged") as live:
        yield live


def test_mpiexec_in_a_users_own_qsub_job(master: LiveMaster) -> None:
    where = user_dir(USER, "unmanaged-job")
    (where / "report.py").write_text(SCRIPT)
    # What a user writes: where the master is, then mpiexec over the job's two slots.
    (where / "run.sh").write_text(f"""#!/bin/bash
export DET_MASTER={master.url} DET_USER={USER} PYTHONPATH={REPO} OMP_NUM_THREADS=1
cd {where}
exec mpiexec -n 2 --bind-to none {BIN / 'python3'} report.py
""")
    chown_tree(where, USER)
    job_id = pbs_as(USER, f"{PBS_BIN}/qsub", "-N", "my-own-job", "-l",
                    "select=1:ncpus=2:mpiprocs=2", "-l", "walltime=00:05:00", "-j", "oe",
                    "-o", str(where / "job.out"), "--", "/bin/bash", str(where / "run.sh")
                    ).strip()
    try:
        exp = _wait_for_end(master, where)
    finally:
        qdel_all([job_id])
    assert exp["unmanaged"] and exp["state"] == "COMPLETED", _output(where)
    [trial] = master.api(f"/experiments/{exp['id']}/trials")["trials"]
    assert trial["external_job"] == job_id and trial["job_ids"] == [job_id]
    metrics = master.api(f"/trials/{trial['id']}/metrics?group=training")["metrics"]
    assert {m["steps_completed"] for m in metrics} == set(range(20))
    assert {round(m["metrics"]["rank"]) for m in metrics} == {0, 1}
    ckpt = master.api(f"/checkpoints/{trial['latest_checkpoint']}")["checkpoint"]
    listed = master.det("experiment", "list", check=True).stdout
    assert any("unmanaged-mpiexec" in li and "(unmanaged)" in li for li in listed.splitlines())
    page = httpx.get(f"{master.url}/experiments/{exp['id']}", timeout=30,
                     headers={"X-Hpcdet-User": USER})
    assert page.status_code == 200 and 'data-fact="unmanaged"' in page.text
    assert set(ckpt["resources"]) >= {"state_0", "state_1"}, ckpt
    shutil.rmtree(where, ignore_errors=True)


def _wait_for_end(master: LiveMaster, where: Path, timeout: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [e for e in master.api("/experiments")["experiments"]
                 if e["name"] == "unmanaged-mpiexec"]
        if found and found[0]["state"] in ("COMPLETED", "ERROR", "CANCELED"):
            return dict(found[0])
        time.sleep(1)
    raise AssertionError(f"the unmanaged run did not end:\n{_output(where)}")


def _output(where: Path) -> str:
    out = where / "job.out"
    return out.read_text()[-4000:] if out.exists() else "(no job output yet)"
