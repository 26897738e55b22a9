"""Fair-share accounts: reading associations, planning sacctmgr commands, operator rights."""

from __future__ import annotations

from typing import Any

import pytest

from hpcdet.dispatcher.slurm.accounts import (
    SlurmAccount,
    accounts_named,
    apply,
    has_operator_rights,
    parse_assocs,
    plan_account_sync,
    read_accounts,
    read_cluster_name,
)
from hpcdet.errors import SchedulerError, ValidationError

# Recorded on the dev cluster (Slurm 22.05.8):
# sacctmgr -n -P show assoc where cluster=hpcdet-dev format=account,user,parentname,share
ASSOCS = """\
root|||1
root|root||1
hpcdet||root|1
hpcdet|root||1
det-default||hpcdet|1
det-default|root||1
fsa-e3||hpcdet|3
fsa-e3|root||1
fsb-e3||hpcdet|parent
"""
CLUSTER = "hpcdet-dev"


def _add_account(name: str, share: int, parent: str = "hpcdet") -> list[str]:
    return ["sacctmgr", "-i", "add", "account", name, f"parent={parent}", f"fairshare={share}",
            f"cluster={CLUSTER}"]


def _add_user(account: str, user: str = "root") -> list[str]:
    return ["sacctmgr", "-i", "add", "user", user, f"account={account}", f"cluster={CLUSTER}"]


def test_one_sacctmgr_call_reads_accounts_and_users(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"sacctmgr": ASSOCS})
    accounts = read_accounts(runner, CLUSTER)
    assert runner.calls == [("sacctmgr", "-n", "-P", "show", "assoc", "where",
                             "cluster=hpcdet-dev", "format=account,user,parentname,share")]
    assert accounts["fsa-e3"] == SlurmAccount("fsa-e3", "hpcdet", "3", frozenset({"root"}))
    assert accounts["root"].parent is None
    assert accounts["fsb-e3"] == SlurmAccount("fsb-e3", "hpcdet", "parent", frozenset())
    assert sorted(accounts) == ["det-default", "fsa-e3", "fsb-e3", "hpcdet", "root"]


def test_what_already_matches_plans_nothing() -> None:
    current = parse_assocs(ASSOCS)
    plan = plan_account_sync(current, {"fsa-e3": 3, "det-default": 1.2}, parent="hpcdet",
                             cluster=CLUSTER, users=["root"])
    assert plan == []


def test_missing_accounts_changed_weights_and_missing_users() -> None:
    current = parse_assocs(ASSOCS)
    plan = plan_account_sync(current, {"det-new": 2, "fsa-e3": 5, "fsb-e3": 1},
                             parent="hpcdet", cluster=CLUSTER, users=["root"])
    assert plan == [
        _add_account("det-new", 2), _add_user("det-new"),
        ["sacctmgr", "-i", "modify", "account", "where", "name=fsa-e3", f"cluster={CLUSTER}",
         "set", "fairshare=5"],
        # "parent" (use the parent's share) differs from 1: set it
        ["sacctmgr", "-i", "modify", "account", "where", "name=fsb-e3", f"cluster={CLUSTER}",
         "set", "fairshare=1"],
        _add_user("fsb-e3"),
    ]


def test_a_missing_parent_is_added_first_and_no_parent_means_root() -> None:
    current = parse_assocs("root|||1\nroot|root||1\n")
    plan = plan_account_sync(current, {"det-a": 1}, parent="hpcdet", cluster=CLUSTER,
                             users=["svc"])
    assert plan == [["sacctmgr", "-i", "add", "account", "hpcdet", f"cluster={CLUSTER}"],
                    _add_account("det-a", 1), _add_user("det-a", "svc")]
    plan = plan_account_sync(current, {"det-a": 1}, parent=None, cluster=CLUSTER, users=[])
    assert plan == [["sacctmgr", "-i", "add", "account", "det-a", "fairshare=1",
                     f"cluster={CLUSTER}"]]


@pytest.mark.parametrize(("weight", "fairshare"), [(0.2, 1), (2.4, 2), (2.6, 3), (100, 100)])
def test_weights_become_integer_fairshares_of_at_least_one(weight: float, fairshare: int) -> None:
    plan = plan_account_sync({}, {"det-a": weight}, parent=None, cluster=CLUSTER, users=[])
    assert plan[0][-2] == f"fairshare={fairshare}"


