"""``det experiment`` against a fake master: what is sent, what is shown."""

from __future__ import annotations

import base64
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import Result

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)
CONFIG = "name: mnist  # keep me\nentrypoint: python train.py\n"


def _experiment(state: str = "ACTIVE", **extra: Any) -> dict[str, Any]:
    return {"id": 5, "name": "mnist", "description": "", "labels": [], "state": state,
            "owner": "alice", "searcher": "single", "resource_pool": "gpu",
            "created_at": "2024-05-01T12:00:00+00:00", "ended_at": None, "num_trials": 1,
            **extra}


def _trial(tid: int = 7, state: str = "QUEUED", **extra: Any) -> dict[str, Any]:
    return {"id": tid, "experiment_id": 5, "state": state, "hparams": {"lr": 0.1},
            "seed": 3, "restarts": 0, "steps_completed": 0, "best_validation": None,
            "latest_checkpoint": None, "job_ids": [], "nodes": [],
            "created_at": "2024-05-01T12:00:01+00:00", "ended_at": None, **extra}


@pytest.fixture
def project(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "c.yaml").write_text(CONFIG)
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    (code / "train.pyc").write_text("")
    return str(tmp_path / "c.yaml"), str(code)


def test_create_sends_the_original_text_and_the_context(det: Det, fake_master: FakeMaster,
                                                        project: tuple[str, str]) -> None:
    fake_master.add("POST", "/experiments",
                    {"experiment": _experiment(), "warnings": ["slurm.gres is ignored"]},
                    status=201)
    result = det("experiment", "create", *project)
    assert result.exit_code == 0, result.output
    assert result.stdout == "Created experiment 5\n"
    assert "Warning: slurm.gres is ignored\n" in result.stderr
    body = json.loads(fake_master.sent("POST", "/experiments")[0].content)
    assert body["config"] == CONFIG and body["dry_run"] is False
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(body["context"])), mode="r:gz") as t:
        assert t.getnames() == ["train.py"]


def test_dry_run_prints_only_the_scripts(det: Det, fake_master: FakeMaster,
                                         project: tuple[str, str]) -> None:
    scripts = ["#!/bin/bash\n#SBATCH --job-name=t1\nsrun a\n", "#!/bin/bash\nsrun b"]
    fake_master.add("POST", "/experiments", {
        "dry_run": True, "warnings": ["w"],
        "jobs": [{"trial": i + 1, "script": s, "argv": ["sbatch"]} for i, s in enumerate(scripts)]
    })
    result = det("e", "create", "--dry-run", *project)
    assert result.exit_code == 0, result.output
    assert result.stdout == scripts[0] + scripts[1] + "\n"
    assert "Warning: w" in result.stderr
    assert json.loads(fake_master.requests[0].content)["dry_run"] is True


def test_create_json(det: Det, fake_master: FakeMaster, project: tuple[str, str]) -> None:
    answer = {"experiment": _experiment(), "warnings": []}
    fake_master.add("POST", "/experiments", answer, status=201)
    result = det("e", "create", "--json", *project)
    assert json.loads(result.stdout) == answer


@pytest.mark.parametrize("flags", [["--follow", "--dry-run"], ["-f", "--json"]])
def test_create_refuses_meaningless_flag_pairs(det: Det, project: tuple[str, str],
                                               flags: list[str]) -> None:
    result = det("e", "create", *flags, *project)
    assert result.exit_code == 2
    assert "cannot be used together" in result.stderr


def _logs(*lines: tuple[int, str], state: str = "RUNNING") -> dict[str, Any]:
    return {"logs": [{"id": i, "rank": 0, "stream": "stdout", "line": text, "job_id": "42"}
                     for i, text in lines],
            "last_id": max([0, *(i for i, _ in lines)]), "trial_state": state}


