"""Slurm's pending-reason codes (``squeue -o %r``) in a few words, for people to read.

Pure Slurm knowledge, shared by the CLI (``describe``, ``logs``) and the master's web pages.

Only the codes a researcher meets often are translated; any other code is shown as Slurm
wrote it, so nothing is hidden.
"""

from __future__ import annotations

REASONS = {
    "Priority": "waiting for higher-priority jobs",
    "Resources": "waiting for free resources",
    "PartitionNodeLimit": "asks for more nodes than the partition allows",
    "PartitionTimeLimit": "asks for more time than the partition allows",
    "PartitionDown": "the partition is down",
    "PartitionInactive": "the partition is inactive",
    "QOSMaxJobsPerUserLimit": "you already run as many jobs as your QOS allows",
    "QOSMaxSubmitJobPerUserLimit": "you already have as many jobs as your QOS allows",
    "AssocMaxJobsLimit": "your account already runs as many jobs as it may",
    "BeginTime": "requeued; Slurm holds it until its begin time",
    "Dependency": "waiting for a job it depends on",
    "DependencyNeverSatisfied": "its dependency can never be satisfied",
    "ReqNodeNotAvail": "a node it needs is unavailable (down, drained or reserved)",
    "JobHeldUser": "held by its owner (scontrol release JOBID)",
    "JobHeldAdmin": "held by an administrator",
    "Reservation": "waiting for its reservation",
    "NodeDown": "a node it needs is down",
    "launch failed requeued held": "its launch failed; held by Slurm (scontrol release JOBID)",
}


def reason_words(reason: str | None) -> str | None:
    """``"waiting for free resources (Resources)"``; unknown codes as they are.

    Slurm appends details after a comma (``ReqNodeNotAvail, UnavailableNodes:n[1-2]``);
    they are kept. ``None`` and Slurm's ``"None"`` give ``None``.
    """
    if not reason or reason == "None":
        return None
    code, _, detail = reason.partition(",")
    words = REASONS.get(code.strip())
    if words is None:
        return reason
    return f"{words} ({code.strip()}{', ' + detail.strip() if detail.strip() else ''})"
