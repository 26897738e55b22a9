r"""Determined's ``log_policies``: act on trial log lines that match a pattern.

Each policy is ``{name, pattern, action | actions}``; the accepted shapes
(``hpcdet/expconf/_schema_parts.py``) are the legacy ``action: {type: exclude_node}``, the
plain ``action: cancel_retries`` and the newer ``actions: [cancel_retries, exclude_node,
{signal: ...}]``. Every collected line (its text without the ``srun --label`` prefix) is
searched with RE2 (``google-re2``), whose matching time is linear in the line's length, so
no pattern can stall the reconciler (Python's ``re`` needs seconds, then forever, for
``^(a+)+$`` on a line of ``a``\ s). RE2 has no backreferences or lookaround; a pattern it
cannot compile is refused when the experiment is created (:func:`check_patterns`):

- ``cancel_retries``: the trial is not restarted again (``Trial.cancel_retries``);
- ``exclude_node``: the line's node is added to ``Trial.excluded_nodes``, which the
  reconciler keeps out of the trial's next submissions.

``signal`` (a label in Determined's web UI) is accepted and ignored. Patterns are compiled
once per distinct ``log_policies`` value (so once per experiment) and cached; a policy
that cannot be used (no pattern, a pattern RE2 cannot compile, no known action) is
skipped and reported as a problem instead of failing the log collection.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import re2

from hpcdet.dispatcher.plugin import SchedulerPlugin
from hpcdet.errors import ConfigError
from hpcdet.master.models import Trial

log = logging.getLogger(__name__)
ACTIONS = ("cancel_retries", "exclude_node")
# Distinct log_policies values kept compiled; a master runs far fewer experiments at once.
_CACHE_SIZE = 1024


@dataclass(frozen=True)
class LogPolicy:
    """One usable policy: its name (the pattern when unnamed), regex and actions."""

    name: str
    regex: Any  # an re2 pattern: .search(text) like re
    actions: frozenset[str]


@dataclass(frozen=True)
class CompiledPolicies:
    """The usable policies of a config, and one line per policy that was skipped."""

    policies: tuple[LogPolicy, ...] = ()
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class PolicyHit:
    """The first line of a batch that matched ``policy`` on one node."""

    policy: LogPolicy
    rank: int | None
    node: str | None

    @property
    def key(self) -> str:
        """What is reported once per job: a policy, per node when it excludes nodes."""
        if "exclude_node" in self.policy.actions:
            return f"{self.policy.name}@{self.node or '?'}"
        return self.policy.name


NO_POLICIES = CompiledPolicies()


def policies_of(config: Mapping[str, Any]) -> CompiledPolicies:
    """The compiled ``log_policies`` of an effective experiment config (cached)."""
    raw = config.get("log_policies")
    if not raw:
        return NO_POLICIES
    # The cache key is the value itself, so two databases' experiment 1 never share one.
    return _compile(json.dumps(raw, sort_keys=True, default=str))


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _compile(text: str) -> CompiledPolicies:
    raw = json.loads(text)
    if not isinstance(raw, list):
        return CompiledPolicies(problems=("log_policies is not a list: ignored",))
    policies: list[LogPolicy] = []
    problems: list[str] = []
    for index, entry in enumerate(raw):
        policy = _one_policy(index, entry, problems)
        if policy is not None:
            policies.append(policy)
    for problem in problems:
        log.warning("%s", problem)
    return CompiledPolicies(tuple(policies), tuple(problems))


def _one_policy(index: int, entry: Any, problems: list[str]) -> LogPolicy | None:
    """The policy at ``index``, or None with the reason appended to ``problems``."""
    where = f"log_policies[{index}]"
    if not isinstance(entry, Mapping) or not isinstance(entry.get("pattern"), str):
        problems.append(f"{where}: no pattern; this policy is ignored")
        return None
    name = str(entry.get("name") or entry["pattern"])
    regex, error = compile_pattern(entry["pattern"])
    if regex is None:
        problems.append(f'{where} "{name}": invalid pattern ({error}); this policy is ignored')
        return None
    actions = _actions(entry)
    if not actions:
        return None  # e.g. only a signal: nothing for the master to do
    return LogPolicy(name, regex, actions)


def compile_pattern(pattern: str) -> tuple[Any, str]:
    """``(compiled RE2 pattern, "")``, or ``(None, why)`` for one RE2 cannot compile."""
    options = re2.Options()
    options.log_errors = False  # RE2 would print the error to stderr too
    try:
        return re2.compile(pattern, options), ""
    except re2.error as exc:
        message = exc.args[0] if exc.args else exc
        text = message.decode(errors="replace") if isinstance(message, bytes) else str(message)
        return None, text


def check_patterns(config: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` naming every ``log_policies`` pattern RE2 cannot compile."""
    raw = config.get("log_policies")
    errors: list[str] = []
    for index, entry in enumerate(raw if isinstance(raw, list) else []):
        if isinstance(entry, Mapping) and isinstance(entry.get("pattern"), str):
            if compile_pattern(entry["pattern"])[0] is None:
                name = entry.get("name") or entry["pattern"]
                why = compile_pattern(entry["pattern"])[1]
                errors.append(f'<config>.log_policies[{index}] "{name}": the pattern cannot be '
                              f"used ({why}); patterns are RE2 regular expressions (no "
                              "backreferences or lookaround)")
    if errors:
        raise ConfigError(errors, title="invalid log_policies")


