"""The batch-directive reader the run-as helper and the master share (issue 28, finding 7).

Expected values were taken from the real tools on the dev machine: Slurm 22.05.8's
``sbatch --<letter>=x`` (its getopt_long lists the possibilities of an ambiguous prefix) and
``sbatch -vvvvv --test-only`` ("Found in script, argument ..."), and OpenPBS's qsub
("qsub: directive error: ...", ``qstat -f`` of a held job).
"""

from __future__ import annotations

import pytest

from hpcdet.runas import directives
from hpcdet.runas.directives import DirectiveError

# `sbatch --<letter>=x` on Slurm 22.05.8: the possibilities it names (one option: resolved).
SBATCH_BY_LETTER = {
    "a": "account acctg-freq array", "b": "batch begin bb bbf",
    "c": "cluster-constraint chdir cluster clusters comment container context contiguous "
         "constraint core-spec cores-per-socket cpu-freq cpus-per-gpu cpus-per-task",
    "d": "deadline delay-boot dependency distribution",
    "e": "error exclude exclusive export export-file extra-node-info",
    "g": "get-user-env gid gpu-bind gpu-freq gpus gpus-per-node gpus-per-socket "
         "gpus-per-task gres gres-flags",
    "h": "help hint hold", "i": "ignore-pbs input", "j": "job-name",
    "k": "kill-on-invalid-dep", "l": "licenses",
    "m": "mail-type mail-user mcs-label mem mem-bind mem-per-cpu mem-per-gpu mincpus",
    "n": "network nice no-kill no-requeue nodefile nodelist nodes ntasks ntasks-per-core "
         "ntasks-per-gpu ntasks-per-node ntasks-per-socket ntasks-per-tres",
    "o": "open-mode output overcommit oversubscribe",
    "p": "parsable partition power prefer priority profile propagate", "q": "qos quiet",
    "r": "reboot requeue reservation", "s": "signal sockets-per-node spread-job switches",
    "t": "tasks-per-node test-only thread-spec threads-per-core time time-min tmp",
    "u": "uid use-min-nodes usage", "v": "verbose version",
    "w": "wait wait-all-nodes wckey wrap",
}  # fmt: skip


@pytest.mark.parametrize("letter", "abcdefghijklmnopqrstuvwxyz")
def test_the_sbatch_table_is_the_one_sbatch_22_05_resolves_against(letter: str) -> None:
    expected = sorted(SBATCH_BY_LETTER.get(letter, "").split())
    assert sorted(name for name in directives.SBATCH_LONG if name[0] == letter) == expected
    if len(expected) > 1:
        with pytest.raises(DirectiveError, match=f"--{letter} is ambiguous"):
            directives.resolve_sbatch_long(letter)
    elif not expected:
        with pytest.raises(DirectiveError, match="unknown sbatch option"):
            directives.resolve_sbatch_long(letter)


@pytest.mark.parametrize(("given", "meant"), [
    ("ui", "uid"), ("get-user", "get-user-env"), ("g", None), ("u", None), ("gi", "gid"),
    ("part", "partition"), ("mem", "mem"), ("time", "time"), ("ti", None),
    ("tasks", "ntasks-per-node"), ("cluster", "clusters"), ("cluste", None),
    ("ntasks-per-t", "ntasks-per-tres"), ("", None), ("bogus", None),
])
def test_a_long_name_means_what_getopt_long_makes_of_it(given: str, meant: str | None) -> None:
    if meant is None:
        with pytest.raises(DirectiveError, match="ambiguous|unknown"):
            directives.resolve_sbatch_long(given)
    else:
        assert directives.resolve_sbatch_long(given) == meant


def test_getopt_reads_values_attached_next_or_optional_as_sbatch_does() -> None:
    words = ["-kfoo", "-J", "--uid=0", "--nice", "-HQ", "--part", "debug", "-t5", "stray",
             "--uid=0"]
    parsed = directives.sbatch_getopt(words)
    assert parsed.settings == [("no-kill", "foo"), ("job-name", "--uid=0"), ("nice", None),
                               ("hold", None), ("quiet", None), ("partition", "debug"),
                               ("time", "5")]
    assert (parsed.stop, parsed.after_dashes) == (8, False)
    for bad, reason in [(["--hold=1"], "takes no value"), (["--uid"], "needs a value"),
                        (["-y"], "unknown sbatch option -y"), (["-t"], "-t needs a value")]:
        with pytest.raises(DirectiveError, match=reason):
            directives.sbatch_getopt(bad)


