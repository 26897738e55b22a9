"""The one option engine (hpcdet.dispatcher.options) that sbatch's and qsub's tables share."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import Any

import pytest

from hpcdet.dispatcher import options
from hpcdet.dispatcher.options import ArgKind, OptionTable, Setting
from hpcdet.dispatcher.pbs import qsub_args, qsub_options
from hpcdet.dispatcher.pbs.task import option_problem
from hpcdet.dispatcher.slurm import sbatch_args, sbatch_options
from hpcdet.errors import ConfigError, ValidationError
from hpcdet.runas.directives import DirectiveError

# A made-up command with one option of each purpose (and of each kind).
TOY = OptionTable(
    command="toy", spell=lambda key: f"--{key}",
    kinds=MappingProxyType({
        "size": ArgKind.REQUIRED, "fast": ArgKind.NONE, "maybe": ArgKind.OPTIONAL,
        "owner": ArgKind.REQUIRED, "user": ArgKind.REQUIRED, "local": ArgKind.NONE,
        "queue": ArgKind.REQUIRED}),
    owned=MappingProxyType({"owner": "hpcdet sets the owner"}),
    refused=MappingProxyType({"user": "a job cannot choose its user"}),
    cli_only=frozenset({"local"}), master_handled=frozenset({"queue"}),
    key_noun="name", unknown_hint="names without dashes",
    cli_only_text="{option} is handled by det toy itself",
)  # fmt: skip


def toy_refusal(setting: Setting) -> str | None:
    return TOY.refusal(setting[0])


def toy_problem(item: Any, **hooks: Any) -> str | None:
    return options.setting_problem(TOY, item, toy_refusal, **hooks)


# ---- the table's purposes ------------------------------------------------------------------


def test_owned_options_are_refused_naming_the_option_as_given_and_the_reason() -> None:
    assert TOY.owned_problem("--owner", "owner") == (
        "option --owner is controlled by hpcdet: hpcdet sets the owner")
    assert TOY.owned_problem("--own", "owner") == (
        "option --own (toy's --owner) is controlled by hpcdet: hpcdet sets the owner")
    assert TOY.owned_problem("--size", "size") is None


def test_refused_options_are_listed_once_each_in_one_error() -> None:
    assert TOY.refusal("user") == "--user: a job cannot choose its user"
    assert TOY.refusal("size") is None
    with pytest.raises(ValidationError) as info:
        options.check_not_refused(TOY, [("user", "a"), ("size", "1"), ("user", "b")],
                                  toy_refusal)
    assert str(info.value) == "det toy cannot honour --user: a job cannot choose its user"
    options.check_not_refused(TOY, [("size", "1"), ("queue", "q")], toy_refusal)


@pytest.mark.parametrize(("item", "problem"), [
    (["size"], "must be [name, value] with a string name and a string or null value"),
    ([1, None], "must be [name, value] with a string name and a string or null value"),
    ("size=1", "must be [name, value] with a string name and a string or null value"),
    (["colour", "red"], "unknown toy option --colour (names without dashes)"),
    (["local", None], "--local is handled by det toy itself"),
    (["user", "root"], "--user: a job cannot choose its user"),
    (["fast", "yes"], "--fast takes no value"),
    (["size", None], "--size needs a value"),
    (["size", "1\n#SBATCH --uid=0"], "--size: the value contains a newline ('\\n')"),
    (["size", "1\r"], "--size: the value contains a carriage return ('\\r')"),
    (["size", "1\x00"], "--size: the value contains a NUL byte ('\\x00')"),
])  # fmt: skip
def test_setting_problem_names_each_purpose_and_shape(item: Any, problem: str) -> None:
    assert toy_problem(item) == problem


@pytest.mark.parametrize("item", [["size", "1"], ["size", ""], ["fast", None],
                                  ["maybe", None], ["maybe", "x"], ["queue", "q"]])
def test_setting_problem_passes_what_the_master_may_send(item: list[str | None]) -> None:
    assert toy_problem(item) is None


def test_setting_problem_hooks_a_schedulers_own_rules() -> None:
    empty_missing = dataclasses.replace(TOY, empty_is_missing=True)
    assert options.setting_problem(empty_missing, ["size", ""], toy_refusal) == (
        "--size needs a value")
    assert toy_problem(["size", "big"], value_problem=lambda key, value: (
        f"--{key} {value}: must be a number" if not value.isdigit() else None)) == (
        "--size big: must be a number")
    assert toy_problem(["queue", "a@b"], cli_only=lambda key, value: "@" in (value or "")) == (
        "--queue is handled by det toy itself")


# ---- items of a list of extra options ------------------------------------------------------


@pytest.mark.parametrize(("raw", "problem"), [
    (5, "must be a string, not int"),
    (None, "must be a string, not NoneType"),
    ("--size=1\n--user=root", "contains a newline ('\\n'): '--size=1\\n--user=root'"),
    ("--size=1\r", "contains a carriage return ('\\r'): '--size=1\\r'"),
    ("--size=1\x00", "contains a NUL byte ('\\x00'): '--size=1\\x00'"),
])  # fmt: skip
def test_item_text_refuses_what_no_job_script_can_carry(raw: object, problem: str) -> None:
    assert options.item_text(raw) == (problem, "")


def test_collect_items_names_each_bad_item_and_keeps_first_occurrences() -> None:
    def parse_one(raw: object) -> tuple[str | None, str | None]:
        problem, text = options.item_text(raw)
        return (problem, None) if problem else (None, text.upper())

    parsed, errors = options.collect_items(["a", 3, "b", "a", "x\ny"], "exp.args", parse_one)
    assert parsed == ["A", "B"]
    assert errors == ["exp.args[1]: must be a string, not int",
                      "exp.args[4]: contains a newline ('\\n'): 'x\\ny'"]


# ---- getopt, merging, directives -----------------------------------------------------------

_LETTERS = {"h": ArgKind.NONE, "k": ArgKind.OPTIONAL, "N": ArgKind.REQUIRED}


@pytest.mark.parametrize(("letters", "bundle"), [
    ("h", options.ShortBundle(("h",), None, "", None)),
    ("hk", options.ShortBundle(("h", "k"), None, "", None)),
    ("N", options.ShortBundle((), "N", "", None)),
    ("Nname", options.ShortBundle((), "N", "name", None)),
    ("hNname", options.ShortBundle(("h",), "N", "name", None)),
    ("hNh", options.ShortBundle(("h",), "N", "h", None)),
    ("hZN", options.ShortBundle(("h",), None, "", "Z")),
])  # fmt: skip
def test_short_bundles_read_as_getopt_reads_them(letters: str,
                                                 bundle: options.ShortBundle) -> None:
    assert options.read_short_bundle(letters, _LETTERS.get) == bundle


def test_merge_settings_later_wins_and_replaces_what_sets_the_same_thing() -> None:
    groups = {"mem": ("mem-per-cpu",), "mem-per-cpu": ("mem",)}

    def keys(setting: Setting) -> tuple[str, ...]:
        return (setting[0], *groups.get(setting[0], ()))

    merged = options.merge_settings(
        [[("mem", "1G"), ("time", "5")], [("mem-per-cpu", "2G"), ("time", "9")]], keys)
    assert merged == [("mem-per-cpu", "2G"), ("time", "9")]
    assert options.is_set(merged, "time") and not options.is_set(merged, "mem")
    assert options.value_of(merged, "time") == "9"


def test_located_names_the_place_and_line_of_a_directive_error() -> None:
    with pytest.raises(ValidationError, match="^job.sh line 3: bad quote$"):
        with options.located("job.sh", line=True):
            raise DirectiveError("bad quote", line=3)
    with pytest.raises(ValidationError, match="^job.sh: bad quote$"):
        with options.located("job.sh"):
            raise DirectiveError("bad quote", line=3)


# ---- the spellings each scheduler's table reads --------------------------------------------


@pytest.mark.parametrize(("arg", "problem"), [
    ("--uid=0", "option --uid is controlled by hpcdet: the job runs as the experiment's "
                "owner; it cannot choose another user"),
    ("--uid 0", "option --uid is controlled by hpcdet: the job runs as the experiment's "
                "owner; it cannot choose another user"),
    ("--ui=0", "option --ui (sbatch's --uid) is controlled by hpcdet: the job runs as the "
               "experiment's owner; it cannot choose another user"),
    ("-o x", "option -o is controlled by hpcdet"),
    ("-ox", "option -o is controlled by hpcdet"),
    ("-Hi x", "option -i (sbatch's --input) is controlled by hpcdet: the job reads no "
              "standard input"),
    ("--part=debug", "option --part (an abbreviation of --partition) is controlled by hpcdet"),
])  # fmt: skip
def test_sbatch_spellings_of_an_owned_option_are_refused(arg: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        sbatch_args.parse_sbatch_args([arg], path="p")
    assert info.value.errors[0] == f"p[0]: {problem}"


@pytest.mark.parametrize("arg", ["-N name", "-Nname", " -N  name "])
def test_qsub_spellings_of_an_owned_option_are_refused(arg: str) -> None:
    with pytest.raises(ConfigError) as info:
        qsub_args.parse_qsub_args([arg], path="p")
    assert info.value.errors == ["p[0]: option -N is controlled by hpcdet: hpcdet names its "
                                 "jobs to track them"]


@pytest.mark.parametrize("char", ["\n", "\r", "\x00"])
def test_both_schedulers_refuse_a_value_holding_a_line_break_or_nul(char: str) -> None:
    with pytest.raises(ConfigError, match="contains"):
        sbatch_args.parse_sbatch_args([f"--mem=1G{char}--uid=0"])
    with pytest.raises(ConfigError, match="contains"):
        qsub_args.parse_qsub_args([f"-l mem=1gb{char}-u root"])
    assert option_problem(["l", f"mem=1gb{char}"]) is not None


# ---- one engine for both -------------------------------------------------------------------


def test_sbatch_and_qsub_are_tables_over_the_one_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(sbatch_options.SBATCH, OptionTable)
    assert isinstance(qsub_options.QSUB, OptionTable)
    # The lists the rest of hpcdet uses are the tables' own, one per purpose.
    assert sbatch_options.REFUSED is sbatch_options.SBATCH.refused
    assert sbatch_args.OWNED_BY_HPCDET is sbatch_options.SBATCH.owned
    assert qsub_options.REFUSED is qsub_options.QSUB.refused
    assert qsub_options.CLI_ONLY is qsub_options.QSUB.cli_only

    seen: list[str] = []
    real_check = options.check_not_refused
    real_collect = options.collect_items

    def check(table: OptionTable, settings: Iterable[Setting],
              refusal: Callable[[Setting], str | None]) -> None:
        seen.append(f"check {table.command}")
        real_check(table, settings, refusal)

    def collect(args: Any, path: str, parse_one: Any) -> Any:
        seen.append(f"collect {path}")
        return real_collect(args, path, parse_one)

    monkeypatch.setattr(options, "check_not_refused", check)
    monkeypatch.setattr(options, "collect_items", collect)
    with pytest.raises(ValidationError, match="^det sbatch cannot honour --uid: "):
        sbatch_options.check_not_refused([("uid", "0")])
    with pytest.raises(ValidationError, match="^det qsub cannot honour -u: "):
        qsub_options.check_not_refused([("u", "root")])
    sbatch_args.parse_sbatch_args(["--mem=1G"], path="slurm")
    qsub_args.parse_qsub_args(["-l mem=1gb"], path="pbs")
    assert seen == ["check sbatch", "check qsub", "collect slurm", "collect pbs"]
