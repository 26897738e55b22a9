"""Loading trial.json and the token."""

from __future__ import annotations

import json
import pathlib

import pytest
from harness_fakes import TOKEN, write_job_dir

from hpcdet.job.trial_info import TrialInfoError, load_trial_info, read_token


def _env(job: pathlib.Path) -> dict[str, str]:
    return {"DET_TRIAL_INFO": str(job / "trial.json"), "DET_JOB_DIR": str(job)}


def test_loads_trial_json_and_token(tmp_path: pathlib.Path) -> None:
    job = write_job_dir(tmp_path, "http://login:8080", latest_checkpoint="abc", extra_key=1)
    info = load_trial_info(_env(job))
    assert (info.experiment_id, info.trial_id, info.run_id, info.trial_seed) == (7, 11, 1, 1234)
    assert info.hparams == {"lr": 0.1}
    assert info.latest_checkpoint == "abc"
    assert info.entrypoint == "python3 train.py"
    assert info.extra == {"extra_key": 1}
    assert read_token(info) == TOKEN
    assert TOKEN not in repr(info)


def test_token_is_relative_to_the_job_dir_not_the_cwd(tmp_path: pathlib.Path) -> None:
    job = write_job_dir(tmp_path / "job", "http://m")
    info = load_trial_info({"DET_TRIAL_INFO": str(job / "trial.json")})
    assert info.job_dir == str(job)
    assert read_token(info) == TOKEN


def test_not_in_a_job() -> None:
    with pytest.raises(TrialInfoError, match=r"\$DET_TRIAL_INFO is not set"):
        load_trial_info({})


def test_missing_file(tmp_path: pathlib.Path) -> None:
    with pytest.raises(TrialInfoError, match="cannot read .*trial.json"):
        load_trial_info({"DET_TRIAL_INFO": str(tmp_path / "trial.json")})


def test_malformed_json(tmp_path: pathlib.Path) -> None:
    (tmp_path / "trial.json").write_text("{not json")
    with pytest.raises(TrialInfoError, match="not valid JSON"):
        load_trial_info(_env(tmp_path))


def test_missing_and_mistyped_fields_are_all_listed(tmp_path: pathlib.Path) -> None:
    (tmp_path / "trial.json").write_text(json.dumps({"trial_id": "11", "experiment_id": True}))
    with pytest.raises(TrialInfoError) as caught:
        load_trial_info(_env(tmp_path))
    message = str(caught.value)
    assert "trial_id must be an integer, not str" in message
    assert "experiment_id must be an integer, not bool" in message
    assert "checkpoint_dir is missing" in message


def test_missing_or_empty_token(tmp_path: pathlib.Path) -> None:
    job = write_job_dir(tmp_path, "http://m")
    info = load_trial_info(_env(job))
    (job / ".token").write_text("\n")
    with pytest.raises(TrialInfoError, match="is empty"):
        read_token(info)
    (job / ".token").unlink()
    with pytest.raises(TrialInfoError, match="cannot read the trial token"):
        read_token(info)
