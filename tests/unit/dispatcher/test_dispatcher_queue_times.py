"""Time used, time limit and expected start of queued jobs, and the limit reasons in words,
from text recorded on the dev clusters (Slurm 25.11.7, OpenPBS 23.06)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from hpcdet.dispatcher.pbs.queue import parse_queue as parse_pbs_queue
from hpcdet.dispatcher.pbs.reasons import reason_words as pbs_reason_words
from hpcdet.dispatcher.queue import personal_words
from hpcdet.dispatcher.slurm.queue import SEPARATOR, duration_seconds, parse_queue
from hpcdet.dispatcher.slurm.reasons import reason_words

# squeue_argv() on the dev cluster (Slurm 25.11.7), "^_" is \x1f: a job pending on
# Resources with the start the backfill scheduler computed, an array throttled by %1 (its
# pending tasks, then its running task), a job running 0:10 of 2:00, and a job with no time
# limit whose start is not computed yet.
SLURM_2511 = """\
1000001^_side^_qcap-wait^_root^_PENDING^_Resources^_11500^_0^_normal^_hpcdet^_2026-11-30T14:48:38^_2^_2^_2^_cpu=2,mem=4000M,node=2,billing=2^_(null)^_^_0:00^_1:00^_2026-11-30T14:50:38^_
1000008_[2-3%1]^_debug^_qcap-arr^_root^_PENDING^_JobArrayTaskLimit^_2928^_0^_normal^_hpcdet^_2026-11-30T14:50:46^_1^_1^_1^_cpu=1,mem=2000M,node=1,billing=1^_(null)^_^_0:00^_1:00^_N/A^_
1000008_1^_debug^_qcap-arr^_root^_RUNNING^_None^_2928^_0^_normal^_hpcdet^_2026-11-30T14:50:46^_1^_1^_1^_cpu=1,node=1,billing=1^_(null)^_node1^_0:04^_1:00^_2026-11-30T14:50:46^_
1000000^_side^_qcap-run^_root^_RUNNING^_None^_11500^_0^_normal^_hpcdet^_2026-11-30T14:48:38^_2^_8^_2^_cpu=8,node=2,billing=8^_(null)^_node[5-6]^_0:10^_2:00^_2026-11-30T14:48:38^_
1000007^_side^_det-1-1-1-31e57c29^_root^_PENDING^_None^_1^_4150^_normal^_hpcdet^_2026-11-30T14:50:42^_2^_8^_2^_cpu=8,mem=4000M,node=2,billing=8^_hpcdet:compat:trial-1:run-1^_^_0:00^_UNLIMITED^_N/A^_
""".replace("^_", SEPARATOR)  # noqa: E501


def _local(text: str) -> str:
    return dt.datetime.fromisoformat(text).astimezone().isoformat()


def test_slurm_times_and_expected_start() -> None:
    entries = {e.job_id: e for e in parse_queue(SLURM_2511)}
    waiting = entries["1000001"]
    assert (waiting.time_used, waiting.time_limit) == (0, 60)
    assert waiting.expected_start == _local("2026-11-30T14:50:38")
    assert entries["1000008_[2-3%1]"].expected_start is None  # N/A: not computed
    running = entries["1000000"]
    assert (running.time_used, running.time_limit) == (10, 120)
    assert running.expected_start is None  # a running job's StartTime is no expectation
    assert running.node_names == ("node5", "node6")
    assert entries["1000007"].time_limit is None  # UNLIMITED


def test_slurm_lines_without_the_time_fields_still_read() -> None:
    old = SLURM_2511.splitlines()[0].split(SEPARATOR)[:-4]  # up to NodeList
    entry = parse_queue(SEPARATOR.join(old) + SEPARATOR)[0]
    assert entry.job_id == "1000001" and entry.time_limit is None


@pytest.mark.parametrize(("text", "seconds"), [
    ("0:31", 31), ("2:00", 120), ("1:02:03", 3723), ("1-02:03:04", 93784),
    ("1-02", 93600), ("UNLIMITED", None), ("N/A", None), ("INVALID", None), ("", None),
    ("1:2:3:4", None),
])
def test_squeue_durations(text: str, seconds: int | None) -> None:
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize(("reason", "words"), [
    ("JobArrayTaskLimit", "its array already runs as many tasks at once as its %-limit "
                          "allows (JobArrayTaskLimit)"),
    ("QOSMaxGRESPerUser", "the owner's QOS allows no more GPUs (GRES) (QOSMaxGRESPerUser)"),
    ("QOSMaxCpuPerUserLimit", "the owner's QOS allows no more CPUs (QOSMaxCpuPerUserLimit)"),
    ("AssocGrpCPURunMinutesLimit", "its account's group limit on running CPU-minutes is "
                                   "reached (AssocGrpCPURunMinutesLimit)"),
    ("QOSMaxNodePerJobLimit", "asks for more nodes per job than its QOS allows "
                              "(QOSMaxNodePerJobLimit)"),
    ("MaxJobsPerAccount", "its account's QOS limit on running jobs is reached "
                          "(MaxJobsPerAccount)"),
    ("QOSGrpGRES", "its QOS's group limit on GPUs (GRES) is reached (QOSGrpGRES)"),
    ("QOSMaxWallDurationPerJobLimit", "asks for more time than its QOS allows "
                                      "(QOSMaxWallDurationPerJobLimit)"),
    ("QOSMaxGRESPerUserX", "QOSMaxGRESPerUserX"),
])
def test_slurm_limit_reasons_in_words(reason: str, words: str) -> None:
    assert reason_words(reason) == words


@pytest.mark.parametrize(("owner", "viewer", "words"), [
    ("ann", "ann", "your QOS allows no more running jobs"),
    ("bob", "ann", "bob's QOS allows no more running jobs"),
    (None, "ann", "the owner's QOS allows no more running jobs"),
])
def test_owner_words_say_you_only_to_the_owner(owner: str | None, viewer: str,
                                               words: str) -> None:
    assert personal_words("the owner's QOS allows no more running jobs", owner, viewer) == words
    assert personal_words("waiting for free resources", owner, viewer) == \
        "waiting for free resources"


# qstat -t -f -F json on the dev PBS server (two jobs of user_a: one running 1 s of 2 min,
# one waiting for nodes), trimmed to the fields read; the dev server computes no estimates,
# so the waiting job's ``estimated`` is added as PBS writes it where it does.
PBS_JOBS: dict[str, Any] = json.loads("""{
 "0.vm": {"Job_Name": "qcap-run", "Job_Owner": "user_a@vm", "job_state": "R",
  "queue": "workq", "qtime": "Mon Nov 30 14:49:00 2026", "Priority": 0,
  "resources_used": {"walltime": "00:00:01", "ncpus": 4},
  "Resource_List": {"ncpus": 4, "nodect": 2, "select": "2:ncpus=2", "walltime": "00:02:00"},
  "exec_host": "pbsn1/0*2+pbsn2/0*2", "comment": "Job run at Mon Nov 30 at 14:49 on (pbsn1:ncpus=2)+(pbsn2:ncpus=2)"},
 "1.vm": {"Job_Name": "qcap-wait", "Job_Owner": "user_a@vm", "job_state": "Q",
  "queue": "workq", "qtime": "Mon Nov 30 14:49:00 2026", "Priority": 0,
  "Resource_List": {"ncpus": 4, "nodect": 2, "select": "2:ncpus=2", "walltime": "00:01:00"},
  "comment": "Not Running: Not enough free nodes available",
  "estimated": {"exec_vnode": "(pbsn1:ncpus=2)+(pbsn2:ncpus=2)",
                "start_time": "Mon Nov 30 14:51:00 2026"}}
}""")  # noqa: E501


def test_pbs_times_and_expected_start() -> None:
    entries = {e.job_id: e for e in parse_pbs_queue(PBS_JOBS)}
    assert (entries["0.vm"].time_used, entries["0.vm"].time_limit) == (1, 120)
    assert entries["0.vm"].expected_start is None
    waiting = entries["1.vm"]
    assert (waiting.time_used, waiting.time_limit) == (None, 60)
    assert waiting.expected_start == dt.datetime(2026, 11, 30, 14, 51).astimezone().isoformat()


@pytest.mark.parametrize("start", [0, "0", None, "N/A"])
def test_pbs_no_estimate_is_none(start: object) -> None:
    record = {**PBS_JOBS["1.vm"], "estimated": {"start_time": start}}
    entry = parse_pbs_queue({"1.vm": record})[0]
    assert entry.expected_start is None


def test_pbs_user_limit_names_the_owner() -> None:
    words = pbs_reason_words("Not Running: User has reached queue workq running job limit.")
    assert personal_words(words, "bob", "ann") == "bob's jobs have reached a queue or server limit"
