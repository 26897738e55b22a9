"""``det-master init``: the files it writes load, verify and refuse bad values; nothing is
half-written or overwritten. Detection against a real scheduler is in
tests/integration/test_it_doctor.py; here it is given (a :class:`Detected`)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from required import missing

from hpcdet.errors import ValidationError
from hpcdet.master import init_cli
from hpcdet.master import install_files as files
from hpcdet.master.install_files import Detected, SiteChoices
from hpcdet.master.serve import main
from hpcdet.master.settings.core import load_settings

FOUND = Detected(scheduler="slurm", display_name="Slurm", version="slurm 25.11.7",
                 partitions=("batch", "debug"), default_partition="batch",
                 munge_socket="/run/munge/munge.socket.2", host="login1.example.org",
                 environment=(("PATH", "/opt/slurm/bin:/usr/bin:/bin"),
                              ("SLURM_CONF", "/etc/slurm/slurm.conf")))
DET_MASTER = str(Path(sys.executable).parent / "det-master")


@pytest.fixture
def tls_pair(dev_tls_dir: Path) -> tuple[str, str]:
    """scripts/dev-tls's server certificate and key."""
    return str(dev_tls_dir / "server.pem"), str(dev_tls_dir / "server.key")


def site(tmp_path: Path, **changes: object) -> SiteChoices:
    values: dict[str, object] = {
        "state_dir": str(tmp_path / "state"), "job_root": str(tmp_path / "jobs"),
        "config_dir": str(tmp_path / "etc"), "det_master": DET_MASTER,
        "db_url": "postgresql+psycopg2://hpcdet@db.example.org/hpcdet", "admins": ("user_a",)}
    values.update(changes)
    return SiteChoices(**values)  # type: ignore[arg-type]


def test_master_yaml_loads_with_the_masters_own_loader(tmp_path: Path,
                                                       tls_pair: tuple[str, str]) -> None:
    cert, key = tls_pair
    text = files.master_yaml(site(tmp_path, tls_cert=cert, tls_key=key), FOUND)
    path = tmp_path / "master.yaml"
    path.write_text(text)
    settings = load_settings(path, environ={})
    assert settings.auth_mode == "munge" and settings.runas.owner_mode
    assert settings.db_url == "postgresql+psycopg2://hpcdet@db.example.org/hpcdet"
    assert settings.tls is not None and settings.tls.cert == cert
    rm = settings.resource_manager
    assert (rm.type, rm.job_storage_root, rm.default_compute_resource_pool) == \
        ("slurm", str(tmp_path / "jobs"), "batch")
    assert settings.admins == ("user_a",)
    assert "# Detected on login1.example.org: Slurm (slurm 25.11.7); pools (2): batch, debug" \
        in text


def test_without_tls_or_db_url_it_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text(files.master_yaml(site(tmp_path, db_url=None), FOUND))
    settings = load_settings(path, environ={})
    assert settings.tls is None and settings.database_kind == "sqlite"


@pytest.mark.parametrize("changes, named", [
    ({"db_url": "sqlite:///x\nauth: {mode: open}"}, "--db-url"),
    ({"state_dir": "relative/state"}, "--state-dir"),
    ({"job_root": "/srv/jobs dir"}, "--job-root"),
    ({"service_user": "root"}, "--service-user"),
    ({"admins": ("user_a; rm",)}, "--admin"),
    ({"tls_cert": "/etc/hpcdet/master.crt"}, "--tls-cert and --tls-key"),
])
def test_a_value_that_cannot_be_written_safely_is_refused_by_name(
        tmp_path: Path, changes: dict[str, object], named: str) -> None:
    with pytest.raises(ValidationError, match=named):
        site(tmp_path, **changes).check()


def test_written_all_or_nothing_and_never_over_a_file_without_force(tmp_path: Path) -> None:
    out = tmp_path / "out"
    texts = init_cli.render_all(site(tmp_path), FOUND)
    init_cli.write_all(out, texts, force=False)
    assert sorted(p.name for p in out.iterdir()) == sorted(texts)
    assert stat.S_IMODE((out / files.CONFIG).stat().st_mode) == 0o600
    assert stat.S_IMODE((out / files.SUDOERS).stat().st_mode) == 0o440
    (out / files.CONFIG).write_text("mine\n")
    changed = {name: text + "# new\n" for name, text in texts.items()}
    with pytest.raises(Exception, match="sudoers-hpcdet-runas already exist; nothing written"):
        init_cli.write_all(out, changed, force=False)
    assert (out / files.CONFIG).read_text() == "mine\n"
    assert (out / files.UNIT).read_text() == texts[files.UNIT]
    init_cli.write_all(out, changed, force=True)
    assert (out / files.CONFIG).read_text().endswith("# new\n")
    assert sorted(p.name for p in out.iterdir()) == sorted(texts)  # no staging left


