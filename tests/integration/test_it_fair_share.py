"""Fair-share on the real dev cluster: two accounts weighted 3:1 share a saturated partition 3:1.

The accounts are made by hpcdet (``det-master sync-accounts`` against the real slurmdbd,
``fair_share.account_source: user``), and the load comes through hpcdet: two det users,
alice (weight 3) and bob (weight 1), each keep a backlog of ``det sbatch`` jobs in the dev
cluster's ``fairshare`` partition (node4, 4 CPUs, in no other partition: scripts/test runs
the other Slurm tests beside this one, on node[1-3]; the test that restarts slurmctld runs
after every other cluster test).

How Slurm 22.05 shares (measured; docs/dev-cluster.md): the fair-share factors, and with
them the order of the two backlogs, are recomputed only once per PriorityCalcPeriod (one
minute, Slurm's minimum), so each minute every CPU that frees goes to the one account
further below its share. With weights 3:1 that settles at once into a cycle of four
minutes, one for bob and three for alice, so any window of exactly four calc periods after
Slurm first ranked the two accounts holds one minute of bob's and three of alice's: that
window is what the test measures, from ``sacct``'s job start and end times.

What the minutes are worth is made equal: once the test has seen the first ranking (and
so the phase of Slurm's recomputation), each job runs until a margin after the next one, so
each minute's four CPUs go to exactly one ranking's winner, for the whole minute, and the
window is shifted by the same margin, so it holds exactly four such minutes (20 s: room for
a recomputation that comes late on a busy host). The window starts one minute later than
the first ranking's: the jobs that start just after it are not all the winner's (measured
beside the other test streams on a loaded host, twice: that minute went 2 CPUs to each
account, the next three whole minutes as ranked, and the ratio came out 1.80 and 1.67),
as the pending jobs' priorities may not yet follow the factors sshare shows. (With
jobs of a fixed length, how many start in a minute varied by 5-10% with the controller's
load, and the split of one cycle by as much.) The accounts are new on every run, so no
usage carries over between runs.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from it_helpers import BIN, LiveMaster

pytestmark = [pytest.mark.slurm, pytest.mark.isolated]

PARTITION = "fairshare"
WEIGHTS = {"alice": 3, "bob": 1}
# Jobs before the first ranking run this long; after it, until this margin after the next one
# (which is also how far the measured window is shifted from the rankings).
SHORT_JOB_SECONDS = 2
AFTER_RANKING_SECONDS = 20
CALC_PERIODS = 4
# Pending jobs each user keeps queued: more than the partition starts between two checks.
BACKLOG = 8
SUBMITTERS_PER_USER = 2


@dataclass(frozen=True)
class Accounts:
    prefix: str
    job_name: str
    # Holds the time of Slurm's first ranking, once the test has seen it (read by the jobs).
    phase_file: Path

    def of(self, user: str) -> str:
        return f"{self.prefix}{user}"

    @property
    def names(self) -> list[str]:
        return [self.of(user) for user in WEIGHTS]


@pytest.fixture
def accounts(slurm: dict[str, str], tmp_path: Path) -> Iterator[Accounts]:
    """Fresh account names for this run; afterwards their jobs are cancelled and they go."""
    tag = uuid.uuid4().hex[:6]
    made = Accounts(prefix=f"fs{tag}-", job_name=f"fairshare-{tag}",
                    phase_file=tmp_path / "first-ranking")
    yield made
    _remove_accounts(made, slurm)


@pytest.fixture
def resource_manager_settings(accounts: Accounts) -> dict[str, Any]:
    # Set up before (so torn down after) the master: the accounts are removed only once the
    # master, whose automatic sync would add them again, has stopped.
    # A cluster name of its own: the jobs' comments (hpcdet:it-fairshare:...) are not those
    # that other tests' clean-ups cancel (hpcdet:it:...).
    return {"cluster_name": "it-fairshare",
            "fair_share": {"account_source": "user", "account_prefix": accounts.prefix,
                           "parent_account": "hpcdet", "weights": WEIGHTS,
                           "manage_accounts": "auto"}}


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_two_accounts_weighted_3_to_1_get_3_to_1_of_a_saturated_partition(
        master: LiveMaster, accounts: Accounts, slurm: dict[str, str], tmp_path: Path) -> None:
    started = time.monotonic()
    _wait_for_idle_partition(slurm)
    _sync_accounts(master, tmp_path / "master.yaml")
    assert _fairshares(accounts, slurm) == {accounts.of(user): (str(weight), {"root"})
                                            for user, weight in WEIGHTS.items()}
    calc_period = _calc_period_seconds(slurm)
    job = _job_command(accounts.phase_file, calc_period)
    stop = threading.Event()
    with ThreadPoolExecutor(len(WEIGHTS) * SUBMITTERS_PER_USER) as pool:
        feeders = [pool.submit(_keep_backlog, master, accounts, user, job, stop, slurm)
                   for user in WEIGHTS for _ in range(SUBMITTERS_PER_USER)]
        try:
            first_ranking = _wait_for_first_ranking(accounts, slurm, timeout=3 * calc_period)
            accounts.phase_file.write_text(f"{int(first_ranking)}\n")
            # The first whole minute after the first ranking is left out: see the module's doc.
            start = first_ranking + calc_period + AFTER_RANKING_SECONDS
            window = (start, start + CALC_PERIODS * calc_period)
            _sleep_until(window[1], feeders)
        finally:
            stop.set()
    for feeder in feeders:
        feeder.result()
    _cancel_jobs(accounts, slurm)
    used = _cpu_seconds(accounts, slurm, window)
    others = _cpu_seconds_of_others(accounts, slurm, window)
    assert not others, f"other jobs took the partition's CPUs during the window: {others}"
    ratio = used[accounts.of("alice")] / used[accounts.of("bob")]
    print(f"fair-share: CPU-seconds in the {CALC_PERIODS * calc_period:.0f} s window: {used}, "
          f"alice/bob = {ratio:.2f}; test took {time.monotonic() - started:.0f} s")
    assert 2.7 <= ratio <= 3.3, (used, ratio)


def _sync_accounts(master: LiveMaster, config: Path) -> None:
    """``det-master sync-accounts`` as root: it runs the commands (the master's auto sync may
    have been first, which leaves it nothing to do)."""
    result = subprocess.run([str(BIN / "det-master"), "--config", str(config), "sync-accounts"],
                            env=master.env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith(("# Ran these sacctmgr commands", "# Nothing to do")), result.stdout


def _fairshares(accounts: Accounts, slurm: dict[str, str]) -> dict[str, tuple[str, set[str]]]:
    out = _slurm(slurm, "sacctmgr", "-n", "-P", "show", "assoc",
                 "where", f"account={','.join(accounts.names)}", "format=account,user,share")
    found: dict[str, tuple[str, set[str]]] = {}
    for line in out.splitlines():
        account, user, share = line.split("|")[:3]
        if user:
            found.setdefault(account, ("", set()))[1].add(user)
        else:
            found[account] = (share, found.get(account, ("", set()))[1])
    return found


def _job_command(phase_file: Path, calc_period: float) -> str:
    """A short sleep until the phase file exists; then a sleep until just after the next
    recomputation (phase + k periods), so that every minute is one ranking's."""
    period = int(calc_period)
    return (f"p=$(cat {phase_file} 2>/dev/null); if [ -z \"$p\" ]; then sleep {SHORT_JOB_SECONDS};"
            f" else n=$(date +%s); sleep $(( ((p - n) % {period} + {period}) % {period}"
            f" + {AFTER_RANKING_SECONDS} )); fi")


