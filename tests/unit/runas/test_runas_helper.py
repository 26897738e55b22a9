"""The run-as helper's validation: every argument of every verb, the caller, the archive."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from hpcdet.runas import helper
from hpcdet.runas.helper import Caller, Config, Refused

INJECTIONS = ["1;id", "$(id)", "`id`", "--uid=0", "-u0", "1\nid", "1\r", "1\x00", "../../etc",
              "1 2", "", "x" * 5000]


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Config, Caller, Path]:
    root = tmp_path / "jobs"
    root.mkdir()
    config = Config(job_root=str(root), service_user="nobody", min_uid=1000)
    caller = Caller(os.getuid(), "user_a", frozenset({"users"}), "nobody")
    job_dir = root / "user_a" / "exp-1" / "trial-1"
    job_dir.mkdir(parents=True)
    (job_dir / "job-1.sh").write_text("#!/bin/bash\n#SBATCH --job-name=x\ntrue\n")
    return config, caller, job_dir


def test_plans_map_neutral_verbs_to_slurm_argv(setup: tuple[Config, Caller, Path]) -> None:
    config, caller, job_dir = setup
    assert helper.plan("cancel", ["12", "13_4"], config, caller) == \
        ("run", ["scancel", "12", "13_4"])
    assert helper.plan("hold", ["12"], config, caller) == ("run", ["scontrol", "hold", "12"])
    assert helper.plan("release", ["12"], config, caller)[1] == ["scontrol", "release", "12"]
    assert helper.plan("requeue", ["12"], config, caller)[1] == ["scontrol", "requeue", "12"]
    assert helper.plan("update", ["12", "partition=batch", "nice=10"], config, caller)[1] == \
        ["scontrol", "update", "JobId=12", "Partition=batch", "Nice=10"]
    assert helper.plan("token", ["600"], config, caller) == \
        ("run", ["scontrol", "token", "lifespan=600"])  # never username=: the caller's own
    assert helper.plan("submit", [str(job_dir), "job-1.sh"], config, caller)[1] == \
        ["sbatch", "--parsable", str(job_dir / "job-1.sh")]
    assert helper.plan("submit", [str(job_dir), "job-1.sh", "--job-name=a b", "--exclusive",
                                  "--nice=-1", "--", "--lr", "1;id"], config, caller)[1] == \
        ["sbatch", "--parsable", "--job-name=a b", "--exclusive", "--nice=-1",
         str(job_dir / "job-1.sh"), "--lr", "1;id"]


@pytest.mark.parametrize("bad", INJECTIONS)
def test_every_job_id_argument_refuses_injection(setup: tuple[Config, Caller, Path],
                                                 bad: str) -> None:
    config, caller, _ = setup
    for verb, args in [("cancel", [bad]), ("cancel", ["12", bad]), ("hold", [bad]),
                       ("release", [bad]), ("requeue", [bad]), ("update", [bad, "nice=1"])]:
        with pytest.raises(Refused) as info:
            helper.plan(verb, args, config, caller)
        assert info.value.code == helper.EXIT_INVALID, (verb, args)


@pytest.mark.parametrize("bad", [*INJECTIONS, "9", "604801", "0600x", "1e3", "+600", "６００",
                                 "600 username=root", "username=root"])
def test_token_lifespans_are_bounded_seconds(setup: tuple[Config, Caller, Path],
                                             bad: str) -> None:
    config, caller, _ = setup
    with pytest.raises(Refused) as info:
        helper.plan("token", [bad], config, caller)
    assert info.value.code == helper.EXIT_INVALID
    assert str(info.value).count("\n") == 0
    for good in ("10", "604800"):
        assert helper.plan("token", [good], config, caller)[1][-1] == f"lifespan={good}"


@pytest.mark.parametrize("bad", INJECTIONS)
def test_update_values_and_keys_refuse_injection(setup: tuple[Config, Caller, Path],
                                                 bad: str) -> None:
    config, caller, _ = setup
    for arg in [f"partition={bad}", f"qos={bad}", f"nice={bad}", f"time_limit={bad}", bad,
                f"uid={bad}", "UserId=0", "Priority=1"]:
        with pytest.raises(Refused):
            helper.plan("update", ["12", arg], config, caller)


@pytest.mark.parametrize("bad", INJECTIONS)
def test_paths_and_script_names_refuse_injection(setup: tuple[Config, Caller, Path],
                                                 bad: str) -> None:
    config, caller, job_dir = setup
    for verb, args in [("prepare", [bad]), ("remove", [bad]), ("submit", [bad, "job-1.sh"]),
                       ("submit", [str(job_dir), bad]),
                       ("prepare", [f"{job_dir}/../../../{bad}"])]:
        with pytest.raises(Refused):
            helper.plan(verb, args, config, caller)


def test_paths_outside_the_callers_own_root_are_refused(setup: tuple[Config, Caller, Path],
                                                        tmp_path: Path) -> None:
    config, caller, job_dir = setup
    other = Path(config.job_root) / "user_b" / "exp-1"
    other.mkdir(parents=True)
    link = job_dir / "escape"
    link.symlink_to(tmp_path)
    for path in [str(other), config.job_root, str(Path(config.job_root) / "user_a"),
                 f"{job_dir}/../../../user_b/exp-1", str(link), "/etc", "/root", "relative/x"]:
        for verb in ("prepare", "remove"):
            with pytest.raises(Refused) as info:
                helper.plan(verb, [path], config, caller)
            assert info.value.code == helper.EXIT_INVALID


def test_unknown_verbs_and_arity_are_usage_errors(setup: tuple[Config, Caller, Path]) -> None:
    config, caller, _ = setup
    for verb, args in [("sh", ["-c", "id"]), ("sbatch", ["x"]), ("exec", []), ("hold", []),
                       ("hold", ["1", "2"]), ("submit", ["x"]), ("update", ["1"]),
                       ("token", []), ("token", ["60", "user_b"])]:
        with pytest.raises(Refused) as info:
            helper.plan(verb, args, config, caller)
        assert info.value.code == helper.EXIT_USAGE


@pytest.mark.parametrize("option", [
    "--uid=0", "--gid=0", "--uid", "--get-user-env", "--export-file=/etc/shadow", "--wrap=id",
    "-u0", "-D/", "--wait", "--test-only", "--parsable", "--job-name=a\nb", "job.sh", ";id",
    "--JOB-NAME=x", "--no-such-option",
])
def test_submit_refuses_options_outside_the_allowlist(setup: tuple[Config, Caller, Path],
                                                      option: str) -> None:
    config, caller, job_dir = setup
    with pytest.raises(Refused) as info:
        helper.plan("submit", [str(job_dir), "job-1.sh", option], config, caller)
    assert info.value.code == helper.EXIT_INVALID
    with pytest.raises(Refused):  # script arguments: no line breaks or NUL either
        helper.plan("submit", [str(job_dir), "job-1.sh", "--", "a\nb"], config, caller)


@pytest.mark.parametrize("directive", ["--uid=0", "--gid=0", "--uid 0", "--get-user-env"])
def test_submit_refuses_identity_directives_in_the_script(
        setup: tuple[Config, Caller, Path], directive: str) -> None:
    config, caller, job_dir = setup
    (job_dir / "job-2.sh").write_text(f"#!/bin/bash\n#SBATCH {directive}\ntrue\n")
    with pytest.raises(Refused, match="not allowed"):
        helper.plan("submit", [str(job_dir), "job-2.sh"], config, caller)


def test_submit_refuses_a_script_that_is_a_symlink(setup: tuple[Config, Caller, Path]) -> None:
    config, caller, job_dir = setup
    (job_dir / "link.sh").symlink_to("/etc/passwd")
    with pytest.raises(Refused):
        helper.plan("submit", [str(job_dir), "link.sh"], config, caller)


def _caller(uid: int = 2000, user: str = "user_a", groups: frozenset[str] = frozenset({"det"}),
            sudo_user: str | None = "hpcdet") -> Caller:
    return Caller(uid, user, groups, sudo_user)


def test_caller_checks() -> None:
    config = Config(job_root="/x", service_user="hpcdet", allowed_group="det", min_uid=1000)
    helper.check_caller(_caller(), config, euid=2000)
    for caller, euid in [(_caller(uid=0, user="root"), 0), (_caller(), 0),
                         (_caller(uid=999, user="slurm"), 999),
                         (_caller(user="hpcdet"), 2000),
                         (_caller(groups=frozenset({"users"})), 2000),
                         (_caller(sudo_user="intruder"), 2000)]:
        with pytest.raises(Refused) as info:
            helper.check_caller(caller, config, euid=euid)
        assert info.value.code == helper.EXIT_NOPERM


def test_config_must_be_root_owned_and_not_writable_by_others(tmp_path: Path) -> None:
    path = tmp_path / "runas.conf"
    path.write_text("[runas]\njob_root = /srv/jobs\nscheduler = slurm\n")
    path.chmod(0o644)
    assert helper.load_config(str(path), require_root_owned=False).job_root == "/srv/jobs"
    path.chmod(0o666)
    with pytest.raises(Refused) as info:
        helper.load_config(str(path))
    assert info.value.code == helper.EXIT_CONFIG
    path.write_text("[runas]\njob_root = relative\n")
    with pytest.raises(Refused):
        helper.load_config(str(path), require_root_owned=False)


def test_main_refuses_root_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "runas.conf"
    path.write_text(f"[runas]\njob_root = {tmp_path}\n")
    path.chmod(0o644)
    monkeypatch.setattr(os, "getuid", lambda: 0)
    assert helper.main(["cancel", "1"], config_path=str(path)) == helper.EXIT_NOPERM
    err = capsys.readouterr().err
    assert err == "hpcdet-runas: refusing to run as root\n"
    assert helper.main(["nope"], config_path=str(tmp_path / "missing")) == helper.EXIT_CONFIG


def _tar(*members: tarfile.TarInfo, data: bytes = b"x") -> io.BytesIO:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(data) if member.isreg() else None)
    out.seek(0)
    return out


def _member(name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644,
            link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, link
    info.size = 1 if kind == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize("member", [
    _member("/etc/x"), _member("../x"), _member("a/../../x"), _member("ok/../../../x"),
    _member("l", tarfile.SYMTYPE, link="/etc/passwd"), _member("h", tarfile.LNKTYPE, link="a"),
    _member("dev", tarfile.CHRTYPE), _member("fifo", tarfile.FIFOTYPE), _member("a\nb"),
    _member("-rf"),
])
def test_prepare_refuses_hostile_members(setup: tuple[Config, Caller, Path],
                                         member: tarfile.TarInfo) -> None:
    config, caller, job_dir = setup
    config = Config(job_root=config.job_root, service_user="root")
    with pytest.raises(Refused):
        helper.prepare(str(job_dir / "new"), _tar(_member("fine"), member), config, caller)
    assert not (Path(config.job_root) / "x").exists()
    assert not (job_dir / "new").exists()  # nothing half-done


def test_prepare_unpacks_files_without_any_other_bits(setup: tuple[Config, Caller, Path]) -> None:
    config, caller, job_dir = setup
    config = Config(job_root=config.job_root, service_user="root")
    target = job_dir.parent / "trial-2"
    helper.prepare(str(target), _tar(_member("context", tarfile.DIRTYPE, 0o755),
                                     _member("context/run.sh", mode=0o755),
                                     _member("trial.json", mode=0o644)), config, caller)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in target.rglob("*")}
    assert modes == {"context": 0o770, "run.sh": 0o770, "trial.json": 0o660}
    assert (target / "trial.json").read_bytes() == b"x"
    user_root = Path(config.job_root) / "user_a"
    assert stat.S_IMODE(user_root.stat().st_mode) & 0o007 == 0
    acl = os.getxattr(user_root, "system.posix_acl_default")
    assert acl == helper.acl_blob([(0x01, 7, 0xFFFFFFFF), (0x02, 7, 0), (0x04, 0, 0xFFFFFFFF),
                                   (0x10, 7, 0xFFFFFFFF), (0x20, 0, 0xFFFFFFFF)])


def test_prepare_refuses_a_user_root_someone_else_owns(setup: tuple[Config, Caller, Path]) -> None:
    config, _, job_dir = setup
    squatter = Caller(os.getuid() + 1, "user_a", frozenset(), "nobody")
    with pytest.raises(Refused) as info:
        helper.prepare(str(job_dir), _tar(_member("a")), config, squatter)
    assert info.value.code == helper.EXIT_NOPERM


def test_prepare_makes_the_users_own_checkpoint_directory(
        setup: tuple[Config, Caller, Path]) -> None:
    """``<job_root>/<user>/checkpoints``, the master's default checkpoint storage with jobs
    run as their owner (issue 28, finding 2): made as the user, private like the root."""
    config, caller, job_dir = setup
    config = Config(job_root=config.job_root, service_user="root")
    helper.prepare(str(job_dir.parent / "trial-2"), _tar(_member("a")), config, caller)
    checkpoints = Path(config.job_root) / "user_a" / helper.CHECKPOINT_DIR
    info = checkpoints.lstat()
    assert stat.S_ISDIR(info.st_mode) and info.st_uid == caller.uid
    assert stat.S_IMODE(info.st_mode) == 0o770  # group bits: the ACL mask; others nothing
    private = helper.acl_blob([(0x01, 7, 0xFFFFFFFF), (0x02, 7, 0), (0x04, 0, 0xFFFFFFFF),
                               (0x10, 7, 0xFFFFFFFF), (0x20, 0, 0xFFFFFFFF)])
    for name in ("system.posix_acl_access", "system.posix_acl_default"):
        assert os.getxattr(checkpoints, name) == private
    helper.prepare(str(job_dir.parent / "trial-3"), _tar(_member("a")), config, caller)
    assert checkpoints.is_dir()  # there already: kept


@pytest.mark.parametrize("kind", ["link", "file"])
def test_prepare_refuses_a_checkpoint_directory_that_is_not_the_users(
        setup: tuple[Config, Caller, Path], tmp_path: Path, kind: str) -> None:
    config, caller, job_dir = setup
    config = Config(job_root=config.job_root, service_user="root")
    checkpoints = Path(config.job_root) / "user_a" / helper.CHECKPOINT_DIR
    if kind == "link":
        checkpoints.symlink_to(tmp_path)  # would send every checkpoint elsewhere
    else:
        checkpoints.write_text("")
    with pytest.raises(Refused, match="is not a directory owned by user_a") as info:
        helper.prepare(str(job_dir.parent / "trial-2"), _tar(_member("a")), config, caller)
    assert info.value.code == helper.EXIT_NOPERM
    assert not (job_dir.parent / "trial-2").exists()


def test_remove_deletes_links_not_their_targets(setup: tuple[Config, Caller, Path],
                                                tmp_path: Path) -> None:
    config, caller, job_dir = setup
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "f").write_text("keep")
    (job_dir / "link").symlink_to(precious)
    _, values = helper.plan("remove", [str(job_dir)], config, caller)
    helper.remove(values[0])
    assert not job_dir.exists() and (precious / "f").read_text() == "keep"


def test_scheduler_env_is_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LD_PRELOAD", "/tmp/evil.so")
    monkeypatch.setenv("SLURM_CONF", "/tmp/evil.conf")
    env = helper.scheduler_env(Config(job_root="/x", scheduler_conf="/etc/slurm/slurm.conf"))
    assert "LD_PRELOAD" not in env and env["SLURM_CONF"] == "/etc/slurm/slurm.conf"
    assert env["PATH"] == Config.path
