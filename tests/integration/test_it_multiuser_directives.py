"""An identity option sbatch would read in a script never reaches Slurm, however it is spelled
(issue 28, finding 7): ``det sbatch`` refuses it, and so does the run-as helper the master
submits through, before sbatch runs. Needs root and the dev cluster's users, like
test_it_multiuser.py, whose fixtures these are.
"""

from __future__ import annotations

import io
import secrets
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from it_helpers import BIN, REPO, load_json
from test_it_multiuser import HELPER, JOB_ROOT, SERVICE, OwnerMaster, _as, owner_master, users

__all__ = ["owner_master", "users"]  # the fixtures this module uses

pytestmark = [pytest.mark.multiuser, pytest.mark.slurm]

# getopt_long reads --ui as --uid (the only long option starting so); on one line after
# another option, where the helper's old first-word check did not look.
SCRIPT = "#!/bin/bash\n#SBATCH --time=1 --ui=0\nid -un\n"


def _tar(name: str, text: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(text.encode()), 0o700
        tar.addfile(info, io.BytesIO(text.encode()))
    return out.getvalue()


@pytest.mark.parametrize("owner_master", ["sqlite"], indirect=True)
def test_an_abbreviated_identity_directive_never_reaches_slurm(
        owner_master: OwnerMaster) -> None:
    directory = Path("/home/user_a") / f"task-{secrets.token_hex(4)}"
    directory.mkdir()
    (directory / "job.sh").write_text(SCRIPT)
    subprocess.run(["chown", "-R", "user_a:user_a", str(directory)], check=True)
    job_dir = JOB_ROOT / "user_a" / f"directives-{secrets.token_hex(4)}"
    try:
        det = _as("user_a", "sh", "-c", f'cd "{directory}" && exec "$0" "$@"',
                  str(BIN / "det"), "-m", owner_master.url, "sbatch", "job.sh",
                  env={"PYTHONPATH": str(REPO)})
        assert det.returncode != 0 and b"det sbatch cannot honour --uid" in det.stderr, det
        listed = load_json(owner_master.det_as("user_a", "task", "list", "--json").stdout)
        assert listed["tasks"] == []
        # The same script in user_a's job directory, submitted as the master would: the
        # helper answers alone (sbatch would have printed its own error).
        helper = ("sudo", "-n", "-u", "user_a", "--", HELPER)
        prepared = _as(SERVICE, *helper, "prepare", str(job_dir), stdin=_tar("job.sh", SCRIPT))
        assert prepared.returncode == 0, prepared
        submitted = _as(SERVICE, *helper, "submit", str(job_dir), "job.sh")
        assert submitted.returncode == 65, submitted
        assert submitted.stderr.decode() == \
            f"hpcdet-runas: {job_dir}/job.sh: #SBATCH --uid is not allowed\n"
    finally:
        _as(SERVICE, "sudo", "-n", "-u", "user_a", "--", HELPER, "remove", str(job_dir))
        shutil.rmtree(directory, ignore_errors=True)
