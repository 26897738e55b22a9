"""Where the suite's time goes: a pytest plugin that records what each test cost.

For every test (setup, call and teardown together) it records:

- ``wall_s``: seconds from the start of its setup to the end of its teardown;
- ``cpu_self_s``: CPU seconds of the pytest process (user + system, all its threads);
- ``cpu_children_s``: CPU seconds of the child processes that ended meanwhile (``det``
  commands, masters stopped in teardown: ``getrusage(RUSAGE_CHILDREN)``; a child still
  running when the test ends is counted in the test during which it is reaped);
- ``cpu_jobs_s``: CPU seconds of the scheduler jobs submitted while it ran (Slurm's
  ``sacct`` TotalCPU, PBS's ``resources_used.cput``), asked once the test has ended;
- ``sched_wait_s``: seconds those jobs waited in the queue, submission to start, added up.

Scheduler jobs are matched by their submission time, on PBS for a test marked ``pbs`` and
on Slurm for any other, and on Slurm also by their working directory (``sacct`` WorkDir):
``scripts/test`` runs streams of tests side by side, and most jobs of a test start in its
``tmp_path`` (its master's job root is there). A Slurm job submitted while the test ran
counts for it when its working directory is under this pytest process's base temporary
directory (the test's ``tmp_path``, a module fixture's), or under no pytest's at all (a
shared job root, the checkout); not when it is under another pytest's (another stream's).
A job of that last kind may still count for tests of two streams running at once. Only
tests of a second or more ask the scheduler (each asking costs ~0.1 s); the others cannot
have waited for a job.

With ``--timings-json PATH`` (``scripts/test`` gives one per tier) the records, the tier's
name (``--timings-tier``) and its start and end go to ``PATH`` as JSON; ``scripts/test-report``
turns the files into tables. Without it the plugin records and writes nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROPERTY = "hpcdet_timing"
# Tests shorter than this submitted no job worth asking the schedulers about.
ASK_SCHEDULERS_AFTER_S = 1.0
PBS_QSTAT = "/opt/pbs/bin/qstat"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hpcdet timings")
    group.addoption("--timings-json", metavar="PATH", default=None,
                    help="write each test's wall, CPU and scheduler time to PATH (JSON)")
    group.addoption("--timings-tier", metavar="NAME", default=None,
                    help="the tier's name in the --timings-json file")


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if not item.config.getoption("--timings-json"):
        return
    item.stash[_START] = (time.time(), _cpu(resource.RUSAGE_SELF),
                          _cpu(resource.RUSAGE_CHILDREN))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    if call.when != "teardown" or _START not in item.stash:
        return
    started, cpu_self, cpu_children = item.stash[_START]
    ended = time.time()
    record: dict[str, Any] = {
        "wall_s": round(ended - started, 3),
        "cpu_self_s": round(_cpu(resource.RUSAGE_SELF) - cpu_self, 3),
        "cpu_children_s": round(_cpu(resource.RUSAGE_CHILDREN) - cpu_children, 3),
        "cpu_jobs_s": 0.0, "sched_wait_s": 0.0, "jobs": 0,
    }
    if ended - started >= ASK_SCHEDULERS_AFTER_S:
        # A test marked pbs submits to PBS, any other to Slurm: so the jobs of a stream of
        # the other scheduler running beside it (scripts/test) are not counted as its own.
        if item.get_closest_marker("pbs"):
            jobs = _pbs_jobs(started, ended)
        else:
            jobs = _slurm_jobs(started, ended, temporary_directories(item))
        record.update(jobs=len(jobs), cpu_jobs_s=round(sum(cpu for cpu, _ in jobs), 3),
                      sched_wait_s=round(sum(wait for _, wait in jobs), 3))
    outcome.get_result().user_properties.append((PROPERTY, record))


_START = pytest.StashKey[tuple[float, float, float]]()


@dataclass(frozen=True)
class TempDirs:
    """This pytest's base temporary directory (every test's ``tmp_path`` lies under it) and
    the root every pytest's lies under (``/tmp/pytest-of-USER``)."""

    session: Path | None
    all_sessions: Path | None


def temporary_directories(item: pytest.Item) -> TempDirs:
    factory = getattr(item.config, "_tmp_path_factory", None)  # pytest's own, set by tmpdir
    session = factory.getbasetemp() if factory is not None else None
    # xdist: each worker's base is basetemp/popen-gwN; the session's is the one above it.
    if session is not None and session.name.startswith("popen-gw"):
        session = session.parent
    root = session.parent if session is not None else None
    return TempDirs(session, root)


def job_is_the_tests(workdir: str, dirs: TempDirs) -> bool:
    """Whether a job started in ``workdir`` may be the test's (see the module's docstring)."""
    path = Path(workdir)
    if dirs.session is not None and path.is_relative_to(dirs.session):
        return True
    return dirs.all_sessions is None or not path.is_relative_to(dirs.all_sessions)