def _follow_setup(fake_master: FakeMaster, final: str) -> None:
    fake_master.add("POST", "/experiments", {"experiment": _experiment(), "warnings": []},
                    status=201)
    queued_job = {"job_id": "42", "run_id": 1, "native_state": "PENDING",
                  "reason": "Resources", "exit_code": None, "nodes": [], "submitted_at": None}
    running_job = {**queued_job, "native_state": "RUNNING", "reason": "None",
                   "nodes": ["node01"]}
    fake_master.add("GET", "/experiments/5", {"experiment": _experiment()},
                    {"experiment": _experiment("STOPPING_COMPLETED")},
                    {"experiment": _experiment(final)})
    fake_master.add("GET", "/experiments/5/trials", {"trials": []}, {"trials": [_trial()]})
    fake_master.add("GET", "/trials/7",
                    {"trial": _trial(jobs=[queued_job]), "checkpoints": []},
                    {"trial": _trial(state="RUNNING", jobs=[running_job]), "checkpoints": []},
                    {"trial": _trial(state=final, jobs=[running_job]), "checkpoints": []})
    fake_master.add("GET", "/trials/7/logs", _logs(state="QUEUED"),
                    _logs(state="RUNNING"), _logs((1, "epoch 1"), (2, "epoch 2")),
                    _logs(state=final))


def test_create_follow_streams_logs_and_progress(det: Det, fake_master: FakeMaster,
                                                 project: tuple[str, str]) -> None:
    _follow_setup(fake_master, "COMPLETED")
    result = det("e", "create", "--follow", *project)
    assert result.exit_code == 0, result.output
    assert result.stdout == "Created experiment 5\n[rank 0] epoch 1\n[rank 0] epoch 2\n"
    progress = [line for line in result.stderr.splitlines() if not line.startswith("Prep")]
    assert progress == [
        "Watch it in a browser: http://localhost:8080/experiments/5",
        "experiment 5: ACTIVE",
        "trial 7: QUEUED (Slurm job 42, reason: Resources)",
        "trial 7: RUNNING (Slurm job 42, on node01)",
        "trial 7: COMPLETED (Slurm job 42)",
        "experiment 5: STOPPING_COMPLETED",
        "Experiment 5 ended COMPLETED",
    ]
    afters = [r.url.params["after"] for r in fake_master.sent("GET", "/trials/7/logs")]
    assert afters == ["0", "0", "0", "2"]


def test_create_follow_exits_1_unless_completed(det: Det, fake_master: FakeMaster,
                                                project: tuple[str, str]) -> None:
    _follow_setup(fake_master, "ERROR")
    result = det("e", "create", "-f", *project)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == "Experiment 5 ended ERROR"


def test_create_follow_when_no_trial_was_ever_created(det: Det, fake_master: FakeMaster,
                                                      project: tuple[str, str]) -> None:
    fake_master.add("POST", "/experiments", {"experiment": _experiment(), "warnings": []})
    fake_master.add("GET", "/experiments/5", {"experiment": _experiment("ERROR")})
    fake_master.add("GET", "/experiments/5/trials", {"trials": []})
    result = det("e", "create", "-f", *project)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-2:] == ["experiment 5: ERROR", "Experiment 5 ended ERROR"]


def test_list_shows_only_mine_unless_all(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/experiments", {"experiments": [_experiment(archived=False)],
                                            "total": 1})
    result = det("e", "ls")
    assert result.exit_code == 0, result.output
    header, rule, row = result.stdout.splitlines()
    # Determined's columns (det experiment list)
    assert header.split() == ["ID", "Owner", "Name", "Parent", "ID", "State", "Progress",
                              "Started", "Ended", "Resource", "Pool"]
    assert row.split()[:6] == ["5", "alice", "mnist", "-", "ACTIVE", "-"]
    assert row.split()[-1] == "gpu"
    assert dict(fake_master.requests[0].url.params) == {"limit": "100", "offset": "0",
                                                       "owner": "alice"}
    every = det("e", "list", "--all", "--limit", "5")
    assert dict(fake_master.requests[1].url.params) == {"limit": "5", "offset": "0",
                                                       "archived": "true"}
    assert every.stdout.splitlines()[0].split()[-1] == "Archived"
    assert every.stdout.splitlines()[2].split()[-1] == "no"


