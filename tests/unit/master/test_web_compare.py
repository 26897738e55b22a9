"""``/compare``: trials of different experiments side by side, only those the viewer may see.

Experiments and trials are seeded into the master's database directly (no trial needs to
run for a comparison); visibility is the workspaces' (a member of none sees nothing of it).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Experiment, Trial, Workspace
from hpcdet.master.web.compare import BadList, hparam_rows, id_list
from hpcdet.master.web.experiment import constant_hparams

NASTY = "<b>x</b>&\"'"
CONFIG: dict[str, Any] = {"name": "c", "searcher": {"name": "random", "metric": "loss",
                                                    "smaller_is_better": True}}


def seed(app: Flask, name: str, workspace: str | None,
         trials: list[tuple[dict[str, Any], float]]) -> list[int]:
    """An experiment of alice's with trials of these hparams and best losses: its id, then
    the trials' ids."""
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session, session.begin():
        ws = session.query(Workspace).filter_by(name=workspace).one() if workspace else None
        exp = Experiment(name=name, owner="alice", state="COMPLETED", config=CONFIG,
                         original_config="", context=b"", searcher_name="random",
                         workspace_id=ws.id if ws else None)
        session.add(exp)
        session.flush()
        ids = [exp.id]
        for index, (hparams, loss) in enumerate(trials):
            trial = Trial(experiment_id=exp.id, state="COMPLETED", hparams=hparams, seed=index,
                          token="t", job_dir="", steps_completed=100,
                          best_validation={"steps_completed": 100, "metrics": {"loss": loss}})
            session.add(trial)
            session.flush()
            ids.append(trial.id)
        return ids


def page(client: FlaskClient, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.data
    return response.get_data(as_text=True)


def compared(html: str) -> list[int]:
    match = re.search(r'<script type="application/json" id="compare-data">(.*?)</script>',
                      html, re.S)
    return [t["id"] for t in json.loads(match.group(1))["trials"]] if match else []


@pytest.fixture
def two_experiments(app: Flask, client: FlaskClient) -> tuple[list[int], list[int]]:
    """alice's "team" experiment (bob a viewer) and her private one (workspace "own")."""
    app.config["HPCDET_SETTINGS"] = replace(app.config["HPCDET_SETTINGS"], require_user=True)
    alice = {"X-Hpcdet-User": "alice"}
    for name in ("team", "own"):
        client.post("/api/v1/workspaces", json={"name": name}, headers=alice)
    client.put("/api/v1/workspaces/team/members/bob", json={"role": "viewer"}, headers=alice)
    team = seed(app, NASTY, "team", [({"lr": 0.1, "opt": {"kind": "adam"}}, 0.5),
                                     ({"lr": 0.01, "opt": {"kind": "adam"}}, 0.3)])
    own = seed(app, "own", "own", [({"lr": 0.1, "opt": {"kind": NASTY}, "extra": 1}, 0.4)])
    return team, own  # [experiment id, trial ids...]


def test_trials_of_two_experiments_with_the_differing_hparams_first(
        client: FlaskClient, two_experiments: tuple[list[int], list[int]]) -> None:
    team, own = two_experiments
    client.set_cookie("hpcdet_user", "alice")
    html = page(client, f"/compare?trials={team[1]},{own[1]}")
    assert compared(html) == [team[1], own[1]]
    rows = re.findall(r'<tr data-hparam="([^"]*)"( class="differs" data-differs)?>', html)
    assert rows == [("extra", ' class="differs" data-differs'),
                    ("opt.kind", ' class="differs" data-differs'), ("lr", "")]
    assert f"<td>{NASTY}</td>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    # The experiments' best trials: the team's second (0.3) and the private one's only.
    html = page(client, f"/compare?experiments={team[0]},{own[0]},999")
    assert compared(html) == [team[2], own[1]]
    assert "experiment 999: not found" in html


def test_the_viewer_sees_only_trials_the_api_shows_them(
        client: FlaskClient, two_experiments: tuple[list[int], list[int]]) -> None:
    team, own = two_experiments
    client.set_cookie("hpcdet_user", "bob")
    html = page(client, f"/compare?trials={team[1]},{own[1]},999")
    assert compared(html) == [team[1]]
    assert re.findall(r"<p class=\"error\" data-missing>(.*?)</p>", html) == [
        f"trial {own[1]}: not found", "trial 999: not found"]
    assert client.get(f"/api/v1/trials/{own[1]}", headers={"X-Hpcdet-User": "bob"}
                      ).status_code == 404
    assert compared(page(client, f"/compare?experiments={own[0]}")) == []


def test_a_malformed_list_is_a_400_page_naming_it(client: FlaskClient) -> None:
    for query in ("trials=1,x", "trials=1;2", "experiments=-1", "trials=" + "1" * 13,
                  "trials=%EF%BC%91", "trials=%3Cb%3E"):
        html = page(client, f"/compare?{query}", status=400)
        assert re.search(r'<p class="error" role="alert" data-error>(trials|experiments): ',
                         html), query
        assert "<b>" not in html


def test_an_empty_comparison_says_how_to_start(client: FlaskClient) -> None:
    html = page(client, "/compare")
    assert 'name="trials" value=""' in html and "experiments list" in html


def test_id_lists() -> None:
    assert id_list("trials", " 3, 1,,3 ") == [3, 1]
    assert id_list("trials", None) == []
    with pytest.raises(BadList, match="at most 100"):
        id_list("trials", ",".join(str(n) for n in range(101)))


def test_hparam_rows_put_the_differing_first() -> None:
    rows = hparam_rows([{"a": 1, "b": "x"}, {"a": 1, "b": "y", "c": True}])
    assert [(r["name"], r["values"], r["differs"]) for r in rows] == [
        ("b", ["x", "y"], True), ("c", ["", "true"], True), ("a", ["1", "1"], False)]


def test_constant_hparams_need_the_same_value_in_every_trial() -> None:
    trials = [{"hparams": {"a": 1, "o": {"m": 0.9}, "b": 1}},
              {"hparams": {"a": 1, "o": {"m": 0.9}, "b": True}},
              {"hparams": {"a": 1, "o": {"m": 0.9}}}]
    assert constant_hparams(trials) == {"a": 1, "o.m": 0.9}
    assert constant_hparams(trials[:1]) == {}  # one trial: nothing to compare against
