"""``log_policies``: compiling the policies, and acting on the lines that match them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from log_seed import TWO_BY_TWO, add_experiment, add_job, add_trial, sessions
from sqlalchemy import select

from hpcdet.dispatcher.transport.local import LOCAL
from hpcdet.master.models import Job, Trial, TrialLog
from hpcdet.master.reports import log_policies
from hpcdet.master.reports.log_policies import find_hits, policies_of
from hpcdet.master.reports.logs import ingest_job_logs

OOM = {"name": "cuda-oom", "pattern": "CUDA out of memory", "action": "exclude_node"}
NCCL = {"pattern": "NCCL error", "action": {"type": "cancel_retries"}}  # legacy form


def config_with(*policies: Any) -> dict[str, Any]:
    return {**TWO_BY_TWO, "log_policies": list(policies)}


def _summary(config: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    return [(p.name, p.regex.pattern, sorted(p.actions))
            for p in policies_of(config).policies]


def test_every_accepted_shape_is_understood() -> None:
    config = config_with(
        OOM, NCCL,
        {"name": "both", "pattern": "x+", "actions": ["cancel_retries", {"signal": "s"},
                                                      {"type": "exclude_node"}]},
        {"name": "label only", "pattern": "y", "signal": "ECC"},
        {"name": "label action", "pattern": "z", "actions": [{"signal": "s"}]})
    assert _summary(config) == [
        ("cuda-oom", "CUDA out of memory", ["exclude_node"]),
        ("NCCL error", "NCCL error", ["cancel_retries"]),
        ("both", "x+", ["cancel_retries", "exclude_node"])]
    assert policies_of(config).problems == ()


def test_unusable_policies_are_skipped_and_named() -> None:
    config = config_with("not a mapping", {"name": "no pattern", "action": "exclude_node"},
                         {"name": "bad", "pattern": "(unclosed", "action": "cancel_retries"},
                         OOM)
    compiled = policies_of(config)
    assert [p.name for p in compiled.policies] == ["cuda-oom"]
    assert compiled.problems[0] == "log_policies[0]: no pattern; this policy is ignored"
    assert compiled.problems[1] == "log_policies[1]: no pattern; this policy is ignored"
    assert compiled.problems[2].startswith('log_policies[2] "bad": invalid pattern (')


@pytest.mark.parametrize("value", [None, [], {"not": "a list"}])
def test_no_or_odd_log_policies(value: Any) -> None:
    compiled = policies_of({"log_policies": value})
    assert compiled.policies == ()
    assert compiled.problems in ((), ("log_policies is not a list: ignored",))


def test_patterns_are_compiled_once_per_experiment(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    real = log_policies.re2.compile

    def counting(pattern: Any, *args: Any) -> Any:
        if pattern in ("unique-pattern-1", "unique-pattern-2"):
            compiled.append(pattern)
        return real(pattern, *args)

    log_policies._compile.cache_clear()
    monkeypatch.setattr(log_policies.re2, "compile", counting)
    for _ in range(3):  # a new but equal config each time, as loaded from the database
        policies_of(config_with({"pattern": "unique-pattern-1", "action": "cancel_retries"},
                                {"pattern": "unique-pattern-2", "action": "exclude_node"}))
    assert compiled == ["unique-pattern-1", "unique-pattern-2"]


def _ingest(app: Flask, job_dir: Path, config: dict[str, Any], out: str,
            nodes: str | None = "node[1-2]", job_id: str = "101") -> int:
    """Write ``out`` as the job's stdout and collect it; return the trial's id."""
    (job_dir / f"slurm-{job_id}.out").write_text(out)
    with sessions(app).begin() as session:
        trial = session.scalars(select(Trial)).first()
        if trial is None:
            trial = add_trial(session, add_experiment(session, config), job_dir=str(job_dir))
        job = add_job(session, trial, job_id=job_id, nodes=nodes)
        ingest_job_logs(session, job, trial, config, final=True, files=LOCAL)
        return trial.id


def _trial_state(app: Flask) -> tuple[bool, list[str], list[str]]:
    """(cancel_retries, excluded_nodes, master lines), read back in a new session."""
    with sessions(app)() as session:
        trial = session.scalars(select(Trial)).one()
        lines = session.scalars(select(TrialLog.line).where(TrialLog.stream == "master")
                                .order_by(TrialLog.id)).all()
        return trial.cancel_retries, list(trial.excluded_nodes), list(lines)


def test_cancel_retries_is_recorded_with_one_line_per_job(app: Flask, tmp_path: Path) -> None:
    config = config_with(NCCL)
    _ingest(app, tmp_path, config, "0: ok\n2: NCCL error: unhandled\n3: NCCL error again\n")
    assert _trial_state(app) == (True, [], [
        'log policy "NCCL error" matched on node2 (rank 2): no more restarts of this trial'])


def test_exclude_node_adds_each_matching_node_once(app: Flask, tmp_path: Path) -> None:
    config = config_with(OOM)
    _ingest(app, tmp_path, config, "3: CUDA out of memory. Tried\n0: CUDA out of memory\n"
                                   "2: CUDA out of memory\n")
    cancel, excluded, lines = _trial_state(app)
    assert (cancel, excluded) == (False, ["node2", "node1"])
    assert lines == [
        'log policy "cuda-oom" matched on node2 (rank 3): exclude node2 from the next submission',
        'log policy "cuda-oom" matched on node1 (rank 0): exclude node1 from the next submission']


def test_hits_already_reported_for_a_job_are_not_repeated(app: Flask, tmp_path: Path) -> None:
    config = config_with(NCCL)
    out = tmp_path / "slurm-101.out"
    out.write_text("1: NCCL error\n")
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session, config), job_dir=str(tmp_path))
        job_id = add_job(session, trial).id
        ingest_job_logs(session, session.get_one(Job, job_id), trial, config, final=False,
                        files=LOCAL)
    with sessions(app).begin() as session:  # the next poll cycle
        trial = session.scalars(select(Trial)).one()
        job = session.get_one(Job, job_id)
        with out.open("a") as handle:
            handle.write("0: NCCL error\n")
        assert ingest_job_logs(session, job, trial, config, final=False, files=LOCAL) == 1
    assert len(_trial_state(app)[2]) == 1
    _ingest(app, tmp_path, config, "0: NCCL error\n", job_id="102")  # the next job: again
    assert len(_trial_state(app)[2]) == 2


def test_exclude_node_without_a_known_node_says_so(app: Flask, tmp_path: Path) -> None:
    _ingest(app, tmp_path, config_with(OOM), "0: CUDA out of memory\n", nodes=None)
    assert _trial_state(app) == (False, [], [
        'log policy "cuda-oom" matched (rank 0, node unknown): cannot exclude its node '
        "(not known yet)"])


def test_a_batch_script_line_matches_on_the_first_node(app: Flask, tmp_path: Path) -> None:
    policy = {"name": "both", "pattern": "^srun: error", "actions": ["cancel_retries",
                                                                     "exclude_node"]}
    _ingest(app, tmp_path, config_with(policy), "srun: error: node1: task 0 failed\n")
    assert _trial_state(app) == (True, ["node1"], [
        'log policy "both" matched on node1 (batch script): no more restarts of this trial; '
        "exclude node1 from the next submission"])


def test_an_unusable_policy_is_reported_once_per_job_and_the_rest_still_acts(
        app: Flask, tmp_path: Path) -> None:
    config = config_with({"name": "bad", "pattern": "[", "action": "cancel_retries"}, NCCL)
    _ingest(app, tmp_path, config, "0: line\n")
    _ingest(app, tmp_path, config, "0: NCCL error\n", job_id="102")
    cancel, _, lines = _trial_state(app)
    assert cancel is True
    assert [line.split(":")[0] for line in lines] == [
        'log_policies[0] "bad"', 'log_policies[0] "bad"', 'log policy "NCCL error" matched on '
        "node1 (rank 0)"]


# Issue 14 finding 5: ``^(a+)+$`` and lines of "a"s stalled the reconciler (backtracking).
def test_patterns_run_in_a_linear_time_engine() -> None:
    policy = {"name": "evil", "pattern": "^(a+)+$", "action": "cancel_retries"}
    compiled = policies_of(config_with(policy))
    regex = compiled.policies[0].regex
    # Checked first, so that on a backtracking engine the test fails instead of hanging.
    assert not isinstance(regex, re.Pattern)
    lines = [{"line": "a" * 5000 + "b", "rank": 0, "node": "n1"}] * 2
    assert find_hits(compiled.policies, lines) == []
    assert len(find_hits(compiled.policies, [{"line": "a" * 5000, "rank": 0,
                                              "node": "n1"}])) == 1
