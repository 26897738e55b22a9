"""The model registry end to end (issue 16): an ASHA search of the digits example on the dev
cluster; its best checkpoint registered as version 1 with ``det model register-version``,
another checkpoint registered as version 2 from the trial page's link and the form it
opens (headless Chromium clicks it, as a person would); ``det checkpoint download`` (and
``det model download``) fetch version 1, and ``hpcdet.pytorch.load_trial_from_checkpoint_path``
loads it with the weights the trial saved, tensor for tensor. Then checkpoint GC, run with a
policy that keeps nothing, deletes every checkpoint of the experiment but the two registered.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from it_helpers import REPO, LiveMaster, load_json

pytestmark = [pytest.mark.slurm, pytest.mark.torch, pytest.mark.browser]
DIGITS = REPO / "examples" / "digits"


@pytest.fixture
def master_settings(tmp_path: Path) -> dict[str, Any]:
    """Checkpoints go to ``tmp_path/ckpt``: a storage root the site allows."""
    return {"security": {"storage_roots": [str(tmp_path / "ckpt"), str(tmp_path / "jobs")]}}


def small_asha(tmp_path: Path) -> Path:
    """examples/digits/asha.yaml made quick: 4 trials, rungs at 2 and 4 epochs."""
    config = yaml.safe_load((DIGITS / "asha.yaml").read_text())
    config["searcher"].update(max_trials=4, max_time=4, max_rungs=2)
    config["reproducibility"] = {"experiment_seed": 3}
    config["checkpoint_storage"] = {"type": "shared_fs", "host_path": str(tmp_path / "ckpt")}
    path = tmp_path / "asha-small.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_search(master: LiveMaster, config: Path) -> dict[str, Any]:
    out = master.det("experiment", "create", str(config), str(DIGITS), check=True).stdout
    exp_id = int(next(li for li in out.splitlines() if li.startswith("Created experiment"))
                 .split()[-1])
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        answer = dict(load_json(master.det("experiment", "describe", str(exp_id), "--json",
                                           check=True).stdout))
        if answer["experiment"]["ended_at"]:
            assert answer["experiment"]["state"] == "COMPLETED", master.log.read_text()[-3000:]
            return answer
        time.sleep(2)
    raise AssertionError(f"experiment {exp_id} did not end:\n{master.log.read_text()[-3000:]}")


# SQLite only: the registry's routes are unit-tested on both databases
# (tests/unit/master/test_master_model_registry.py); this is the end-to-end path.
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_register_download_load_and_keep_the_best_of_an_asha_search(
        master: LiveMaster, tmp_path: Path, browser: Any, test_output: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    answer = run_search(master, small_asha(tmp_path))
    exp_id = answer["experiment"]["id"]
    best = load_json(master.det("experiment", "list-checkpoints", str(exp_id), "--best", "1",
                                "--json", check=True).stdout)["checkpoints"][0]
    master.det("model", "create", "digits-mlp", "--description", "ASHA's best", check=True)
    out = master.det("m", "register-version", "digits-mlp", best["uuid"], "--name", "best",
                     "--comment", f"experiment {exp_id}", check=True).stdout
    assert "as version 1 of model digits-mlp" in out

    other = _another_checkpoint(master, exp_id, best["uuid"])
    _register_on_the_web(master, browser, other, test_output)
    versions = load_json(master.det("m", "versions", "digits-mlp", "--json",
                                    check=True).stdout)["model_versions"]
    assert [(v["version"], v["checkpoint_uuid"]) for v in versions] == [
        (1, best["uuid"]), (2, other["uuid"])]

    monkeypatch.chdir(tmp_path)
    master.det("checkpoint", "download", best["uuid"], "-o", str(tmp_path / "v1"), check=True)
    master.det("m", "download", "digits-mlp", "--version", "1", "-o", str(tmp_path / "v1b"),
               check=True)
    saved = tmp_path / "ckpt" / best["uuid"] / "state_dict.pth"
    for copy in ("v1", "v1b"):
        assert (tmp_path / copy / "state_dict.pth").read_bytes() == saved.read_bytes()
    _load_and_compare(tmp_path / "v1", saved, best["trial_id"], answer)

    kept = _collect_everything_but_the_registered(master, exp_id)
    assert kept == {best["uuid"], other["uuid"]}
    for uuid in kept:
        assert (tmp_path / "ckpt" / uuid / "state_dict.pth").is_file()


def _another_checkpoint(master: LiveMaster, exp_id: int, best: str) -> dict[str, Any]:
    """The best checkpoint of another trial (still ACTIVE after the trials' GC)."""
    rows = load_json(master.det("experiment", "list-checkpoints", str(exp_id), "--json",
                                check=True).stdout)["checkpoints"]
    scored = [c for c in rows if c["uuid"] != best and c.get("searcher_metric_value") is not None]
    return min(scored, key=lambda c: c["searcher_metric_value"])


def _register_on_the_web(master: LiveMaster, browser: Any, checkpoint: dict[str, Any],
                         output: Path) -> None:
    """On the trial page: follow the checkpoint's register link, pick the model, submit."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": "hpcdet_user", "value": "tester", "url": master.url}])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{master.url}/trials/{checkpoint['trial_id']}")
        page.click(f'a[data-register-checkpoint="{checkpoint["uuid"]}"]')
        page.wait_for_selector("form[data-register-version]")
        page.select_option("form[data-register-version] select[name=model]", "digits-mlp")
        page.fill("form[data-register-version] input[name=name]", "runner-up")
        page.fill("form[data-register-version] input[name=comment]", "registered on the web")
        page.click("form[data-register-version] button[type=submit]")
        page.wait_for_url(f"{master.url}/models/digits-mlp")
        row = page.locator('#versions tr[data-version="2"]')
        assert row.get_attribute("data-checkpoint") == checkpoint["uuid"]
        assert "registered on the web" in row.inner_text()
        page.screenshot(path=str(output / "model-registry-model.png"), full_page=True)
        assert errors == []
    finally:
        context.close()


def _load_and_compare(directory: Path, saved: Path, trial_id: int,
                      answer: dict[str, Any]) -> None:
    """load_trial_from_checkpoint_path gives the model whose weights the trial saved."""
    import torch

    import hpcdet.pytorch

    sys.path.insert(0, str(DIGITS))  # the checkpoint names model_def:DigitsTrial
    try:
        trial: Any = hpcdet.pytorch.load_trial_from_checkpoint_path(directory)
    finally:
        sys.path.remove(str(DIGITS))
    hparams = next(t["hparams"] for t in answer["trials"] if t["id"] == trial_id)
    assert trial.context.get_hparams() == hparams
    loaded = trial.model.state_dict()
    original = torch.load(saved, map_location="cpu", weights_only=False)["models_state_dict"][0]
    assert sorted(loaded) == sorted(original)
    for name, tensor in original.items():
        assert torch.equal(loaded[name].cpu(), tensor), name


def _collect_everything_but_the_registered(master: LiveMaster, exp_id: int) -> set[str]:
    """Set the experiment's GC policy to keep nothing, run checkpoint GC on the master's
    database and files, and return the uuids still ACTIVE."""
    from sqlalchemy import select, update

    from hpcdet.master.db import make_engine, make_session_factory, session_scope
    from hpcdet.master.models import Checkpoint, Experiment, Trial
    from hpcdet.master.reports.checkpoint_gc import CheckpointCollector
    from hpcdet.master.settings.core import load_settings

    settings = load_settings(str(master.log.parent / "master.yaml"))
    engine = make_engine(master.db_url)
    try:
        sessions = make_session_factory(engine)
        with session_scope(sessions) as session:
            exp = session.get_one(Experiment, exp_id)
            storage = dict(exp.config["checkpoint_storage"], save_experiment_best=0,
                           save_trial_best=0, save_trial_latest=0)
            session.execute(update(Experiment).where(Experiment.id == exp_id).values(
                config={**exp.config, "checkpoint_storage": storage}))
        deleted, failed = CheckpointCollector(sessions, settings).collect_experiment(exp_id)
        assert deleted and failed == []
        with session_scope(sessions) as session:
            return set(session.scalars(
                select(Checkpoint.uuid).join(Trial, Trial.id == Checkpoint.trial_id)
                .where(Trial.experiment_id == exp_id, Checkpoint.state == "ACTIVE")))
    finally:
        engine.dispose()
