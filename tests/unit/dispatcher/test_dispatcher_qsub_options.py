"""det qsub's reading of qsub's options: #PBS directives, the command line (which wins), the
environment as qsub gives it, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcdet.dispatcher.pbs.qsub_command import job_environment, prepare
from hpcdet.dispatcher.pbs.qsub_options import (
    merge,
    parse_command_line,
    script_words,
)
from hpcdet.dispatcher.pbs.task import DIALECT
from hpcdet.errors import ConfigError, ValidationError

SCRIPT = """#!/bin/bash
# a comment does not end the directives
#PBS -N from-the-script
#PBS -l select=1:ncpus=1,walltime=00:01:00
  #PBS -q workq -j oe
#PBS -l mem=1gb \\
   -m abe

cd "$PBS_O_WORKDIR"
#PBS -N after-the-first-command
echo hello
"""


def test_getopt_forms_and_lists_split_item_by_item() -> None:
    parsed = parse_command_line(["-Nname", "-l", "walltime=1:00,mem=2gb", "-hz",
                                 "-v", "A=1,B", "job.sh"])
    assert parsed.settings == [("N", "name"), ("l", "walltime=1:00"), ("l", "mem=2gb"),
                               ("h", None), ("z", None), ("v", "A=1"), ("v", "B")]
    assert parsed.operands == ["job.sh"] and not parsed.executable
    command = parse_command_line(["-q", "debug", "--", "/bin/echo", "-n", "x"])
    assert command.executable and command.operands == ["/bin/echo", "-n", "x"]


@pytest.mark.parametrize(("argv", "message"), [
    (["-Y"], "unknown qsub option -Y"), (["-N"], "-N needs a value"),
    (["--name=x"], "qsub has no long options"), (["-l", "walltime"], "resource=value"),
])
def test_bad_command_lines_are_refused(argv: list[str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_command_line(argv)


def test_directives_stop_at_the_first_command_and_continue_lines() -> None:
    words = [w.text for w in script_words(SCRIPT, where="job.sh")]
    assert words == ["-N", "from-the-script", "-l", "select=1:ncpus=1,walltime=00:01:00",
                     "-q", "workq", "-j", "oe", "-l", "mem=1gb", "-m", "abe"]
    assert script_words(SCRIPT, "#XYZ") == [] and script_words(SCRIPT, "") == []


def test_the_command_line_wins_over_directives_item_by_item(tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text(SCRIPT)
    prepared = prepare(["-N", "mine", "-l", "walltime=00:05:00", "job.sh"], {}, str(tmp_path),
                       lambda: None)
    assert prepared.body["options"] == [
        ["l", "select=1:ncpus=1"], ["q", "workq"], ["j", "oe"], ["l", "mem=1gb"],
        ["m", "abe"], ["N", "mine"], ["l", "walltime=00:05:00"]]
    assert prepared.body["scheduler"] == "pbs" and prepared.body["args"] == []
    assert (prepared.body["script"], prepared.body["script_name"]) == (SCRIPT, "job.sh")


def test_merge_keeps_one_setting_per_option_resource_and_attribute() -> None:
    merged = merge([("l", "walltime=1"), ("W", "depend=afterok:1"), ("N", "a")],
                   [("l", "walltime=2"), ("W", "umask=022"), ("N", "b")])
    assert merged == [("W", "depend=afterok:1"), ("l", "walltime=2"), ("W", "umask=022"),
                      ("N", "b")]


def test_the_directive_prefix_comes_from_c_then_pbs_dprefix(tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text("#!/bin/sh\n#PBS -N pbs\n#MY -N mine\necho\n")
    names = [prepare(argv, env, str(tmp_path), lambda: None).body["options"]
             for argv, env in [(["job.sh"], {}), (["job.sh"], {"PBS_DPREFIX": "#MY"}),
                               (["-C", "#MY", "job.sh"], {"PBS_DPREFIX": "#PBS"})]]
    assert names == [[["N", "pbs"]], [["N", "mine"]], [["N", "mine"]]]


def test_a_word_that_is_no_option_in_a_directive_is_refused(tmp_path: Path) -> None:
    (tmp_path / "odd.sh").write_text("#!/bin/sh\n#PBS -N a stray\necho\n")
    with pytest.raises(ValidationError, match="odd.sh line 2: 'stray' is not a qsub option"):
        prepare(["odd.sh"], {}, str(tmp_path), lambda: None)


@pytest.mark.parametrize(("directive", "message"), [
    ("-J 1-10", "-J: job arrays are not supported"),
    ("-I", "-I: interactive jobs are not supported"),
    ("-W group_list=wheel", "-W group_list: jobs run with"),
    ("-u root", "-u: jobs run as the master's PBS user"),
    ("-q workq@other", "-q workq@other: the master submits to its own server"),
])
def test_refusals_name_the_option(tmp_path: Path, directive: str, message: str) -> None:
    (tmp_path / "job.sh").write_text(f"#!/bin/sh\n#PBS {directive}\necho\n")
    with pytest.raises(ValidationError, match=f"det qsub cannot honour {message}"):
        prepare(["job.sh"], {}, str(tmp_path), lambda: None)


def test_an_executable_after_two_dashes_and_a_script_on_stdin(tmp_path: Path) -> None:
    command = prepare(["-N", "x", "--", "/bin/echo", "two words"], {}, str(tmp_path),
                      lambda: None)
    assert command.body["wrap"] == "/bin/echo 'two words'"
    assert (command.body["script"], command.body["script_name"]) == (None, "echo")
    stdin = prepare([], {}, str(tmp_path), lambda: b"echo from stdin\n")
    assert (stdin.body["script"], stdin.body["script_name"]) == ("echo from stdin\n", "STDIN")
    with pytest.raises(ValidationError, match="qsub takes one script"):
        prepare(["job.sh", "arg"], {}, str(tmp_path), lambda: None)


def test_det_qsubs_own_options_stay_on_the_client(tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text("#!/bin/sh\necho\n")
    prepared = prepare(["-z", "-W", "block=true", "-W", "depend=afterok:4.server", "-V",
                        "job.sh"], {"EDITOR": "vi"}, str(tmp_path), lambda: None)
    assert prepared.body["options"] == [["W", "depend=afterok:4.server"]]
    assert prepared.flag("wait") and prepared.flag("silent") and not prepared.flag("parsable")
    assert prepared.body["environment"]["EDITOR"] == "vi"


def test_the_environment_as_qsub_gives_it() -> None:
    environ = {"HOME": "/home/alice", "PATH": "/bin", "EDITOR": "vi", "PBS_JOBID": "1.s",
               "DET_PASS": "secret", "DET_MASTER": "m:8080", "LINES": "a\nb"}
    plain = job_environment([("v", "EDITOR"), ("v", "NEW=1")], environ, "/work", [])
    assert plain == {"EDITOR": "vi", "NEW": "1", "PBS_O_HOME": "/home/alice",
                     "PBS_O_PATH": "/bin", "PBS_O_WORKDIR": "/work"}
    warnings: list[str] = []
    everything = job_environment([("V", None), ("v", "EDITOR=emacs")], environ, "/w", warnings)
    assert everything["EDITOR"] == "emacs" and everything["DET_MASTER"] == "m:8080"
    assert not {"PBS_JOBID", "DET_PASS", "LINES"} & set(everything)
    assert warnings == ["not exported to the job (the value holds a line break): LINES"]


# ---- the master's checks of what a client sent ---------------------------------------------


def test_the_master_checks_every_option_again() -> None:
    good = DIALECT.check_options([["l", "walltime=00:01:00"], ["h", None], ["p", "-5"]])
    assert good == (("l", "walltime=00:01:00"), ("h", None), ("p", "-5"))
    with pytest.raises(ConfigError) as caught:
        DIALECT.check_options([["J", "1-3"], ["V", None], ["h", "x"], ["l", "a=1,b=2"],
                               ["p", "5000"], ["j", "oo"], ["S", "bash"], ["Y", "x"],
                               ["N", "a\nb"], ["W", "block=true"]])
    assert caught.value.errors == [
        "options[0]: -J: job arrays are not supported: one task tracks one PBS job (submit "
        "one task per index, or use plain qsub)",
        "options[1]: -V is handled by det qsub itself",
        "options[2]: -h takes no value",
        "options[3]: -l a=1,b=2: one name=value item per option",
        "options[4]: -p 5000: must be a priority from -1024 to 1023",
        "options[5]: -j oo: must be oe, eo or n",
        "options[6]: -S bash: give the shell's absolute path",
        "options[7]: unknown qsub option -Y (single letters without a dash, e.g. 'l')",
        "options[8]: -N: the value contains a newline ('\\n')",
        "options[9]: -W block=true is handled by det qsub itself"]


def test_the_masters_fields_and_the_pools_options_first() -> None:
    fields = DIALECT.fields([("N", "n"), ("q", "debug"), ("A", "acct"), ("o", "out/"),
                             ("j", "oe"), ("S", "/bin/bash@host"), ("k", "oe"),
                             ("l", "walltime=1:00")], ["-l mem=4gb", "-m n"])
    assert (fields.pool, fields.name, fields.account, fields.output) == ("debug", "n", "acct",
                                                                        "out/")
    assert fields.joined and fields.interpreter == "/bin/bash" and fields.chdir is None
    assert fields.passed == (("l", "mem=4gb"), ("m", "n"), ("j", "oe"), ("l", "walltime=1:00"))
