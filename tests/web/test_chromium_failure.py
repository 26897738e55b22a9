"""The failure summary at the top of errored trial and task pages in real Chromium, desktop
and phone: a GPU OOM (stand-in: PyTorch's message, no GPU here), a Slurm time limit (the
line recorded from a real TIMEOUT on the dev cluster 25.11), a trial killed by a user, and
a task whose error file holds the OOM (its page shows the file, the line red). The trials
and the task are seeded rows and files (nothing is submitted): real trials ending each way
are tests/integration/test_it_failure_summary.py.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from it_helpers import LiveMaster
from sqlalchemy.orm import Session
from test_chromium_records import RED, assert_fits, open_page

from hpcdet.master.models import CommandTask, Experiment, Job, StateChange, Trial, TrialLog
from hpcdet.master.scheduling.tasks import TASK_ERROR_LOG

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "master"))
from test_failure_summary import GPU_OOM, TIME_LIMIT  # noqa: E402


def _trial(session: Session, exp: Experiment, state: str, job: dict[str, Any],
           lines: list[str], actor: str | None = None) -> int:
    trial = Trial(experiment_id=exp.id, state=state, hparams={}, seed=1, token="t")
    session.add(trial)
    session.flush()
    session.add(Job(trial_id=trial.id, run_id=1, job_id=str(700 + trial.id), **job))
    session.add_all(TrialLog(trial_id=trial.id, job_id="1", stream="stderr", line=text)
                    for text in lines)
    if actor:
        session.add(StateChange(entity_kind="trial", entity_id=trial.id, from_state="RUNNING",
                                to_state="STOPPING_KILLED", cause="kill requested",
                                actor=actor))
    return int(trial.id)


def seed(sessions: Callable[[], Session]) -> dict[str, int]:
    """Three ended trials: out of GPU memory, timed out, killed by user_a."""
    with sessions() as session, session.begin():
        exp = Experiment(name="failures", owner="tester", state="ERROR", config={},
                         original_config="", context=b"", searcher_name="single")
        session.add(exp)
        session.flush()
        return {
            "oom_gpu": _trial(session, exp, "ERROR", {"phase": "FAILED", "exit_code": 1},
                              ["step 1", "Traceback (most recent call last):", GPU_OOM]),
            "time_limit": _trial(session, exp, "ERROR",
                                 {"phase": "TIMEOUT", "native_state": "TIMEOUT"},
                                 ["step 1", TIME_LIMIT]),
            "cancelled": _trial(session, exp, "CANCELED",
                                {"phase": "CANCELLED", "native_state": "CANCELLED by 0"},
                                ["step 1"], actor="user_a"),
        }


WORDS = {"oom_gpu": "ran out of GPU memory", "time_limit": "hit its time limit",
         "cancelled": "cancelled by user_a"}


def seed_task(sessions: Callable[[], Session], job_dir: Path) -> int:
    """An ERROR task whose error file ends with PyTorch's OOM message and srun's line."""
    job_dir.mkdir()
    (job_dir / TASK_ERROR_LOG).write_text(
        f"Traceback (most recent call last):\n{GPU_OOM}\n"
        "srun: error: node1: task 0: Exited with exit code 1\n")
    with sessions() as session, session.begin():
        task = CommandTask(owner="tester", name="train", state="ERROR", job_id="777",
                           job_dir=str(job_dir), options=[], args=[], cwd="/", workdir="/",
                           output_pattern="out.txt", native_state="FAILED", exit_code=1)
        session.add(task)
        session.flush()
        return int(task.id)


def test_failure_summary_on_top_of_the_trial_page(web_master: LiveMaster,
                                                  web_db: Callable[[], Session],
                                                  desktop: Any, phone: Any,
                                                  tmp_path: Path) -> None:
    trials = seed(web_db)
    pages = {f"/trials/{trial_id}": cause for cause, trial_id in trials.items()}
    pages[f"/tasks/{seed_task(web_db, tmp_path / 'task')}"] = "oom_gpu"
    for ctx in (desktop, phone):
        for path, cause in pages.items():
            page, errors = open_page(ctx, web_master, path)
            box = page.locator(f'.failure-summary[data-failure="{cause}"]')
            assert box.is_visible() and WORDS[cause] in box.inner_text()
            assert box.bounding_box()["y"] < page.locator("#facts").bounding_box()["y"]
            link = box.locator("[data-failure-line]")
            if cause != "cancelled":
                target = (link.get_attribute("href") or "").rsplit("#", 1)[1]
                line = page.locator(f"#{target}")
                assert line.evaluate("n => getComputedStyle(n).color") == RED
            assert_fits(page)
            assert errors == []
            page.close()
