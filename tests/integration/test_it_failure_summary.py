"""The failure summary of trials that really failed on the dev cluster, end to end: the
API's ``failure`` object and the box at the top of each trial page in real Chromium.

Three single-trial experiments of the stand-in trial (``standin/standin.py``,
``STANDIN_FAIL_AS``) run at the same time, each ending its own way, so the test costs one
Slurm time limit (the shortest Slurm allows, one minute), not three:

* **time limit**: ``slurm.sbatch_args: [--time=1]``; the trial ignores the warning signal
  (it would otherwise checkpoint and exit, a preemption) and never checkpoints, so Slurm
  kills it at the limit (``*** JOB ... CANCELLED AT ... DUE TO TIME LIMIT ***``, TIMEOUT);
* **GPU out of memory**: a stand-in: no GPU runs here, and the dev cluster enforces no
  memory limit (``TaskPlugin`` none, ``proctrack/linuxproc``: no cgroup), so a host OOM
  cannot happen either. The trial prints the traceback PyTorch prints for a failed CUDA
  allocation (``torch.cuda.OutOfMemoryError: CUDA out of memory. ...``) and exits 1;
* **cancelled**: the job's owner (the user the master submits as) runs ``scancel`` on it,
  outside hpcdet: the summary names who cancelled it.
"""

from __future__ import annotations

import getpass
import subprocess
from pathlib import Path
from typing import Any

import pytest
from it_helpers import (
    LiveMaster,
    standin_config,
    standin_context,
    trials_of,
    wait_for,
    write_experiment,
)
from test_it_web import DESKTOP, WatchedPage

pytestmark = [pytest.mark.slurm, pytest.mark.browser]

# How each trial fails (STANDIN_FAIL_AS), its extra config, and the summary's cause/words.
ENDINGS: dict[str, tuple[str, dict[str, Any], str, str]] = {
    "time_limit": ("hang", {"slurm": {"sbatch_args": ["--time=1"]}}, "time_limit",
                   "hit its time limit of 1 minute"),
    "oom": ("cuda_oom", {}, "oom_gpu", "ran out of GPU memory"),
    "cancelled": ("hang", {}, "cancelled", f"cancelled by {getpass.getuser()}"),
}
# The log line each summary links to (its last error line).
LAST_LINES = {"time_limit": "DUE TO TIME LIMIT", "oom": "torch.cuda.OutOfMemoryError",
              "cancelled": "CANCELLED AT"}
RED = "rgb(207, 34, 46)"  # the log view's error colour (tests/web/test_chromium_records.py)


@pytest.fixture
def resource_manager_settings() -> dict[str, Any]:
    # A warning 30 s before the one-minute limit, which the hanging trial ignores. A cluster
    # name of its own: the jobs' comments (hpcdet:it-failure:...) are not those that other
    # tests' clean-ups cancel (hpcdet:it:...), which would end a trial "cancelled by root"
    # before its time limit.
    return {"walltime_signal_seconds": 30, "cluster_name": "it-failure"}


def _create(master: LiveMaster, tmp_path: Path, name: str) -> int:
    how, extra, _, _ = ENDINGS[name]
    config = standin_config(f"fails-{name}", {"epochs": 1}, [f"STANDIN_FAIL_AS={how}"],
                            **extra)
    path = write_experiment(tmp_path / name, config, {})
    out = master.det("experiment", "create", str(path), str(standin_context(tmp_path / "ctx")),
                     check=True)
    return int(next(li for li in out.stdout.splitlines() if li.startswith("Created"))
               .split()[-1])


def _trial(master: LiveMaster, exp_id: int) -> dict[str, Any]:
    trial = wait_for(lambda: (trials_of(master, exp_id) or [None])[0], "the trial", 60)
    return dict(master.api(f"/trials/{trial['id']}")["trial"])


def _cancel_when_running(master: LiveMaster, exp_id: int) -> None:
    """scancel the trial's job once the trial says it runs (its hang line is in the log)."""
    trial = _trial(master, exp_id)
    wait_for(lambda: any("standin: hanging" in e["line"] for e in
                         master.api(f"/trials/{trial['id']}/logs")["logs"]),
             "the trial to run", 120)
    job_id = _trial(master, exp_id)["jobs"][-1]["job_id"]
    subprocess.run(["scancel", job_id], env=master.env, check=True, timeout=60)


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_real_failures_say_why_at_the_top(master: LiveMaster, tmp_path: Path,
                                          browser: Any) -> None:
    experiments = {name: _create(master, tmp_path, name) for name in ENDINGS}
    _cancel_when_running(master, experiments["cancelled"])
    ended = {name: wait_for(lambda e=exp_id: (lambda t: t if t["state"] == "ERROR" else None)(
        _trial(master, e)), f"the {name} trial to end ERROR", 240)
        for name, exp_id in experiments.items()}
    context = browser.new_context(viewport=DESKTOP)
    try:
        for name, trial in ended.items():
            _, _, cause, words = ENDINGS[name]
            failure = trial["failure"]
            assert (failure["cause"], failure["words"]) == (cause, words), trial
            assert LAST_LINES[name] in failure["last_error_line"]["text"], failure
            _check_page(context, master.url, trial["id"], cause, words)
    finally:
        context.close()


def _check_page(context: Any, url: str, trial_id: int, cause: str, words: str) -> None:
    """The box is above the facts, says the cause in words, and links to a red log line."""
    tab = WatchedPage(context).open(f"{url}/trials/{trial_id}")
    box = tab.page.locator(f'.failure-summary[data-failure="{cause}"]')
    assert words in box.inner_text()
    assert box.bounding_box()["y"] < tab.page.locator("#facts").bounding_box()["y"]
    target = (box.locator("[data-failure-line]").get_attribute("href") or "").rsplit("#", 1)[1]
    line = tab.page.locator(f"#{target}")
    line.wait_for()
    assert LAST_LINES_BY_CAUSE[cause] in line.inner_text()
    assert line.evaluate("n => getComputedStyle(n).color") == RED
    assert tab.errors == []
    tab.page.close()


LAST_LINES_BY_CAUSE = {ENDINGS[name][2]: text for name, text in LAST_LINES.items()}
