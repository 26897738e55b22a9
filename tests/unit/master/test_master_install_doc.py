"""docs/admin/install.md says only what init and doctor do: every flag it names exists, its
tables name exactly the files init writes and the checks doctor runs, its links resolve."""

from __future__ import annotations

import re
from pathlib import Path

from hpcdet.master.doctor import CHECK_NAMES, doctor_command
from hpcdet.master.init_cli import MODES, init_command

DOC = Path(__file__).resolve().parents[3] / "docs" / "admin" / "install.md"
# Written by the other parts of issue 32 (packaging, metrics, backups and upgrades): checked
# like every link once they exist.
OTHER_PARTS = {"packages.md", "metrics.md", "backups.md", "upgrades.md"}


def _flags(command: object) -> set[str]:
    return {opt for param in command.params for opt in param.opts}  # type: ignore[attr-defined]


def test_every_flag_named_exists() -> None:
    text = DOC.read_text()
    named = set(re.findall(r"(--[a-z][a-z-]+)", text))
    known = _flags(init_command) | _flags(doctor_command) | {
        "--help", "--service-user", "--scheduler", "--job-root", "--helper",  # the installer's
        "--allowed-group", "--slurm-conf", "--now", "--owner", "--home-dir", "--shell",
        "--system", "--priority", "--version"}  # ... and useradd, sacctmgr, qstat
    assert named - known == set()


def test_the_tables_name_init_files_and_doctor_checks() -> None:
    text = DOC.read_text()
    rows = re.findall(r"^\| `([a-z.-]+)`", text, re.MULTILINE)
    assert set(MODES) - {"hpcdet-vacuum-metrics.timer"} <= set(rows)
    assert set(CHECK_NAMES) <= set(rows)


def test_links_resolve() -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", DOC.read_text()):
        path = DOC.parent / target
        if path.name in OTHER_PARTS and not path.exists():
            continue
        assert path.exists(), target
