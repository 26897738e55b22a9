"""What the cluster says it is (hpcdet.dispatcher.slurm.config): parsed from ``scontrol show
config`` as the dev cluster's two releases print it (recorded: 22.05.8 from Debian 12,
25.11.7 built from SchedMD's source; docs/dev-cluster.md, "Two Slurm versions")."""

from __future__ import annotations

from typing import Any

import pytest

from hpcdet.dispatcher import ArrayLimits
from hpcdet.dispatcher.commands import UnparseableOutputError
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.config import parse_config

SHOW_CONFIG_2205 = """\
Configuration data as of 2026-11-30T06:47:01
AccountingStorageType   = accounting_storage/slurmdbd
CryptoType              = crypto/munge
MaxArraySize            = 1001
MaxJobCount             = 20000
SlurmctldParameters     = preempt_send_user_signal
SLURM_VERSION           = 22.05.8
"""
SHOW_CONFIG_2511 = """\
Configuration data as of 2026-11-30T06:46:55
AuthAltTypes            = auth/jwt
CredType                = cred/munge
MaxArraySize            = 1001
MaxJobCount             = 20000
SlurmctldParameters     = preempt_send_user_signal,enable_expedited_requeue
SLURM_VERSION           = 25.11.7
"""


def test_each_release_reads_as_what_it_says() -> None:
    old, new = parse_config(SHOW_CONFIG_2205), parse_config(SHOW_CONFIG_2511)
    assert (old.version, old.version_text, new.version) == ((22, 5, 8), "22.05.8", (25, 11, 7))
    assert old.array_limits == new.array_limits == ArrayLimits(1001, 20000)
    assert new.ctld_parameters == {"preempt_send_user_signal", "enable_expedited_requeue"}


@pytest.mark.parametrize(("version", "parameters", "allowed"), [
    ("25.11.7", "preempt_send_user_signal,enable_expedited_requeue", True),
    ("26.05.0", "enable_expedited_requeue", True),
    ("25.11.7", "preempt_send_user_signal", False),  # the release has it, the site said no
    ("25.11.7", "(null)", False),
    ("25.05.3", "enable_expedited_requeue", False),   # an unknown word to an older release
])
def test_expedited_requeue_needs_the_release_and_the_sites_leave(
        version: str, parameters: str, allowed: bool) -> None:
    config = parse_config(f"SlurmctldParameters     = {parameters}\nSLURM_VERSION = {version}\n")
    assert config.expedited_requeue is allowed


def test_output_without_a_version_is_refused_not_guessed() -> None:
    with pytest.raises(UnparseableOutputError, match="SLURM_VERSION"):
        parse_config("Configuration data as of 2026-11-30\nMaxArraySize = 1001\n")


def test_the_backend_reads_it_once_for_everything(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"scontrol": SHOW_CONFIG_2511})
    backend = SlurmBackend(runner=runner)
    assert backend.cluster_config().expedited_requeue
    assert backend.array_limits() == ArrayLimits(1001, 20000)
    assert runner.calls == [("scontrol", "show", "config")]
