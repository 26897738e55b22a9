"""The argument grammar of ``python3 -m {determined,hpcdet}.launch.torch_distributed``.

Kept apart from the launcher's ``main`` so the harness can translate an entrypoint
naming the launcher without importing anything heavy.

Determined's grammar: ``[[TORCH_OVERRIDES...] --] (--trial TRIAL) | (SCRIPT...)``. The
overrides are arguments for ``torch.distributed.run`` (``--nproc_per_node`` ...), which
hpcdet never runs: srun starts the ranks, so they are refused rather than ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hpcdet.errors import HpcdetError

LAUNCHER_MODULES = frozenset({"determined.launch.torch_distributed",
                              "hpcdet.launch.torch_distributed"})
USAGE = "python3 -m hpcdet.launch.torch_distributed [--] (--trial MODULE:CLASS | SCRIPT...)"


class LauncherArgsError(HpcdetError):
    """The launcher's arguments ask for something hpcdet cannot honour."""


@dataclass(frozen=True)
class LaunchRequest:
    """What the launcher runs on each rank: a trial class (``trial``) or a command."""

    trial: str | None
    script: tuple[str, ...]


def parse_launcher_args(args: Sequence[str]) -> LaunchRequest:
    """Parse the launcher's arguments; raise :class:`LauncherArgsError` on what we refuse."""
    overrides, rest = _split_overrides(list(args))
    if overrides:
        raise LauncherArgsError(
            f"torch_distributed launcher: torch.distributed.run overrides {' '.join(overrides)} "
            "are not supported: srun already starts one rank per slot (set "
            "resources.slots_per_trial and slurm.slots_per_node instead); usage: " + USAGE)
    if rest[:1] == ["--trial"] or (rest and rest[0].startswith("--trial=")):
        return _trial_request(rest)
    if not rest:
        raise LauncherArgsError(f"torch_distributed launcher: no script to run; usage: {USAGE}")
    return LaunchRequest(trial=None, script=tuple(rest))


def _split_overrides(args: list[str]) -> tuple[list[str], list[str]]:
    """Everything before the first ``--`` is an override (only when there is a ``--``)."""
    if "--" not in args:
        return [], args
    split = args.index("--")
    return args[:split], args[split + 1:]


def _trial_request(rest: list[str]) -> LaunchRequest:
    first, tail = rest[0], rest[1:]
    if first.startswith("--trial="):
        spec = first.partition("=")[2]
    elif tail:
        spec, tail = tail[0], tail[1:]
    else:
        spec = ""
    if not spec:
        raise LauncherArgsError("torch_distributed launcher: --trial needs MODULE:CLASS, "
                                "e.g. --trial model_def:MyTrial")
    if tail:
        raise LauncherArgsError(f"torch_distributed launcher: extra arguments after --trial "
                                f"{spec}: {' '.join(tail)} (a trial class takes no arguments)")
    return LaunchRequest(trial=spec, script=())
