"""sbatch's option table and its three sources, read as sbatch 22.05 reads them."""

from __future__ import annotations

import pytest

from hpcdet.dispatcher.slurm.sbatch_options import (
    BY_NAME,
    BY_SHORT,
    CLI_ONLY,
    MASTER_HANDLED,
    OPTIONS,
    REFUSED,
    check_not_refused,
    directive_words,
    environment_settings,
    merge,
    option_named,
    parse_command_line,
    render_settings,
    script_settings,
    script_words,
    value_of,
)
from hpcdet.errors import ValidationError


@pytest.mark.parametrize("argv", [
    ["-p", "debug"], ["-pdebug"], ["--partition=debug"], ["--partition", "debug"],
    ["--part=debug"], ["--parti", "debug"],
])
def test_every_spelling_of_an_option_reads_the_same(argv: list[str]) -> None:
    assert parse_command_line([*argv, "job.sh"]).settings == [("partition", "debug")]


def test_options_stop_at_the_script_whose_arguments_are_its_own() -> None:
    parsed = parse_command_line(["-HQ", "-t", "5", "--exclusive", "job.sh", "-p", "x", "--y"])
    assert parsed.settings == [("hold", None), ("quiet", None), ("time", "5"),
                               ("exclusive", None)]
    assert parsed.operands == ["job.sh", "-p", "x", "--y"]
    assert parse_command_line(["-J", "n", "--", "-odd-name.sh"]).operands == ["-odd-name.sh"]


def test_an_exact_name_beats_a_longer_one_and_a_short_prefix_is_ambiguous() -> None:
    assert option_named("mem", "here").name == "mem"
    assert option_named("time", "here").name == "time"
    assert option_named("gpus-per-t", "here").name == "gpus-per-task"
    with pytest.raises(ValidationError, match="--ti is ambiguous .*--time, --time-min"):
        option_named("ti", "command line")


@pytest.mark.parametrize(("argv", "message"), [
    (["--bogus", "job.sh"], "command line: unknown sbatch option --bogus"),
    (["-y", "job.sh"], "unknown sbatch option -y"),
    (["--hold=yes", "job.sh"], "option --hold takes no value"),
    (["--time"], "option --time needs a value"),
    (["-t"], "option -t needs a value"),
    (["-N", "1", ":", "-N", "2", "job.sh"], "heterogeneous jobs"),
])
def test_bad_command_lines_name_the_problem(argv: list[str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_command_line(argv)


def test_optional_values_are_only_taken_after_an_equals_sign() -> None:
    parsed = parse_command_line(["--nice", "--exclusive=user", "job.sh"])
    assert parsed.settings == [("nice", None), ("exclusive", "user")]
    assert parsed.operands == ["job.sh"]


SCRIPT = """\
#!/bin/bash
# a comment, then a blank line

#SBATCH --job-name="two words" # a trailing comment
#SBATCH -t 10 --ntasks=2
#SBATCH --comment='it''s' --output="a b".out
#SLURM --qos=low
echo the first command
#SBATCH --partition=never-read
"""


def test_directives_are_read_until_the_first_command() -> None:
    assert script_settings(SCRIPT) == [
        ("job-name", "two words"), ("time", "10"), ("ntasks", "2"), ("comment", "its"),
        ("output", "a b.out"), ("qos", "low")]


def test_directive_words_split_like_slurm() -> None:
    # As sbatch 22.05.8 -vvvvv reports ("Found in script, argument"): a backslash escapes
    # quotes and '#', but a blank after it still ends the word.
    assert directive_words(r""" -J "a # b" 'c d'e\ f  # rest""", "x") == ["-J", "a # b",
                                                                           "c de", "f"]
    with pytest.raises(ValidationError, match="line 2: unmatched"):
        script_words("#!/bin/sh\n#SBATCH -J 'open\n")
    with pytest.raises(ValidationError, match="heterogeneous"):
        script_words("#!/bin/sh\n#SBATCH -N 1\n#SBATCH hetjob\n")


def test_a_stray_word_ends_the_directives_as_in_sbatch() -> None:
    words = script_words("#!/bin/sh\n#SBATCH -N 1 stray --time=5\n", "job.sh")
    assert [w.where for w in words] == ["job.sh line 2"] * 4
    assert script_settings("#!/bin/sh\n#SBATCH -N 1 stray --time=5\n") == [("nodes", "1")]


def test_sbatch_input_variables() -> None:
    environ = {"SBATCH_TIMELIMIT": "5", "SBATCH_MEM_PER_NODE": "1G", "SBATCH_HOLD": "1",
               "SBATCH_REQUEUE": "yes", "SBATCH_NO_REQUEUE": "0", "SBATCH_OVERCOMMIT": "",
               "SBATCH_DEBUG": "1", "SLURM_CLUSTERS": "c2", "SBATCH_EXCLUSIVE": "user",
               "SBATCH_REQ_SWITCH": "2", "SBATCH_WAIT4SWITCH": "10", "UNRELATED": "x"}
    assert sorted(environment_settings(environ)) == sorted([
        ("time", "5"), ("mem", "1G"), ("requeue", None), ("overcommit", None),
        ("verbose", None), ("clusters", "c2"), ("exclusive", "user"), ("switches", "2@10")])


def test_precedence_is_script_then_environment_then_command_line() -> None:
    script = script_settings("#!/bin/sh\n#SBATCH -J script -t 1 --mem=1G -n 1\n")
    environ = environment_settings({"SBATCH_JOB_NAME": "env", "SBATCH_TIMELIMIT": "2"})
    command = parse_command_line(["-J", "cli", "--mem-per-cpu=2G", "job.sh"]).settings
    merged = merge(script, environ, command)
    assert value_of(merged, "job-name") == "cli"
    assert value_of(merged, "time") == "2"
    assert value_of(merged, "ntasks") == "1"
    # --mem-per-cpu replaces --mem (they set the same thing), as sbatch does.
    assert value_of(merged, "mem") is None and value_of(merged, "mem-per-cpu") == "2G"
    assert merge([("requeue", None)], [("no-requeue", None)]) == [("no-requeue", None)]


def test_refused_options_say_why() -> None:
    with pytest.raises(ValidationError) as caught:
        check_not_refused([("array", "1-3"), ("time", "5"), ("uid", "bob")])
    message = str(caught.value)
    assert "--array: job arrays are not supported" in message and "--uid:" in message


def test_the_table_is_consistent() -> None:
    assert len(BY_NAME) == len(OPTIONS)
    # A short letter never takes an optional value (getopt would glue it on: -k is a flag).
    assert parse_command_line(["-k", "job.sh"]).settings == [("no-kill", None)]
    assert all(o.short is None or BY_SHORT[o.short] is o for o in OPTIONS)
    known = set(BY_NAME)
    assert set(REFUSED) <= known and CLI_ONLY <= known and MASTER_HANDLED <= known
    assert not (set(REFUSED) & CLI_ONLY) and not (MASTER_HANDLED & CLI_ONLY)
    assert render_settings([("time", "5"), ("hold", None)]) == ["--time=5", "--hold"]
