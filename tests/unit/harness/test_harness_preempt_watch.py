"""The chief's preemption watcher: the master's "stop" becomes ``should_preempt()``.

These run against the FakeMaster of harness_fakes.py (a fake HTTP server); the real
route, and the watcher against the real master, are covered in
tests/unit/master/test_master_harness_signals.py.
"""

from __future__ import annotations

import json
import pathlib
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator

import pytest
from hang_guard import wait_until
from harness_fakes import (
    TOKEN,
    FakeMaster,
    one_node_step,
    start_harness,
    wait_harness,
    write_job_dir,
)

import hpcdet.core
from hpcdet.client import MasterClient
from hpcdet.core._preempt import (
    DEFAULT_POLL_SECONDS,
    POLL_ENV,
    PreemptionWatcher,
    poll_interval_from_environ,
    preemption_signalled,
)
from hpcdet.errors import ValidationError

FAST = "0.01"


@pytest.fixture
def watcher_for(fake_master: FakeMaster) -> Iterator[Callable[[str], PreemptionWatcher]]:
    """Starts watchers of trial 11 on the fake master (with ``token``); closes them after."""
    started: list[PreemptionWatcher] = []

    def start(token: str = TOKEN) -> PreemptionWatcher:
        watcher = PreemptionWatcher(MasterClient(fake_master.url, token=token), 11, interval=0.01)
        watcher.start()
        started.append(watcher)
        return watcher

    yield start
    for watcher in started:
        watcher.close()


def test_the_flag_is_set_once_the_master_says_stop(
    watcher_for: Callable[..., PreemptionWatcher],
    fake_master: FakeMaster,
    capsys: pytest.CaptureFixture[str],
) -> None:
    watcher = watcher_for()
    wait_until(lambda: fake_master.polls >= 3)
    assert preemption_signalled() is False
    fake_master.preempt = True
    wait_until(preemption_signalled)
    wait_until(lambda: not watcher.polling)  # one yes is enough: it stops asking
    assert "the master asked this trial to stop" in capsys.readouterr().err


def test_transient_failures_are_retried_and_logged_once(
    watcher_for: Callable[..., PreemptionWatcher],
    fake_master: FakeMaster,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_master.fail_polls = [503, 502, 500, 503]
    fake_master.preempt = True
    watcher_for()
    wait_until(preemption_signalled)
    assert fake_master.polls == 5
    assert capsys.readouterr().err.count("asking the master about preemption failed") == 1


def test_a_permanent_failure_ends_the_polling(
    watcher_for: Callable[..., PreemptionWatcher],
    fake_master: FakeMaster,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_master.preempt = True
    watcher = watcher_for("not-the-token")
    wait_until(lambda: not watcher.polling)
    assert preemption_signalled() is False
    assert fake_master.polls == 0  # the fake counts only authorized polls
    err = capsys.readouterr().err
    assert "stopped asking the master about preemption" in err
    assert "bad or missing trial token" in err


def test_an_unreachable_master_is_asked_again(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:  # a port that was free: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    watcher = PreemptionWatcher(MasterClient(url, token=TOKEN), 11, interval=0.01)
    watcher.start()
    try:
        wait_until(lambda: "will keep asking" in capsys.readouterr().err)
        assert watcher.polling is True
    finally:
        watcher.close()
    assert watcher.polling is False


def test_close_stops_the_thread(
    watcher_for: Callable[..., PreemptionWatcher], fake_master: FakeMaster
) -> None:
    watcher = watcher_for()
    wait_until(lambda: fake_master.polls >= 1)
    watcher.close()
    watcher.close()  # idempotent
    assert watcher.polling is False


def _watcher_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "hpcdet-preemption"]


@pytest.mark.usefixtures("in_job")
def test_core_in_a_job_sees_the_masters_stop(
    fake_master: FakeMaster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(POLL_ENV, FAST)
    with hpcdet.core.init() as core:
        assert len(_watcher_threads()) == 1
        assert core.preempt.should_preempt() is False
        fake_master.preempt = True
        wait_until(core.preempt.should_preempt)
    assert _watcher_threads() == []  # closing the context ends the watcher


@pytest.mark.usefixtures("off_cluster")
def test_a_run_outside_a_job_has_no_watcher() -> None:
    with hpcdet.core.init():
        assert _watcher_threads() == []


def test_an_unmanaged_trial_has_no_watcher(
    tmp_path: pathlib.Path, fake_master: FakeMaster, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = write_job_dir(tmp_path / "dry-run", fake_master.url, unmanaged=True)
    monkeypatch.setenv("DET_TRIAL_INFO", str(job / "trial.json"))
    monkeypatch.setenv(POLL_ENV, "not checked: nothing polls")
    with hpcdet.core.init():
        assert _watcher_threads() == []


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf", "5s"])
@pytest.mark.usefixtures("in_job")
def test_a_bad_poll_interval_fails_at_init(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(POLL_ENV, value)
    message = f"{POLL_ENV} must be a number of seconds > 0, not '{value}'"
    with pytest.raises(ValidationError, match=message.replace(".", r"\.")):
        hpcdet.core.init()
    assert _watcher_threads() == []


@pytest.mark.parametrize(
    ("environ", "seconds"),
    [({}, DEFAULT_POLL_SECONDS), ({POLL_ENV: ""}, 5.0), ({POLL_ENV: " 2.5 "}, 2.5)],
)
def test_poll_interval_from_environ(environ: dict[str, str], seconds: float) -> None:
    assert poll_interval_from_environ(environ) == seconds


TWO_RANK_SCRIPT = """
import json, pathlib, time
import hpcdet.core
from hpcdet.core._preempt import preemption_signalled

with hpcdet.core.init() as core:
    d = core.distributed
    before = core.preempt.should_preempt()
    if d.is_chief:
        pathlib.Path("asked-once").write_text("")  # the test now tells the master to stop
    rounds = 0
    while not core.preempt.should_preempt() and rounds < 3000:  # every rank, same rounds
        rounds += 1
        time.sleep(0.02)
    result = {"before": before, "after": core.preempt.should_preempt(),
              "own_flag": preemption_signalled()}
with open(f"result-{d.rank}.json", "w") as out:
    json.dump(result, out)
"""


@pytest.mark.torch
def test_the_chiefs_master_stop_preempts_every_rank(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    pytest.importorskip("torch")
    job = write_job_dir(tmp_path / "job", fake_master.url)
    (job / "context" / "train.py").write_text(TWO_RANK_SCRIPT)
    envs = [{**env, POLL_ENV: "0.05"} for env in one_node_step(job)]
    procs = start_harness(job, envs)
    wait_until(lambda: (job / "context" / "asked-once").exists() or _any_exited(procs))
    fake_master.preempt = True
    ranks = wait_harness(job, procs)
    results = [json.loads((job / "context" / f"result-{r}.json").read_text()) for r in (0, 1)]
    for rank in ranks:
        assert rank.returncode == 0, rank.stderr
    assert [(r["before"], r["after"]) for r in results] == [(False, True), (False, True)]
    # Only the chief heard the master; rank 1 learned it through should_preempt's allgather.
    assert [r["own_flag"] for r in results] == [True, False]
    assert "the master asked this trial to stop" in ranks[0].stderr
    assert "the master asked" not in ranks[1].stderr


def _any_exited(procs: list[subprocess.Popen[bytes]]) -> bool:
    return any(proc.poll() is not None for proc in procs)
