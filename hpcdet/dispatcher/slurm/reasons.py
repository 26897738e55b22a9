"""Slurm's pending-reason codes (``squeue -o %r``) in a few words, for people to read.

Pure Slurm knowledge, shared by the CLI (``describe``, ``logs``) and the master's web pages.

The codes a researcher meets often are in :data:`REASONS`; the limit codes Slurm 25.11
builds from a scope, a resource and a kind of limit (``QOSMaxGRESPerUser``,
``AssocGrpCpuLimit``, ``MaxNodePerAccount``: src/common/job_state_reason.c) are read by
:func:`limit_words`. Any other code is shown as Slurm wrote it, so nothing is hidden.

Words about the job's owner start with :data:`~hpcdet.dispatcher.queue.OWNER` ("the
owner's"), which the pages turn into "your" or the owner's name
(:func:`~hpcdet.dispatcher.queue.personal_words`).
"""

from __future__ import annotations

import re

from hpcdet.dispatcher.queue import OWNER

REASONS = {
    "Priority": "waiting for higher-priority jobs",
    "Resources": "waiting for free resources",
    "PartitionNodeLimit": "asks for more nodes than the partition allows",
    "PartitionTimeLimit": "asks for more time than the partition allows",
    "PartitionDown": "the partition is down",
    "PartitionInactive": "the partition is inactive",
    "PartitionConfig": "asks for something its partition does not allow",
    "QOSMaxJobsPerUserLimit": f"{OWNER} QOS allows no more running jobs",
    "QOSMaxSubmitJobPerUserLimit": f"{OWNER} QOS allows no more submitted jobs",
    "AssocMaxJobsLimit": "its account already runs as many jobs as it may",
    "AssocGrpJobsLimit": "its account's group already runs as many jobs as it may",
    "QOSGrpJobsLimit": "its QOS already runs as many jobs as it may",
    "JobArrayTaskLimit": "its array already runs as many tasks at once as its %-limit allows",
    "AssocMaxSubmitJobLimit": "its account already has as many jobs as it may",
    "QOSMaxWallDurationPerJobLimit": "asks for more time than its QOS allows",
    "AssocMaxWallDurationPerJobLimit": "asks for more time than its account allows",
    "BeginTime": "waiting for its begin time (or requeued: held until then)",
    "Dependency": "waiting for a job it depends on",
    "DependencyNeverSatisfied": "its dependency can never be satisfied",
    "ReqNodeNotAvail": "a node it needs is unavailable (down, drained or reserved)",
    "JobHeldUser": "held by its owner (scontrol release JOBID)",
    "JobHeldAdmin": "held by an administrator",
    "JobHoldMaxRequeue": "held: requeued too many times",
    "Reservation": "waiting for its reservation",
    "ReservationDeleted": "its reservation was deleted",
    "NodeDown": "a node it needs is down",
    "Licenses": "waiting for licenses",
    "BadConstraints": "its constraints can never be met",
    "Constraints": "waiting for nodes with the features it asks for",
    "InvalidAccount": "its account is invalid",
    "InvalidQOS": "its QOS is invalid",
    "QOSNotAllowed": "its QOS is not allowed here",
    "AccountNotAllowed": "its account is not allowed here",
    "Prolog": "its prolog is running",
    "Cleaning": "requeued: waiting for its last run to clean up",
    "SchedDefer": "deferred by the scheduler's settings",
    "MaxPoweredUpNodes": "waiting for nodes to power up",
    "launch failed requeued held": "its launch failed; held by Slurm (scontrol release JOBID)",
}

# The resources of limit codes, as people say them.
_RESOURCES = {
    "Cpu": "CPUs", "CPU": "CPUs", "Mem": "memory", "Memory": "memory", "Node": "nodes",
    "GRES": "GPUs (GRES)", "Billing": "billing units",
    "License": "licenses", "BB": "burst buffer", "Energy": "energy", "Unknown": "resources",
    "Wall": "wall time", "Jobs": "running jobs", "SubmitJobs": "submitted jobs",
    "SubmitJob": "submitted jobs",
}  # fmt: skip
_RESOURCE = "(Cpu|CPU|Memory|Mem|Node|GRES|Billing|License|BB|Energy|Unknown|Wall|SubmitJobs|Jobs)"
_KIND = "(RunMinutes|Minutes)?"
# (pattern, words): {r} is the resource (CPU-minutes, running CPU-minutes for the minute
# kinds), {p} "job" or "node".
_LIMITS = (
    (re.compile(f"^QOSGrp{_RESOURCE}{_KIND}(?:Limit)?$"),
     "its QOS's group limit on {r} is reached"),
    (re.compile(f"^AssocGrp{_RESOURCE}{_KIND}(?:Limit)?$"),
     "its account's group limit on {r} is reached"),
    (re.compile(f"^QOSMax{_RESOURCE}{_KIND}PerUser(?:Limit)?$"), OWNER + " QOS allows no more {r}"),
    (re.compile(f"^Max{_RESOURCE}RunMinsPerUser$"), OWNER + " QOS allows no more running {r}"),
    (re.compile(f"^QOSMax{_RESOURCE}{_KIND}Per(Job|Node)(?:Limit)?$"),
     "asks for more {r} per {p} than its QOS allows"),
    (re.compile(f"^AssocMax{_RESOURCE}{_KIND}Per(Job|Node)(?:Limit)?$"),
     "asks for more {r} per {p} than its account allows"),
    (re.compile(f"^Max{_RESOURCE}(?:RunMins)?PerAccount$"),
     "its account's QOS limit on {r} is reached"),
    (re.compile(f"^QOSMin{_RESOURCE}(?:NotSatisfied)?$"), "asks for fewer {r} than its QOS needs"),
)


def limit_words(code: str) -> str | None:
    """A Slurm limit code (``QOSMaxGRESPerUser``) in words; None for any other code."""
    for pattern, words in _LIMITS:
        match = pattern.match(code)
        if match is None:
            continue
        groups = match.groups()
        resource = _RESOURCES[groups[0]]
        if "Minutes" in code or "RunMins" in code:  # CPU-minutes, running CPU-minutes
            running = "running " if "RunMinutes" in code else ""
            resource = f"{running}{resource.removesuffix('s')}-minutes"
        per = groups[-1].lower() if groups[-1] in ("Job", "Node") else ""
        return words.format(r=resource, p=per)
    return None


def reason_words(reason: str | None) -> str | None:
    """``"waiting for free resources (Resources)"``; unknown codes as they are.

    Slurm appends details after a comma (``ReqNodeNotAvail, UnavailableNodes:n[1-2]``);
    they are kept. ``None`` and Slurm's ``"None"`` give ``None``.
    """
    if not reason or reason == "None":
        return None
    code, _, detail = reason.partition(",")
    words = REASONS.get(code.strip()) or limit_words(code.strip())
    if words is None:
        return reason
    return f"{words} ({code.strip()}{', ' + detail.strip() if detail.strip() else ''})"