# Scripts given to `sbatch -vvvvv --test-only` and the arguments it reported.
@pytest.mark.parametrize(("line", "words"), [
    (r"""-J "a # b" 'c d'e\ f  # rest""", ["-J", "a # b", "c de", "f"]),
    ('--time=1 "" --uid=0', ["--time=1"]),  # an empty word ends the line
    ("--job-name=x hetjob --gid=0", ["--job-name=x"]),
    ("-J x#y --uid=0", ["-J", "x"]),
    (r"-J x\ --uid=0", ["-J", "x", "--uid=0"]),
    (r'-J y \"a b\" --gid=5', ["-J", "y", '"a', 'b"', "--gid=5"]),
    ("\t--nice\v--comment=c", ["--nice", "--comment=c"]),
])
def test_sbatch_lines_split_as_get_argument_splits_them(line: str, words: list[str]) -> None:
    assert directives.sbatch_line_words(line) == words


def test_sbatch_directives_run_to_the_first_command_over_comments_of_any_length() -> None:
    # Lines end at "\n" only: "# x\rtrue" is one comment line (sbatch's next_line).
    script = ("#!/bin/bash\n" + "# a comment\n" * 100_000 + "  \t# indented\n\n"
              "#SBATCH --part=debug\n#SBATCH--time=1\n#SLURM --ui=0\n# x\rtrue\n#SBATCH --gi=1\n"
              "   #SBATCH --uid=1 (an indented one is a comment)\nhostname\n#SBATCH --uid=2\n")
    assert directives.sbatch_settings(script) == [("partition", "debug"), ("time", "1"),
                                                  ("uid", "0"), ("gid", "1")]
    assert directives.refused_directives(script, "slurm") == ["--uid", "--gid"]


def test_every_component_of_a_heterogeneous_job_is_read() -> None:
    script = "#!/bin/sh\n#SBATCH -N1\n#SBATCH hetjob --uid=7\n#SBATCH --gid=0\ntrue\n"
    assert directives.sbatch_components(script) == [[(2, "-N1")], [(4, "--gid=0")]]
    assert directives.refused_directives(script, "slurm") == ["--gid"]


@pytest.mark.parametrize(("script", "reason"), [
    ("#!/bin/sh\n#SBATCH --u=0\n", "line 2: option --u is ambiguous"),
    ("#!/bin/sh\n#SBATCH -N 1 stray --uid=0\n", "line 2: 'stray' is not an sbatch option"),
    ("#!/bin/sh\n#SBATCH -J 'open\n", "line 2: unmatched '"),
    ("#!/bin/sh\n#SBATCH :\n", "line 2: a word starts with ':'"),
    ("#!/bin/sh\n#SBATCH -J a\x00b\n", "NUL"),
])
def test_what_sbatch_would_refuse_is_an_error(script: str, reason: str) -> None:
    with pytest.raises(DirectiveError, match=reason):
        directives.sbatch_settings(script)


PBS_SCRIPT = """#!/bin/sh
#PBS-N fromnospace
   #PBS -l walltime=1:00 \\
  -W User_List=user_a
: a colon line does not end the directives
#!nor does this
#PBS -hV
true
#PBS -N late
"""


def test_qsub_reads_directives_as_openpbs_does() -> None:
    # qsub then showed: Job_Name = fromnospace, Hold_Types = u, User_List = user_a.
    assert directives.qsub_settings(PBS_SCRIPT) == [
        ("N", "fromnospace"), ("l", "walltime=1:00"), ("W", "User_List=user_a"), ("h", None),
        ("V", None)]
    assert directives.refused_directives(PBS_SCRIPT, "pbs") == ["-W User_List"]
    assert directives.refused_directives(PBS_SCRIPT, "pbs", environment=True) == [
        "-W User_List", "-V"]
    assert directives.qsub_settings(PBS_SCRIPT, "") == []


@pytest.mark.parametrize(("directive", "reason"), [
    ("-N x # comment", "'#' is not a qsub option"),  # qsub: directive error: -N x # comment
    ("-N x stray -u root", "'stray' is not a qsub option"),
    ("-G", "unknown qsub option -G"), ("-N", "-N needs a value"),
    ("-N 'open", "unmatched '"), ("-W ''", "expected attribute=value"),
    ("-W a=1,", "expected attribute=value"), ("-W =1", "expected attribute=value"),
    (" ".join(["-h"] * 128), "more than 127 words"),
])
def test_what_qsub_would_refuse_is_an_error(directive: str, reason: str) -> None:
    script = f"#!/bin/sh\n#PBS {directive}\ntrue\n"
    with pytest.raises(DirectiveError, match=reason):
        directives.refused_directives(script, "pbs")


@pytest.mark.parametrize(("value", "names"), [
    ("umask=077", ["umask"]), ("depend=afterok:1,Group_List=x", ["depend", "Group_List"]),
    ("depend=afterok:1:2,afterok:3", ["depend"]), (" a = 1 , b=2", ["a", "b"]),
    ("a='x=y,user_list=z',c=3", ["a", "c"]), ('a="x,"', None),
])
def test_w_attributes_split_as_parse_equal_string_splits_them(value: str,
                                                               names: list[str] | None) -> None:
    if names is None:
        with pytest.raises(DirectiveError):
            directives.qsub_attribute_names(value)
    else:
        assert directives.qsub_attribute_names(value) == names