def test_list_says_when_there_are_more(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/experiments", {"experiments": [_experiment()], "total": 3})
    result = det("e", "list", "--limit", "1")
    assert "3 experiments in all" in result.stderr


def test_list_json(det: Det, fake_master: FakeMaster) -> None:
    answer = {"experiments": [_experiment()], "total": 1}
    fake_master.add("GET", "/experiments", answer)
    assert json.loads(det("e", "list", "--json").stdout) == answer


def test_describe(det: Det, fake_master: FakeMaster) -> None:
    history = [{"from": None, "to": "ACTIVE", "at": "2024-05-01T12:00:00+00:00",
                "cause": "created", "actor": "alice"}]
    fake_master.add("GET", "/experiments/5", {
        "experiment": _experiment(config={"name": "mnist"}, history=history)})
    fake_master.add("GET", "/experiments/5/trials", {
        "trials": [_trial(job_ids=["42"])],
        "pagination": {"offset": 0, "limit": 1000, "total": 1, "startIndex": 0, "endIndex": 1}})
    result = det("e", "describe", "5")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("Experiment 5: mnist (ACTIVE)\n")
    assert "  owner:           alice" in out
    assert "Trials (* best):\nID  State" in out and "lr=0.1" in out
    assert "State history:\nAt" in out and "created" in out


def test_describe_json_keeps_every_trial_under_trials(det: Det,
                                                     fake_master: FakeMaster) -> None:
    # The master pages the trials; --json still prints them all with the experiment, the
    # shape scripts and the integration tests read.
    fake_master.add("GET", "/experiments/5", {"experiment": _experiment(num_trials=3)})
    fake_master.add("GET", "/experiments/5/trials",
                    {"trials": [_trial(7), _trial(8)], "pagination": {"total": 3}},
                    {"trials": [_trial(9)], "pagination": {"total": 3}})
    result = det("e", "describe", "5", "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["experiment"]["id"] == 5
    assert [t["id"] for t in answer["trials"]] == [7, 8, 9]
    pages = [dict(r.url.params) for r in fake_master.sent("GET", "/experiments/5/trials")]
    assert [(p["offset"], p["limit"], p["sortBy"]) for p in pages] == [
        ("0", "1000", "id"), ("2", "1000", "id")]


def test_kill(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("POST", "/experiments/5/kill",
                    {"experiment": _experiment("STOPPING_KILLED")})
    result = det("e", "kill", "5")
    assert (result.exit_code, result.stdout) == (0, "Experiment 5: STOPPING_KILLED\n")


def test_list_trials_alias(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/experiments/5/trials", {"trials": [_trial(), _trial(8)]})
    result = det("e", "lt", "5")
    assert [line.split()[0] for line in result.stdout.splitlines()[2:]] == ["7", "8"]


def test_logs_reads_the_first_trial(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/experiments/5/trials", {"trials": [_trial(7)]})
    fake_master.add("GET", "/trials/7/logs", _logs((1, "a"), (2, "b")))
    result = det("e", "logs", "5", "--tail", "2")
    assert result.stdout == "[rank 0] a\n[rank 0] b\n"
    assert fake_master.sent("GET", "/trials/7/logs")[0].url.params["tail"] == "2"
    asked = fake_master.sent("GET", "/experiments/5/trials")[0].url.params
    assert (asked["sortBy"], asked["limit"]) == ("id", "1")  # the first trial only


def test_logs_without_trials(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/experiments/5/trials", {"trials": []})
    result = det("e", "logs", "5")
    assert (result.exit_code, result.stderr) == (1, "Error: experiment 5 has no trials\n")


def test_ctrl_c_while_following_leaves_the_experiment_running(
        det: Det, fake_master: FakeMaster, project: tuple[str, str]) -> None:
    def interrupt(request: httpx.Request) -> httpx.Response:
        raise KeyboardInterrupt

    fake_master.add("POST", "/experiments", {"experiment": _experiment(), "warnings": []})
    fake_master.add("GET", "/experiments/5", interrupt)
    fake_master.add("GET", "/experiments/5/trials", interrupt)
    result = det("e", "create", "-f", *project)
    assert result.exit_code == 130
    assert result.stdout == "Created experiment 5\n"
    assert result.stderr.splitlines()[-1] == (
        "Error: interrupted; experiment 5 keeps running (stop it with "
        "`det experiment kill 5`)")
    assert fake_master.sent("POST", "/experiments/5/kill") == []


def test_skipped_links_are_reported(det: Det, fake_master: FakeMaster,
                                    project: tuple[str, str], tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("x")
    (Path(project[1]) / "link.txt").symlink_to(tmp_path / "outside.txt")
    fake_master.add("POST", "/experiments", {"experiment": _experiment(), "warnings": []})
    result = det("e", "create", *project)
    assert ("Warning: left out of the context: link.txt (link to outside the context "
            "directory)") in result.stderr


def _sent_body(fake_master: FakeMaster) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(fake_master.sent("POST", "/experiments")[0].content)
    return body


def test_create_with_a_template_sends_its_name(det: Det, fake_master: FakeMaster,
                                               project: tuple[str, str]) -> None:
    fake_master.add("POST", "/experiments",
                    {"experiment": _experiment(), "warnings": [], "template": "gpu"}, status=201)
    result = det("e", "create", "--template", "gpu", *project)
    assert result.exit_code == 0, result.output
    body = _sent_body(fake_master)
    assert body["template"] == "gpu" and body["config"] == CONFIG


def test_create_without_a_template_sends_none(det: Det, fake_master: FakeMaster,
                                              project: tuple[str, str]) -> None:
    fake_master.add("POST", "/experiments", {"experiment": _experiment(), "warnings": []})
    det("e", "create", *project)
    assert "template" not in _sent_body(fake_master)


def test_config_overrides_are_applied_before_sending(det: Det, fake_master: FakeMaster,
                                                     project: tuple[str, str]) -> None:
    fake_master.add("POST", "/experiments", {"experiment": _experiment(), "warnings": []})
    result = det("e", "create", "--config", "resources.slots_per_trial=4",
                 "--config", "searcher.max_trials=2", "--config", "debug=true",
                 "--config", "labels=[a, b]", "--config", "name=other=name",
                 "--config", "hyperparameters.lr.maxval=0.5", "--config", "searcher.max_trials=3",
                 *project)
    assert result.exit_code == 0, result.output
    sent = yaml.safe_load(_sent_body(fake_master)["config"])
    assert sent == {"name": "other=name", "entrypoint": "python train.py",
                    "resources": {"slots_per_trial": 4}, "searcher": {"max_trials": 3},
                    "debug": True, "labels": ["a", "b"],
                    "hyperparameters": {"lr": {"maxval": 0.5}}}


def test_an_override_replaces_a_nested_value_and_keeps_the_rest(
        det: Det, fake_master: FakeMaster, tmp_path: Path, project: tuple[str, str]) -> None:
    (tmp_path / "c.yaml").write_text("name: x\nresources: {slots_per_trial: 1, "
                                     "resource_pool: gpu}\nsearcher:\n")
    fake_master.add("POST", "/experiments", {"experiment": _experiment(), "warnings": []})
    det("e", "create", "--config", "resources.slots_per_trial=8",
        "--config", "searcher.name=single", *project)
    sent = yaml.safe_load(_sent_body(fake_master)["config"])
    assert sent == {"name": "x", "resources": {"slots_per_trial": 8, "resource_pool": "gpu"},
                    "searcher": {"name": "single"}}


@pytest.mark.parametrize(("override", "message"), [
    ("resources.slots_per_trial", "expected KEY=VALUE"),
    ("=4", "the key '' is empty"),
    ("resources..slots=4", "the key 'resources..slots' is empty or has an empty part"),
    ("name.first=4", "name is a str, not a mapping"),
    ("labels=[unclosed", "the value is not valid YAML"),
])
def test_bad_overrides_name_the_argument(det: Det, fake_master: FakeMaster,
                                         project: tuple[str, str], override: str,
                                         message: str) -> None:
    result = det("e", "create", "--config", "debug=true", "--config", override, *project)
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"Error: --config {override!r}: ") and message in line
    assert fake_master.requests == []


@pytest.mark.parametrize(("final", "code"), [("COMPLETED", 0), ("CANCELED", 1)])
def test_wait_polls_until_the_end_and_exits_0_only_if_completed(
        det: Det, fake_master: FakeMaster, final: str, code: int) -> None:
    fake_master.add("GET", "/experiments/5", {"experiment": _experiment(), "trials": []},
                    {"experiment": _experiment(final), "trials": []})
    result = det("e", "wait", "5", "--polling-interval", "0.1")
    assert result.exit_code == code, result.output
    assert result.stdout == f"Experiment 5 terminated with state {final}\n"
    assert len(fake_master.sent("GET", "/experiments/5")) == 2


def test_config_prints_the_effective_config_as_yaml_or_json(det: Det,
                                                            fake_master: FakeMaster) -> None:
    config = {"name": "mnist", "hyperparameters": {"lr": {"type": "const", "val": 0.1}}}
    fake_master.add("GET", "/experiments/5", {"experiment": _experiment(config=config)})
    result = det("e", "config", "5")
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout) == config
    assert result.stdout.startswith("name: mnist\n")
    fake_master.add("GET", "/experiments/5", {"experiment": _experiment(config=config)})
    assert json.loads(det("e", "config", "5", "--json").stdout) == config
