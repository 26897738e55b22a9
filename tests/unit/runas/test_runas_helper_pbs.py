"""The run-as helper's PBS row: neutral verbs as qsub/qdel/qhold/qrls/qrerun/qalter/qmove."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hpcdet.runas import helper
from hpcdet.runas.helper import Caller, Config, Refused

INJECTIONS = ["1;id", "$(id)", "`id`", "-u0", "1\nid", "1\r", "1\x00", "../../etc", "1 2",
              "", "1.vm;id", "1.-vm", "x" * 5000]


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Config, Caller, Path]:
    root = tmp_path / "jobs"
    root.mkdir()
    config = Config(job_root=str(root), service_user="nobody", min_uid=1000, scheduler="pbs")
    caller = Caller(os.getuid(), "user_a", frozenset({"users"}), "nobody")
    job_dir = root / "user_a" / "exp-1" / "trial-1"
    job_dir.mkdir(parents=True)
    (job_dir / "job-1.sh").write_text("#!/bin/bash\n#PBS -N x\n#PBS -W umask=077\ntrue\n")
    return config, caller, job_dir


def test_plans_map_neutral_verbs_to_pbs_argv(setup: tuple[Config, Caller, Path]) -> None:
    config, caller, job_dir = setup
    assert helper.plan("cancel", ["12.vm", "13[].pbs01.example.org"], config, caller) == \
        ("run", ["qdel", "12.vm", "13[].pbs01.example.org"])
    assert helper.plan("hold", ["12.vm"], config, caller)[1] == ["qhold", "12.vm"]
    assert helper.plan("release", ["12"], config, caller)[1] == ["qrls", "12"]
    assert helper.plan("requeue", ["12.vm"], config, caller)[1] == ["qrerun", "12.vm"]
    assert helper.plan("submit", [str(job_dir), "job-1.sh", "--"], config, caller)[1] == \
        ["qsub", str(job_dir / "job-1.sh")]


def test_update_is_qalter_or_qmove(setup: tuple[Config, Caller, Path]) -> None:
    config, caller, _ = setup
    assert helper.plan("update", ["3.vm", "nice=10"], config, caller)[1] == \
        ["qalter", "-p", "-10", "3.vm"]
    assert helper.plan("update", ["3.vm", "nice=-5000", "account=ml", "time_limit=01:00:00"],
                       config, caller)[1] == \
        ["qalter", "-p", "1023", "-A", "ml", "-l", "walltime=01:00:00", "3.vm"]
    assert helper.plan("update", ["3.vm", "partition=debug"], config, caller)[1] == \
        ["qmove", "debug", "3.vm"]
    for refused in (["3.vm", "qos=high"], ["3.vm", "partition=debug", "nice=1"]):
        with pytest.raises(Refused) as info:
            helper.plan("update", refused, config, caller)
        assert info.value.code == helper.EXIT_INVALID


@pytest.mark.parametrize("bad", INJECTIONS)
def test_every_pbs_job_id_refuses_injection(setup: tuple[Config, Caller, Path], bad: str) -> None:
    config, caller, _ = setup
    for verb, args in [("cancel", [bad]), ("cancel", ["12.vm", bad]), ("hold", [bad]),
                       ("release", [bad]), ("requeue", [bad]), ("update", [bad, "nice=1"])]:
        with pytest.raises(Refused) as info:
            helper.plan(verb, args, config, caller)
        assert info.value.code == helper.EXIT_INVALID, (verb, args)


def test_pbs_submit_takes_no_options(setup: tuple[Config, Caller, Path]) -> None:
    config, caller, job_dir = setup
    with pytest.raises(Refused, match="not allowed"):
        helper.plan("submit", [str(job_dir), "job-1.sh", "--account=x", "--"], config, caller)


@pytest.mark.parametrize("directive", ["-u root", "-uroot", "-V", "-W group_list=wheel",
                                       "-Wgroup_list=wheel", "-W run_as=root"])
def test_pbs_submit_refuses_identity_directives(setup: tuple[Config, Caller, Path],
                                                directive: str) -> None:
    config, caller, job_dir = setup
    (job_dir / "job-2.sh").write_text(f"#!/bin/bash\n#PBS {directive}\ntrue\n")
    with pytest.raises(Refused, match="not allowed"):
        helper.plan("submit", [str(job_dir), "job-2.sh"], config, caller)


def test_slurm_ids_stay_digits_only(setup: tuple[Config, Caller, Path]) -> None:
    config, caller, _ = setup
    slurm = Config(job_root=config.job_root, service_user="nobody")
    with pytest.raises(Refused):
        helper.plan("cancel", ["12.vm"], slurm, caller)


def test_pbs_has_no_token_verb(setup: tuple[Config, Caller, Path]) -> None:
    config, caller, _ = setup
    with pytest.raises(Refused, match=r"^token is not available with scheduler pbs \(Slurm "
                       r"only\)$") as info:
        helper.plan("token", ["600"], config, caller)
    assert info.value.code == helper.EXIT_USAGE


def test_scheduler_env_points_pbs_at_its_conf() -> None:
    env = helper.scheduler_env(Config(job_root="/x", scheduler="pbs",
                                      scheduler_conf="/etc/pbs.conf"))
    assert env["PBS_CONF_FILE"] == "/etc/pbs.conf" and "SLURM_CONF" not in env
