"""The master's flow: sanity, template merge, master defaults, schema defaults, completeness."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hpcdet.errors import ConfigError
from hpcdet.master.scheduling.submission import default_storage, effective_config
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings
from hpcdet.master.settings.hardening import HardeningSettings

USER: dict[str, Any] = {
    "entrypoint": "python3 train.py",
    "hyperparameters": {"lr": 0.1},
    "searcher": {"name": "single", "metric": "loss"},
}


@pytest.fixture
def settings(tmp_path: Path) -> MasterSettings:
    rm = ResourceManagerSettings(job_storage_root=str(tmp_path / "jobs"))
    return MasterSettings(resource_manager=rm)


def test_the_master_fills_name_storage_and_seed(settings: MasterSettings) -> None:
    config = effective_config(settings, USER)
    assert config["name"] == "Experiment"
    assert config["checkpoint_storage"]["type"] == "shared_fs"
    assert config["checkpoint_storage"]["host_path"] == default_storage(settings)["host_path"]
    assert 0 <= config["reproducibility"]["experiment_seed"] < 2**31
    assert config["max_restarts"] == 5 and config["resources"]["slots_per_trial"] == 1
    assert config["searcher"]["smaller_is_better"] is True
    assert config["slurm"] == {"slots_per_node": None, "gpu_type": None, "sbatch_args": None,
                               "launcher": None}


def test_what_the_user_gave_wins_over_the_master(settings: MasterSettings) -> None:
    # /ckpt must be a storage root the site allows (security.storage_roots).
    settings = replace(settings, hardening=HardeningSettings(storage_roots=("/ckpt",)))
    user = {**USER, "name": "mine", "reproducibility": {"experiment_seed": 42},
            "checkpoint_storage": {"type": "directory", "container_path": "/ckpt"}}
    config = effective_config(settings, user)
    assert config["name"] == "mine" and config["reproducibility"]["experiment_seed"] == 42
    assert config["checkpoint_storage"] == {
        "type": "directory", "container_path": "/ckpt", "save_experiment_best": 0,
        "save_trial_best": 1, "save_trial_latest": 1}


def test_a_partial_storage_is_completed_by_the_clusters(settings: MasterSettings) -> None:
    config = effective_config(settings, {**USER, "checkpoint_storage": {"save_trial_best": 3}})
    storage = config["checkpoint_storage"]
    assert storage["type"] == "shared_fs" and storage["save_trial_best"] == 3
    assert storage["host_path"] == default_storage(settings)["host_path"]


def test_the_template_is_merged_under_the_config(settings: MasterSettings) -> None:
    template = {"name": "from-template", "description": "shared",
                "searcher": {"name": "random", "metric": "acc", "max_trials": 4},
                "slurm": {"sbatch_args": ["--time=10"]}}
    config = effective_config(settings, {**USER, "slurm": {"sbatch_args": ["--mem=1G"]}},
                              template=template)
    assert config["name"] == "from-template" and config["description"] == "shared"
    assert config["searcher"]["name"] == "single" and config["searcher"]["metric"] == "loss"
    assert "max_trials" not in config["searcher"]  # another searcher's field stays out
    assert config["slurm"]["sbatch_args"] == ["--time=10", "--mem=1G"]


def test_config_and_template_errors_come_together(settings: MasterSettings) -> None:
    with pytest.raises(ConfigError) as info:
        effective_config(settings, {**USER, "max_restarts": -1},
                         template={"resources": {"slots_per_trial": "two"}})
    assert info.value.title == "the experiment config is invalid"
    assert info.value.errors == [
        "<config>.max_restarts: must be >= 0, got -1",
        "<template>.resources.slots_per_trial: must be an integer, got 'two'"]


def test_an_incomplete_config_names_what_is_missing(settings: MasterSettings) -> None:
    with pytest.raises(ConfigError) as info:
        effective_config(settings, {"searcher": {"name": "random"}})
    assert info.value.title == "the experiment config is incomplete"
    assert info.value.errors == [
        "<config>.searcher: max_trials is a required property",
        "<config>.searcher: metric is a required property",
        "<config>: entrypoint is a required property"]


def test_a_template_can_complete_a_config(settings: MasterSettings) -> None:
    config = effective_config(settings, {"searcher": {"name": "random"}}, template={
        "entrypoint": "python3 t.py", "searcher": {"metric": "loss", "max_trials": 3}})
    assert config["searcher"]["max_trials"] == 3 and config["entrypoint"] == "python3 t.py"


def test_the_cluster_checks_still_apply(settings: MasterSettings) -> None:
    with pytest.raises(ConfigError) as info:
        effective_config(settings, {**USER, "resources": {"slots_per_trial": 3},
                                    "slurm": {"slots_per_node": 2}})
    assert info.value.errors == [
        "<config>.resources.slots_per_trial: 3 is not a multiple of slurm.slots_per_node (2)"]


def test_the_users_document_is_not_modified(settings: MasterSettings) -> None:
    user = {**USER, "resources": {"slots_per_trial": 2}}
    effective_config(settings, user, template={"resources": {"resource_pool": "p"}})
    assert user == {**USER, "resources": {"slots_per_trial": 2}}