def _slurm_jobs(started: float, ended: float, dirs: TempDirs) -> list[tuple[float, float]]:
    """(CPU seconds, queue wait) of each Slurm job submitted in [started, ended] that may be
    the test's (:func:`job_is_the_tests`)."""
    if not os.environ.get("SLURM_CONF") or shutil.which("sacct") is None:
        return []
    since = dt.datetime.fromtimestamp(started).strftime("%Y-%m-%dT%H:%M:%S")
    out = _run(["sacct", "-a", "-n", "-P", "-S", since, "-E", "now",
                "-o", "JobID,Submit,Start,TotalCPU,WorkDir"])
    jobs = []
    for line in out.splitlines():
        fields = line.split("|", 4)
        # Steps (123.batch, 123.0) are in their job's TotalCPU already.
        if len(fields) != 5 or "." in fields[0] or not job_is_the_tests(fields[4], dirs):
            continue
        submitted, start = _iso(fields[1]), _iso(fields[2])
        if submitted is None or not started - 1 <= submitted <= ended:
            continue
        wait = (start - submitted) if start is not None else ended - submitted
        jobs.append((slurm_duration(fields[3]), max(0.0, wait)))
    return jobs


def _pbs_jobs(started: float, ended: float) -> list[tuple[float, float]]:
    """(CPU seconds, queue wait) of each PBS job (or subjob) queued in [started, ended]."""
    if not os.path.exists(PBS_QSTAT):
        return []
    env = {**os.environ, "PBS_CONF_FILE": os.environ.get("PBS_CONF_FILE", "/etc/pbs.conf")}
    try:
        answer = json.loads(_run([PBS_QSTAT, "-x", "-t", "-f", "-F", "json"], env) or "{}")
    except ValueError:
        return []
    jobs = []
    for job in (answer.get("Jobs") or {}).values():
        if job.get("array") is True:  # its subjobs are listed too
            continue
        queued, start = _pbs_time(job.get("qtime")), _pbs_time(job.get("stime"))
        if queued is None or not started - 1 <= queued <= ended:
            continue
        cput = slurm_duration(str((job.get("resources_used") or {}).get("cput", "0:0")))
        wait = (start - queued) if start is not None else ended - queued
        jobs.append((cput, max(0.0, wait)))
    return jobs


def _run(argv: list[str], env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _iso(stamp: str) -> float | None:
    try:
        return dt.datetime.fromisoformat(stamp).timestamp()
    except ValueError:  # Unknown, None
        return None


def _pbs_time(stamp: object) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return dt.datetime.strptime(stamp, "%a %b %d %H:%M:%S %Y").timestamp()
    except ValueError:
        return None


def slurm_duration(text: str) -> float:
    """Seconds in Slurm's ``[D-][HH:]MM:SS[.mmm]`` (also PBS's ``HH:MM:SS``); 0 if unreadable."""
    days, _, clock = text.strip().rpartition("-")
    try:
        parts = [float(p) for p in clock.split(":")]
        seconds = sum(value * 60 ** power for power, value in enumerate(reversed(parts)))
        return seconds + (int(days) * 86400 if days else 0)
    except ValueError:
        return 0.0


FAILURE_LINES = 40


def failure_tail(report: pytest.TestReport) -> str:
    """The last lines of a failure's report: where CI shows only the end of its log, the
    run's report (scripts/test-report) ends with these."""
    lines = report.longreprtext.splitlines()
    return "\n".join(lines[-FAILURE_LINES:])


class Collector:
    """In the controller (or the only process): gathers the records and writes them."""

    def __init__(self, path: Path, tier: str) -> None:
        self.path = path
        self.tier = tier
        self.started = time.time()
        self.tests: dict[str, dict[str, Any]] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        test = self.tests.setdefault(report.nodeid, {"nodeid": report.nodeid,
                                                     "outcome": "passed"})
        if report.failed:
            test["outcome"] = "failed" if report.when == "call" else "error"
            test["failure"] = failure_tail(report)
        elif report.skipped and test["outcome"] == "passed":
            test["outcome"] = "skipped"
        for name, value in report.user_properties:
            if name == PROPERTY:
                test.update(value)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        document = {"tier": self.tier, "started": self.started, "ended": time.time(),
                    "exitstatus": int(exitstatus), "tests": list(self.tests.values())}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(document, indent=1))
        tmp.replace(self.path)


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--timings-json")
    if path and not hasattr(config, "workerinput"):  # xdist's workers report to the controller
        tier = config.getoption("--timings-tier") or Path(path).stem.removeprefix("timings-")
        config.pluginmanager.register(Collector(Path(path), tier), "hpcdet-timings-collector")
