"""Fixtures for the dispatcher unit tests: a recorded Slurm, golden files, a stub srun."""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from hpcdet.dispatcher.base import BindMount, ContainerSpec, JobSpec

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "golden"
REGEN_VAR = "HPCDET_REGEN_GOLDEN"

Answer = str | Exception | Callable[[Sequence[str]], str]


class RecordedSlurmRunner:
    """A fake for unit tests; the real Slurm is exercised in the integration tier.

    Answers each command (keyed by ``argv[0]``: ``squeue``, ``sacct``, ...) with canned
    text recorded from a real Slurm, an exception to raise, or a function of the argv.
    Commands without an answer print nothing. Every argv is kept in ``calls``.
    """

    def __init__(self, answers: Mapping[str, Answer] | None = None) -> None:
        self.answers: dict[str, Answer] = dict(answers or {})
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], *, timeout: float = 60) -> str:
        self.calls.append(tuple(argv))
        answer = self.answers.get(argv[0], "")
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            return answer(argv)
        return answer


@pytest.fixture
def recorded_slurm() -> type[RecordedSlurmRunner]:
    """The :class:`RecordedSlurmRunner` class, to build with the answers a test needs."""
    return RecordedSlurmRunner


IMAGES: dict[str, str | None] = {
    "none": None,
    "apptainer": "/shared/images/pytorch-24.01.sif",
    "singularity": "/shared/images/pytorch-24.01.sif",
    "enroot": "pytorch+24.01-py3",
    "podman": "docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
    "charliecloud": "/shared/images/hpcdet-bookworm",
}


def golden_spec(run_type: str) -> JobSpec:
    """The fixed job the golden scripts are rendered from: 2 nodes x 4 GPUs, as the master
    asks for it: one task per node holding its ranks' CPUs, and a step of 4 ranks per node."""
    job_dir = "/shared/hpcdet/exp-7/trial-42"
    # Charliecloud cannot bind read-only (ch-run has no such option): its dataset is read-write.
    read_only = run_type != "charliecloud"
    mounts = () if run_type == "none" else (
        BindMount("/shared/datasets", "/datasets", read_only),)
    return JobSpec(
        name="det-exp-7-trial-42",
        job_dir=job_dir,
        nodes=2,
        ranks_per_node=4,
        command=("python3", "-m", "hpcdet.harness"),
        partition="gpu",
        cpus_per_rank=8,
        gpus_per_node=4,
        time_limit="02:00:00",
        account="ml-team",
        qos="normal",
        comment="hpcdet experiment 7 trial 42",
        exclude="node[07-08]",
        sbatch_args=("--mem-per-gpu=16G", "--exclusive", "-C a100"),
        environment={
            "DET_MASTER": "http://login01:8080",
            "DET_EXPERIMENT_ID": "7",
            "DET_TRIAL_ID": "42",
            "DET_TRIAL_RUN_ID": "1",
            "DET_JOB_DIR": job_dir,
            "DET_TRIAL_INFO": f"{job_dir}/trial.json",
        },
        container=ContainerSpec(run_type, IMAGES[run_type], mounts, use_gpus=True),
        script_name="job-1.sh",
    )


@pytest.fixture
def job_spec() -> Callable[[str], JobSpec]:
    """:func:`golden_spec`: the fixed job of the golden files, for a container run type."""
    return golden_spec


@pytest.fixture
def golden_check() -> Callable[[str, str], None]:
    """Compare text with ``tests/golden/<name>``; ``HPCDET_REGEN_GOLDEN=1`` rewrites it."""

    def check(name: str, actual: str) -> None:
        path = GOLDEN_DIR / name
        if os.environ.get(REGEN_VAR) == "1":
            path.write_text(actual, encoding="utf-8")
            return
        if not path.exists():
            pytest.fail(f"golden file {path} is missing; create it with {REGEN_VAR}=1 pytest")
        expected = path.read_text(encoding="utf-8")
        if actual != expected:
            diff = difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=f"golden/{name}",
                tofile="rendered",
            )
            pytest.fail(
                "rendered script differs from the golden file:\n"
                + "".join(diff)
                + f"\nIf the change is intended, regenerate with: {REGEN_VAR}=1 pytest "
                + "tests/unit/dispatcher",
                pytrace=False,
            )

    return check


STUB_SRUN = """#!/bin/sh
# A stand-in for srun: print each argument on its own line, then what the rank would see.
for arg in "$@"; do printf '%s\\n' "$arg"; done
if [ -n "${STUB_SRUN_HANG:-}" ]; then : > "$STUB_SRUN_HANG"; sleep 60; fi
printf 'PWD=%s\\n' "$PWD"
printf 'VALUE=%s\\n' "$HPCDET_TEST_VALUE"
exit "${STUB_SRUN_RC:-0}"
"""


@pytest.fixture
def stub_srun(tmp_path: Path) -> Path:
    """A directory holding a stub ``srun``, to put first on ``PATH``."""
    bin_dir = tmp_path / "stub-bin"
    bin_dir.mkdir()
    srun = bin_dir / "srun"
    srun.write_text(STUB_SRUN, encoding="utf-8")
    srun.chmod(srun.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def _slurm_argument(text: str) -> tuple[str | None, int]:
    """One argument of an ``#SBATCH`` line and the characters consumed.

    A port of ``_get_argument`` in Slurm 22.05's ``src/sbatch/opt.c``: shell-like single and
    double quotes, a backslash escapes the next character even inside quotes, and an
    unquoted ``#`` ends the line.
    """
    i = 0
    while i < len(text) and text[i].isspace():
        i += 1
    chars: list[str] = []
    quote: str | None = None
    escaped = False
    while i < len(text) and (quote or not text[i].isspace()):
        char = text[i]
        if escaped:
            escaped = False
        elif char == "\\":
            escaped, i = True, i + 1
            continue
        elif quote:
            if char == quote:
                quote, i = None, i + 1
                continue
        elif char in "\"'":
            quote, i = char, i + 1
            continue
        elif char == "#":
            break
        chars.append(char)
        i += 1
    if quote:
        raise ValueError(f"Slurm would refuse this line: unmatched {quote}: {text!r}")
    return ("".join(chars) if chars else None), i


def slurm_directive_argv(script: str) -> list[str]:
    """The options sbatch reads from a script's ``#SBATCH`` lines (as Slurm 22.05 does)."""
    argv: list[str] = []
    for line in script.splitlines():
        if not line.startswith("#SBATCH"):
            if line.strip() and not line.lstrip().startswith("#"):
                break  # sbatch stops at the first command
            continue
        rest = line[len("#SBATCH") :]
        while True:
            argument, consumed = _slurm_argument(rest)
            if argument is None:
                break
            argv.append(argument)
            rest = rest[consumed:]
    return argv


@pytest.fixture
def sbatch_directives() -> Callable[[str], list[str]]:
    """:func:`slurm_directive_argv`: how sbatch itself would read the directives."""
    return slurm_directive_argv