def test_the_sudoers_line_and_root_commands_are_the_helpers(tmp_path: Path) -> None:
    texts = init_cli.render_all(site(tmp_path, service_user="svc"), FOUND)
    assert "svc ALL=(ALL,!root) NOPASSWD: /usr/local/libexec/hpcdet-runas" \
        in texts[files.SUDOERS]
    script = texts[files.ROOT_SCRIPT]
    assert f"--service-user svc --scheduler slurm --job-root {tmp_path / 'jobs'} --helper " \
           "/usr/local/libexec/hpcdet-runas" in script
    assert subprocess.run(["bash", "-n"], input=script.encode(), check=False).returncode == 0


def test_the_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        missing("systemd-analyze is not installed (scripts/ensure-systemd-analyze)")
    texts = init_cli.render_all(site(tmp_path), FOUND)
    unit_names = [files.UNIT, files.VACUUM_SERVICE, files.VACUUM_TIMER]
    for name in unit_names:
        (tmp_path / name).write_text(texts[name])
    verify = subprocess.run(["systemd-analyze", "verify", *unit_names], cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert verify.returncode == 0 and verify.stderr == "", verify.stderr
    unit = texts[files.UNIT]
    assert "User=hpcdet" in unit and "ProtectSystem=strict" in unit
    assert f"ReadWritePaths={tmp_path / 'state'} {tmp_path / 'jobs'}" in unit
    assert "NoNewPrivileges=false" in unit  # sudo is setuid: see the unit's comment
    assert "Environment=PATH=/opt/slurm/bin:/usr/bin:/bin\n" \
           "Environment=SLURM_CONF=/etc/slurm/slurm.conf\n" in unit


def test_the_units_environment_is_found_as_init_found_the_scheduler(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hpcdet.dispatcher import registry

    bin_dir = tmp_path / "opt" / "slurm" / "bin"
    bin_dir.mkdir(parents=True)
    fake_sbatch = bin_dir / "sbatch"  # a fake: only where it lies on PATH is looked at
    fake_sbatch.write_text("#!/bin/sh\n")
    fake_sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm/slurm.conf")
    assert init_cli.unit_environment(registry.scheduler("slurm")) == (
        ("PATH", f"{bin_dir}:{init_cli.SYSTEMD_PATH}"), ("SLURM_CONF", "/etc/slurm/slurm.conf"))
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm conf")
    with pytest.raises(ValidationError, match=r"\$SLURM_CONF: '/etc/slurm conf' must be"):
        files.master_unit(site(tmp_path), init_cli.unit_environment(registry.scheduler("slurm")))


def test_a_broken_unit_fails_verify(tmp_path: Path) -> None:
    """The verify test above can fail: a unit whose program is missing does."""
    if shutil.which("systemd-analyze") is None:
        missing("systemd-analyze is not installed (scripts/ensure-systemd-analyze)")
    broken = files.master_unit(site(tmp_path, det_master="/nonexistent/det-master"))
    (tmp_path / files.UNIT).write_text(broken)
    verify = subprocess.run(["systemd-analyze", "verify", files.UNIT], cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert verify.returncode != 0 and "/nonexistent/det-master" in verify.stderr


def test_the_scheduler_is_the_one_whose_submit_command_is_on_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(Exception, match="found none on PATH .*sbatch, qsub.*--scheduler"):
        init_cli.detect_scheduler(None)
    fake_qsub = bin_dir / "qsub"  # a fake: only its presence on PATH is looked at
    fake_qsub.write_text("#!/bin/sh\n")
    fake_qsub.chmod(0o755)
    assert init_cli.detect_scheduler(None) == "pbs"
    assert init_cli.detect_scheduler("slurm") == "slurm"
    with pytest.raises(ValueError, match="known: slurm, pbs"):
        init_cli.detect_scheduler("lsf")


def test_init_needs_no_config_and_refuses_bad_input_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(init_cli, "detect", lambda scheduler, munge: FOUND)
    monkeypatch.setenv("HPCDET_MASTER_CONFIG", str(tmp_path / "absent.yaml"))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["init", "--out", str(out), "--state-dir", "var/x"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines() == [
        "Error: --state-dir: 'var/x' must be an absolute path of letters, digits and "
        "._+/@:=,- only"]
    assert not out.exists()
    result = CliRunner().invoke(main, ["init", "--out", str(out), "--det-master", DET_MASTER])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load((out / files.CONFIG).read_text())["resource_manager"]["type"] == "slurm"
    assert os.access(out / files.ROOT_SCRIPT, os.X_OK)
