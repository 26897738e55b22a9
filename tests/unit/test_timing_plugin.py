"""tests/timing_plugin.py and scripts/test-report: where the suite's time goes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hang_guard import HANG_GUARD_S
from timing_plugin import TempDirs, job_is_the_tests, slurm_duration, temporary_directories

TESTS = Path(__file__).resolve().parents[1]
REPORT = TESTS.parent / "scripts" / "test-report"

SAMPLE = """
import subprocess, sys, time

def test_sleeps():
    time.sleep(0.3)

def test_spends_cpu_in_a_child():
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(1_000_000))"], check=True)

def test_fails():
    assert False
"""


def _run_sample(tmp_path: Path, *args: str) -> dict[str, object]:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    out = tmp_path / "out" / "timings-sample.json"
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    env.pop("SLURM_CONF", None)  # no scheduler to ask about jobs
    subprocess.run([sys.executable, "-m", "pytest", "-p", "timing_plugin", "-p",
                    "no:cacheprovider", "-q", str(tmp_path / "test_sample.py"),
                    "--timings-json", str(out), *args], cwd=tmp_path, env=env,
                   capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)
    document: dict[str, object] = json.loads(out.read_text())
    return document


def test_each_test_gets_its_wall_time_cpu_and_outcome(tmp_path: Path) -> None:
    document = _run_sample(tmp_path, "--timings-tier", "sample")
    assert document["tier"] == "sample" and document["exitstatus"] == 1
    tests = {t["nodeid"].split("::")[1]: t for t in document["tests"]}  # type: ignore[attr-defined]
    assert tests["test_sleeps"]["wall_s"] >= 0.3
    assert tests["test_sleeps"]["outcome"] == "passed"
    assert tests["test_spends_cpu_in_a_child"]["cpu_children_s"] > 0.02
    assert tests["test_spends_cpu_in_a_child"]["cpu_children_s"] > (
        tests["test_sleeps"]["cpu_children_s"])
    assert tests["test_fails"]["outcome"] == "failed"


def test_the_report_tables_tiers_setup_and_the_costliest_tests(tmp_path: Path) -> None:
    _run_sample(tmp_path)
    out = tmp_path / "out"
    (out / "setup-timings.tsv").write_text("virtual environment\t12.5\tok\n"
                                           "OpenPBS build\t3.0\tfailed (exit 1)\n")
    (out / "setup-wall").write_text("13.1\n")  # the steps ran side by side
    done = subprocess.run([sys.executable, str(REPORT), str(out)], capture_output=True,
                          text=True, timeout=HANG_GUARD_S, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["tier", "(minutes)", "result"]
    setup = next(line for line in lines if line.startswith("setup "))
    assert "FAILED: OpenPBS build" in setup and setup.split()[-1] == "0.2", setup  # not 15.5 s
    assert any(line.startswith("sample") and "FAILED (1)" in line for line in lines)
    costly = lines.index("The 20 costliest tests (seconds; CPU: pytest + children + jobs)")
    assert "test_sleeps" in "\n".join(lines[costly:costly + 6])
    merged = json.loads((out / "timings.json").read_text())
    assert [step["step"] for step in merged["setup"]] == ["virtual environment", "OpenPBS build"]
    assert [tier["tier"] for tier in merged["tiers"]] == ["sample"]
    assert merged["setup_wall_s"] == 13.1
    # The report ends with what failed and the end of its report (CI keeps the log's end).
    failed = lines.index("FAILED [sample] test_sample.py::test_fails")
    assert "assert False" in "\n".join(lines[failed:]) and failed > costly


def test_slurm_durations() -> None:
    assert slurm_duration("00:01.500") == 1.5
    assert slurm_duration("01:02:03") == 3723
    assert slurm_duration("2-00:00:01") == 2 * 86400 + 1
    assert slurm_duration("garbage") == 0.0


def test_a_slurm_job_counts_for_the_test_whose_directories_it_started_in(tmp_path: Path) -> None:
    root = tmp_path / "pytest-of-root"
    dirs = TempDirs(session=root / "pytest-7", all_sessions=root)
    assert job_is_the_tests(str(root / "pytest-7/test_one0/jobs/exp-1/trial-1"), dirs)
    assert job_is_the_tests(str(root / "pytest-7/module-master0/jobs/trial-3"), dirs)
    assert not job_is_the_tests(str(root / "pytest-8/test_other0/jobs/trial-1"), dirs)
    assert job_is_the_tests("/srv/hpcdet-dev/jobs/user_a/exp-1/trial-1", dirs)
    assert job_is_the_tests("/work/checkout", dirs)
    no_tmp = TempDirs(session=None, all_sessions=None)
    assert job_is_the_tests(str(root / "pytest-8/test_other0"), no_tmp)



def test_the_directories_of_a_running_test_are_its_tmp_path_and_its_pytests(
        request: pytest.FixtureRequest, tmp_path: Path) -> None:
    dirs = temporary_directories(request.node)
    assert dirs.session is not None and tmp_path.is_relative_to(dirs.session)
    assert not dirs.session.name.startswith("popen-gw")  # xdist: the whole run's, not a worker's
    assert dirs.all_sessions == dirs.session.parent