def check_actions(config: Mapping[str, Any], scheduler: SchedulerPlugin) -> None:
    """Raise :class:`ConfigError` naming every policy whose action ``scheduler`` cannot
    honour (PBS keeps no job off named nodes: ``exclude_node``), when the experiment is
    created rather than when a trial's next job is refused."""
    raw = config.get("log_policies")
    excluding = [index for index, entry in enumerate(raw if isinstance(raw, list) else [])
                 if isinstance(entry, Mapping) and "exclude_node" in _actions(entry)]
    errors = [line for index in excluding
              if (line := scheduler.refusal("exclude_nodes", f"<config>.log_policies[{index}]"))]
    if errors:
        raise ConfigError(errors, title="invalid log_policies")


def _actions(entry: Mapping[str, Any]) -> frozenset[str]:
    """The actions of a policy in any accepted shape; unknown ones are left out."""
    given = entry.get("actions")
    listed = list(given) if isinstance(given, list) else []
    if entry.get("action") is not None:
        listed.append(entry["action"])
    names = (item.get("type") if isinstance(item, Mapping) else item for item in listed)
    return frozenset(name for name in names if name in ACTIONS)


def find_hits(policies: Iterable[LogPolicy],
              lines: Iterable[Mapping[str, Any]]) -> list[PolicyHit]:
    """The first matching line per :attr:`PolicyHit.key`, in line order.

    ``lines`` are ``trial_logs`` rows as dicts (``line``, ``rank``, ``node``).
    """
    policies = tuple(policies)
    hits: dict[str, PolicyHit] = {}
    for row in lines:
        for policy in policies:
            if policy.regex.search(str(row["line"])):
                hit = PolicyHit(policy, row.get("rank"), row.get("node"))
                hits.setdefault(hit.key, hit)
    return list(hits.values())


def apply_hit(trial: Trial, hit: PolicyHit) -> str:
    """Record the hit's actions on ``trial``; return the line that says what was done."""
    done = []
    if "cancel_retries" in hit.policy.actions:
        trial.cancel_retries = True
        done.append("no more restarts of this trial")
    if "exclude_node" in hit.policy.actions:
        done.append(_exclude(trial, hit.node))
    return f'log policy "{hit.policy.name}" matched {_where(hit)}: {"; ".join(done)}'


def _exclude(trial: Trial, node: str | None) -> str:
    if node is None:
        return "cannot exclude its node (not known yet)"
    if node not in (trial.excluded_nodes or []):
        # A new list: SQLAlchemy does not see changes made inside a JSON value.
        trial.excluded_nodes = [*(trial.excluded_nodes or []), node]
    return f"exclude {node} from the next submission"


def _where(hit: PolicyHit) -> str:
    who = "batch script" if hit.rank is None else f"rank {hit.rank}"
    return f"on {hit.node} ({who})" if hit.node else f"({who}, node unknown)"