def _keep_backlog(master: LiveMaster, accounts: Accounts, user: str, job: str,
                  stop: threading.Event, slurm: dict[str, str]) -> int:
    """Submit ``det sbatch`` jobs as ``user`` whenever fewer than BACKLOG are pending."""
    submitted = 0
    env = {**master.env, "DET_USER": user}
    while not stop.is_set():
        if _pending(accounts.of(user), accounts.job_name, slurm) >= BACKLOG:
            stop.wait(0.5)
            continue
        result = subprocess.run(
            [str(BIN / "det"), "-m", master.url, "sbatch", "--parsable", f"-p{PARTITION}",
             "-n1", "-t2", f"--job-name={accounts.job_name}", "--output=/dev/null",
             f"--wrap={job}"],
            # From the test's tmp_path: the jobs start there, which is how
            # tests/timing_plugin.py knows them for this test's.
            env=env, cwd=accounts.phase_file.parent, capture_output=True, text=True,
            timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
        submitted += 1
    return submitted


def _pending(account: str, job_name: str, slurm: dict[str, str]) -> int:
    return len(_slurm(slurm, "squeue", "-h", "-t", "PD", "-A", account, "-n", job_name,
                      "-o", "%i").split())


def _wait_for_first_ranking(accounts: Accounts, slurm: dict[str, str], timeout: float) -> float:
    """When Slurm first ranked the two accounts apart (their fair-share factors differ)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        factors = _slurm(slurm, "sshare", "-n", "-P", "-A", ",".join(accounts.names),
                         "--format=user,fairshare").splitlines()
        values = {line.split("|")[1] for line in factors if line.split("|")[0]}
        if len(values) == 2:
            return time.time()
        time.sleep(0.5)
    raise AssertionError(f"Slurm did not rank the accounts within {timeout:.0f} s")


def _sleep_until(moment: float, feeders: list[Any]) -> None:
    while time.time() < moment:
        for feeder in feeders:
            if feeder.done():
                feeder.result()  # a failed submission ends the test with its message
        time.sleep(1)


def _cpu_seconds(accounts: Accounts, slurm: dict[str, str],
                 window: tuple[float, float]) -> dict[str, float]:
    """CPU-seconds each account was allocated inside ``window`` (sacct start/end, clipped)."""
    used = dict.fromkeys(accounts.names, 0.0)
    out = _slurm(slurm, "sacct", "-n", "-P", "-X", "-A", ",".join(accounts.names),
                 "-S", "now-2hours", "--format=account,start,end,alloccpus")
    for line in out.splitlines():
        account, start, end, cpus = line.split("|")
        if start in ("Unknown", "None") or end in ("Unknown", "None"):
            continue
        overlap = min(_epoch(end), window[1]) - max(_epoch(start), window[0])
        used[account] += max(0.0, overlap) * int(cpus)
    return used


def _wait_for_idle_partition(slurm: dict[str, str]) -> None:
    """Wait (a while) until no job runs on the partition's nodes: they are in other
    partitions too, where an earlier test's job may still be ending."""
    nodes = _slurm(slurm, "sinfo", "-h", "-p", PARTITION, "-o", "%N").strip()
    deadline = time.time() + 120
    while _slurm(slurm, "squeue", "-h", "-w", nodes, "-o", "%i").strip():
        if time.time() > deadline:
            raise AssertionError(f"jobs of other tests still run on {nodes}")
        time.sleep(1)


def _cpu_seconds_of_others(accounts: Accounts, slurm: dict[str, str],
                           window: tuple[float, float]) -> dict[str, float]:
    """CPU-seconds jobs of any other account were allocated on the partition's nodes in
    ``window`` (none, on a quiet cluster; the test's ratio means nothing otherwise)."""
    nodes = _slurm(slurm, "sinfo", "-h", "-p", PARTITION, "-o", "%N").strip()
    out = _slurm(slurm, "sacct", "-n", "-P", "-X", "-a", "-N", nodes, "-S", "now-2hours",
                 "--format=jobid,account,start,end,alloccpus")
    used: dict[str, float] = {}
    for line in out.splitlines():
        job, account, start, end, cpus = line.split("|")
        if account in accounts.names or start in ("Unknown", "None"):
            continue
        ended = time.time() if end in ("Unknown", "None") else _epoch(end)  # still running
        overlap = min(ended, window[1]) - max(_epoch(start), window[0])
        if overlap > 0:
            used[f"{job} ({account})"] = overlap * int(cpus)
    return used


def _epoch(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp).timestamp()


def _cancel_jobs(accounts: Accounts, slurm: dict[str, str]) -> None:
    """Cancel what is left and wait until Slurm has let go of every job of both accounts."""
    for account in accounts.names:
        _slurm(slurm, "scancel", "-A", account, "-n", accounts.job_name, check=False)
    deadline = time.time() + 60
    while time.time() < deadline and _slurm(slurm, "squeue", "-h", "-A", ",".join(accounts.names),
                                            "-o", "%i", check=False).strip():
        time.sleep(1)


def _remove_accounts(accounts: Accounts, slurm: dict[str, str]) -> None:
    _cancel_jobs(accounts, slurm)
    _slurm(slurm, "sacctmgr", "-i", "delete", "account", *accounts.names, check=False)


def _calc_period_seconds(slurm: dict[str, str]) -> float:
    for line in _slurm(slurm, "scontrol", "show", "config").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "PriorityCalcPeriod":
            hours, minutes, seconds = (int(part) for part in value.strip().split(":"))
            return float(hours * 3600 + minutes * 60 + seconds)
    raise AssertionError("scontrol show config has no PriorityCalcPeriod")


def _slurm(env: dict[str, str], *argv: str, check: bool = True) -> str:
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed: {result.stderr}")
    return result.stdout
