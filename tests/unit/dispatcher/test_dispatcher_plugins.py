"""Each scheduler package's plug-in and the one registry (hpcdet/dispatcher/registry.py).

A plug-in's declarations agree with the modules it names (backend, command tasks, det's
submit command, batch options), every capability a scheduler lacks says why, and each
scheduler's pending reasons read in its own words.
"""

from __future__ import annotations

import pytest

from hpcdet.dispatcher import backend_class, registry
from hpcdet.dispatcher.batch_commands import batch_command, command_names
from hpcdet.dispatcher.plugin import Capability
from hpcdet.dispatcher.tasks import task_dialect


def test_the_registry_knows_slurm_first_then_pbs() -> None:
    assert registry.names() == ("slurm", "pbs")
    assert [registry.scheduler(name).name for name in registry.names()] == ["slurm", "pbs"]


def test_an_unknown_scheduler_is_named_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown resource manager type 'lsf' \(known: "
                                         r"slurm, pbs\)"):
        registry.scheduler("lsf")


@pytest.mark.parametrize("name", registry.names())
def test_a_plugin_agrees_with_the_modules_it_names(name: str) -> None:
    plugin = registry.scheduler(name)
    assert backend_class(name).name == name
    dialect = task_dialect(name)
    assert (dialect.scheduler, dialect.submit_command) == (name, plugin.submit_command)
    assert command_names()[plugin.submit_command] == name
    assert batch_command(plugin.submit_command).scheduler == name
    assert plugin.args_path() == f"<config>.{plugin.config_section}.{plugin.args_key}"
    assert set(plugin.log_names) == {"out", "err"}


@pytest.mark.parametrize("name", registry.names())
def test_every_missing_capability_says_why(name: str) -> None:
    for capability in registry.scheduler(name).capabilities.named().values():
        assert capability.supported or capability.reason


def test_a_capability_without_its_reason_cannot_be_declared() -> None:
    with pytest.raises(ValueError, match="needs its reason"):
        Capability(False)


def test_pbs_refuses_what_it_cannot_honour_with_its_reason() -> None:
    pbs, slurm = registry.scheduler("pbs"), registry.scheduler("slurm")
    assert slurm.refusal("exclude_nodes", "<config>.log_policies[0]") is None
    assert pbs.refusal("exclude_nodes", "<config>.log_policies[0]") == (
        "<config>.log_policies[0]: PBS cannot keep a job off named nodes (no equivalent of "
        "sbatch --exclude), so the exclude_node action cannot be honoured")
    assert not pbs.capabilities.allocation.supported
    assert not pbs.capabilities.qos.supported


@pytest.mark.parametrize(("name", "job_id", "out", "err"), [
    ("slurm", "42", "slurm-42.out", "slurm-42.err"),
    ("pbs", "12.pbs01", "12.pbs01.OU", "12.pbs01.ER"),
])
def test_log_file_names(name: str, job_id: str, out: str, err: str) -> None:
    plugin = registry.scheduler(name)
    assert (plugin.log_name(job_id, "out"), plugin.log_name(job_id, "err")) == (out, err)


@pytest.mark.parametrize(("name", "job_id", "valid"), [
    ("slurm", "42", True), ("slurm", "42_3", True), ("slurm", "12.pbs01", False),
    ("pbs", "12.pbs01", True), ("pbs", "12[].pbs01", True), ("pbs", "x.pbs01", False),
])
def test_job_id_patterns(name: str, job_id: str, valid: bool) -> None:
    assert bool(registry.scheduler(name).job_id_pattern.match(job_id)) is valid


@pytest.mark.parametrize(("reason", "words"), [
    ("Priority", "waiting for higher-priority jobs (Priority)"),
    ("Resources", "waiting for free resources (Resources)"),
    ("BeginTime", "waiting for its begin time (or requeued: held until then) (BeginTime)"),
    ("ReqNodeNotAvail, UnavailableNodes:node[3-4]",
     "a node it needs is unavailable (down, drained or reserved) (ReqNodeNotAvail, "
     "UnavailableNodes:node[3-4])"),
    ("QOSMaxJobsPerUserLimit", "the owner's QOS allows no more running jobs "
                               "(QOSMaxJobsPerUserLimit)"),
    ("JobHeldAdmin", "held by an administrator (JobHeldAdmin)"),
    ("SomeNewReason", "SomeNewReason"),
    ("None", None),
    ("", None),
    (None, None),
])
def test_slurm_reason_words(reason: str | None, words: str | None) -> None:
    assert registry.scheduler("slurm").reason_words(reason) == words


@pytest.mark.parametrize(("reason", "words"), [
    ("Not Running: Insufficient amount of resource: ncpus (R: 64 A: 4)",
     "waiting for free resources (ncpus (R: 64 A: 4))"),
    ("Not Running: Not enough free nodes available", "waiting for free nodes"),
    ("Resources", "Resources"),
    (None, None),
])
def test_pbs_reason_words(reason: str | None, words: str | None) -> None:
    assert registry.scheduler("pbs").reason_words(reason) == words