@pytest.mark.parametrize(("desired", "users", "cluster", "message"), [
    ({"Det-Team": 1}, ["root"], CLUSTER, "not a Slurm account name"),
    ({"det team": 1}, ["root"], CLUSTER, "not a Slurm account name"),
    ({"det-a\nrm -rf /": 1}, ["root"], CLUSTER, "a newline"),
    ({"det-a": 1}, ["root,alice"], CLUSTER, "cannot be passed to sacctmgr"),
    ({"det-a": 1}, ["ro ot"], CLUSTER, "cannot be passed to sacctmgr"),
    ({"det-a": 1}, ["root"], "dev where name=x", "cannot be passed to sacctmgr"),
])
def test_unsafe_names_are_refused_before_any_command(desired: dict[str, float], users: list[str],
                                                     cluster: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        plan_account_sync({}, desired, parent="hpcdet", cluster=cluster, users=users)


def test_an_unsafe_parent_is_refused() -> None:
    with pytest.raises(ValidationError, match="fair_share.parent_account"):
        plan_account_sync({}, {"det-a": 1}, parent="HPC Det", cluster=CLUSTER, users=[])


@pytest.mark.parametrize(("answer", "rights"), [
    ("Administrator\n", True), ("Operator\n", True), ("None\n", False), ("", False),
    (SchedulerError(["sacctmgr"], 1, "", "no such user"), False),
])
def test_operator_rights_come_from_the_admin_level(recorded_slurm: Any, answer: Any,
                                                   rights: bool) -> None:
    runner = recorded_slurm({"sacctmgr": answer})
    assert has_operator_rights(runner, "svc", uid=1000) is rights
    assert runner.calls == [("sacctmgr", "-n", "-P", "show", "user", "svc", "format=adminlevel")]


def test_uid_zero_has_rights_without_asking(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"sacctmgr": "None\n"})
    assert has_operator_rights(runner, "root", uid=0)
    assert runner.calls == []


def test_apply_runs_the_plan_in_order_and_stops_at_a_failure(recorded_slurm: Any) -> None:
    def sacctmgr(argv: Any) -> str:
        if "det-b" in argv:
            raise SchedulerError(argv, 1, "", "sacctmgr: error: Problem talking to the database")
        return ""

    runner = recorded_slurm({"/opt/slurm/bin/sacctmgr": sacctmgr})
    plan = [_add_account("det-a", 1), _add_account("det-b", 1), _add_user("det-b")]
    with pytest.raises(SchedulerError, match="Problem talking to the database"):
        apply(runner, plan, sacctmgr="/opt/slurm/bin/sacctmgr")
    assert [call[4] for call in runner.calls] == ["det-a", "det-b"]
    assert runner.calls[0][0] == "/opt/slurm/bin/sacctmgr"
    runner = recorded_slurm()
    assert apply(runner, plan[:1]) == plan[:1]


def test_what_someone_else_added_meanwhile_is_not_a_failure(recorded_slurm: Any) -> None:
    def sacctmgr(argv: Any) -> str:
        if "det-a" in argv:  # another master process (or an admin) was faster
            raise SchedulerError(argv, 1, " Nothing new added.\n", "")
        return ""

    runner = recorded_slurm({"sacctmgr": sacctmgr})
    plan = [_add_account("det-a", 1), _add_account("det-b", 1)]
    assert apply(runner, plan) == plan[1:]
    assert len(runner.calls) == 2


def test_the_cluster_name_is_slurms(recorded_slurm: Any) -> None:
    config = "Configuration data as of 2026-11-21T14:00:00\nClusterName             = hpcdet-dev\n"
    assert read_cluster_name(recorded_slurm({"scontrol": config})) == "hpcdet-dev"
    with pytest.raises(SchedulerError, match="no ClusterName"):
        read_cluster_name(recorded_slurm({"scontrol": "AccountingStorageHost = x\n"}))


def test_accounts_named_by_a_plan() -> None:
    plan = [_add_account("det-a", 1), _add_user("det-b"),
            ["sacctmgr", "-i", "modify", "account", "where", "name=det-c", "set", "fairshare=2"]]
    assert accounts_named(plan) == {"det-a", "det-b"}
