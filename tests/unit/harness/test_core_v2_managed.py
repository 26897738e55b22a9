"""``core_v2`` inside a trial the master started: it is that trial's Core API, and the
script's Config is ignored (Determined's rule); outside any master, nothing to report to."""

from __future__ import annotations

import pathlib
import warnings

import pytest
from harness_fakes import FakeMaster

from hpcdet.experimental import core_v2


def test_in_a_managed_trial_core_v2_is_the_trials_core_api(
        in_job: pathlib.Path, fake_master: FakeMaster) -> None:
    core_v2.init(config=core_v2.Config(name="ignored in a managed trial"))
    try:
        assert core_v2.info is not None and core_v2.train is not None
        assert core_v2.info.trial_id == 11
        core_v2.train.report_training_metrics(steps_completed=3, metrics={"loss": 0.5})
    finally:
        core_v2.close()
    assert core_v2.train is None and core_v2.info is None
    [report] = fake_master.reports("training")
    assert report["steps_completed"] == 3 and report["metrics"] == {"loss": 0.5}


def test_defaults_and_unmanaged_are_merged_with_determineds_warning(
        off_cluster: None) -> None:
    from hpcdet.experimental.core_v2._core_v2 import _merged

    with pytest.warns(FutureWarning, match="DefaultConfig"):
        defaults = core_v2.DefaultConfig(name="run", external_experiment_id=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        unmanaged = core_v2.UnmanagedConfig(external_experiment_id="e", workspace="w")
    merged = _merged(None, defaults, unmanaged)
    assert merged is not None
    assert (merged.name, merged.external_experiment_id, merged.workspace) == ("run", "e", "w")
    with pytest.raises(ValueError, match="specify `config`"):
        core_v2.init()
