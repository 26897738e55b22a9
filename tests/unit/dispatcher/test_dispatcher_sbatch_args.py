"""Validation and rendering of the user's slurm.sbatch_args."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hpcdet.dispatcher.slurm.sbatch_args import (
    CONTROLLED_OPTIONS,
    SbatchArg,
    parse_sbatch_args,
    render_sbatch_args,
)
from hpcdet.errors import ConfigError


@pytest.mark.parametrize(
    ("arg", "line"),
    [
        ("--mem=4G", "#SBATCH --mem=4G"),
        ("--exclusive", "#SBATCH --exclusive"),
        ("-t 10", "#SBATCH -t 10"),
        ("-t10", "#SBATCH -t 10"),
        ("--time 10", "#SBATCH --time=10"),
        ("  --mem-per-gpu=16G  ", "#SBATCH --mem-per-gpu=16G"),
        ("--mail-user=hello world", "#SBATCH --mail-user='hello world'"),
        ("-C a100&ib", "#SBATCH -C 'a100&ib'"),
        ("--gres=nvme:1", "#SBATCH --gres=nvme:1"),
        ("--gpus-per-node=2", "#SBATCH --gpus-per-node=2"),
        ("--ntasks-per-core=1", "#SBATCH --ntasks-per-core=1"),
    ],
)
def test_accepted_args_render_as_directives(arg: str, line: str) -> None:
    assert render_sbatch_args([arg]) == line


def test_values_reach_sbatch_unchanged(sbatch_directives: Callable[[str], list[str]]) -> None:
    value = 'it\'s "quoted" #not-a-comment \\ $(x)'
    script = render_sbatch_args([f"--mail-user={value}", f"-C {value}"])
    assert sbatch_directives(script) == [f"--mail-user={value}", "-C", value]


def test_duplicates_are_dropped_keeping_order() -> None:
    args = ["--mem=4G", "--exclusive", "--mem 4G", "-t 5", "--exclusive", "-t5"]
    assert parse_sbatch_args(args) == [
        SbatchArg("--mem", "4G"), SbatchArg("--exclusive"), SbatchArg("-t", "5")
    ]  # fmt: skip


def _controlled_forms() -> list[str]:
    forms = []
    for option in CONTROLLED_OPTIONS:
        forms += [f"{option}=1", f"{option} 1"] if option.startswith("--") else [f"{option} 1"]
    return forms + ["-N2", "--part=debug", "--job=x", "--gres=gpu:2", "--gres=gres/gpu:a100:1",
                    "--gres=nvme:1,gpu:1", "--gres gpu"]  # fmt: skip


@pytest.mark.parametrize("arg", _controlled_forms())
def test_controlled_options_are_refused(arg: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_sbatch_args(["--mem=1G", arg])
    assert info.value.errors[0].startswith("<config>.slurm.sbatch_args[1]: option ")
    assert "controlled by hpcdet" in info.value.errors[0]


def test_one_error_lists_every_rejected_option_and_the_controlled_list() -> None:
    with pytest.raises(ConfigError) as info:
        parse_sbatch_args(["--mem=1G", "--partition=x", "-N 2", "--exclusive"], path="exp.slurm")
    errors = info.value.errors
    assert errors[:2] == [
        "exp.slurm[1]: option --partition is controlled by hpcdet",
        "exp.slurm[2]: option -N is controlled by hpcdet",
    ]
    assert all(option in errors[2] for option in CONTROLLED_OPTIONS)
    assert "--gres=gpu" in errors[2]


@pytest.mark.parametrize(
    ("arg", "problem"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("mem=4G", "starting with '-'"),
        ("--mem=4G\n#SBATCH -p x", "newline"),
        ("--mem=4G\r", "carriage return"),
        ("--mem=4\x00G", "NUL"),
        ("--mem_x=1", "is not an sbatch option"),
        ("-", "is not an sbatch option"),
        (5, "must be a string"),
    ],
)
def test_malformed_args_are_refused_with_their_index(arg: object, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_sbatch_args(["--exclusive", arg])  # type: ignore[list-item]
    assert info.value.errors[0].startswith("<config>.slurm.sbatch_args[1]: ")
    assert problem in info.value.errors[0]


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        parse_sbatch_args(["", "--wrap=x", "mem"])
    assert [error.split(":")[0] for error in info.value.errors[:3]] == [
        "<config>.slurm.sbatch_args[0]", "<config>.slurm.sbatch_args[1]",
        "<config>.slurm.sbatch_args[2]",
    ]  # fmt: skip


# issue 14 finding 1: options that change identity, output or hpcdet's bookkeeping.
@pytest.mark.parametrize(
    ("arg", "canonical"),
    [
        ("--uid=0", "--uid"), ("--uid 0", "--uid"), ("--ui=0", "--uid"), ("--gid=0", "--gid"),
        ("--gid 0", "--gid"), ("--comment=x", "--comment"), ("--comm x", "--comment"),
        ("-o x", "--output"), ("-ox", "--output"), ("-Ho x", "--output"), ("-e/tmp/e", "--error"),
        ("--output=/tmp/x", "--output"), ("-D /", "--chdir"), ("--export=ALL", "--export"),
        ("--export-file=/etc/shadow", "--export-file"), ("--get-user-env", "--get-user-env"),
        ("--wrap=id", "--wrap"), ("--parsable", "--parsable"), ("-J x", "--job-name"),
        ("--array=1-3", "--array"), ("-a 1", "--array"), ("-M other", "--clusters"),
        ("-W", "--wait"), ("--nodefile=/etc/passwd", "--nodefile"), ("--open-mode=append",
        "--open-mode"),
    ],
)  # fmt: skip
def test_identity_output_and_bookkeeping_options_are_refused(arg: str, canonical: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_sbatch_args(["--mem=1G", arg])
    first = info.value.errors[0]
    assert first.startswith("<config>.slurm.sbatch_args[1]: option ")
    assert "controlled by hpcdet" in first
    # Named as given (``-o``) or by its long name (``--uid`` for ``--ui``).
    assert canonical in first or f"option {arg[:2]} " in first


def test_harmless_options_stay_allowed() -> None:
    args = ["--dependency=afterok:1", "-H", "--mail-type=END", "--mem=1G", "-t 10"]
    assert [arg.option for arg in parse_sbatch_args(args)] == [
        "--dependency", "-H", "--mail-type", "--mem", "-t"]
