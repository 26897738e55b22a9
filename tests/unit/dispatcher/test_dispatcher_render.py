"""The Jinja2 environment, directive rendering, quoting, and the golden job scripts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jinja2
import pytest

from hpcdet.dispatcher.base import JobSpec
from hpcdet.dispatcher.containers import RUN_TYPES
from hpcdet.dispatcher.render import directive_quote, make_environment, render_directives
from hpcdet.dispatcher.safety import check_safe, shquote
from hpcdet.dispatcher.slurm.backend import TEMPLATE_NAME, SlurmBackend
from hpcdet.errors import ValidationError

SpecFactory = Callable[[str], JobSpec]


def test_check_safe_returns_the_value() -> None:
    assert check_safe("a 'b' $(c)", "spec.name") == "a 'b' $(c)"


@pytest.mark.parametrize(("char", "word"), [("\n", "newline"), ("\r", "carriage"), ("\0", "NUL")])
def test_check_safe_names_the_field_and_character(char: str, word: str) -> None:
    with pytest.raises(ValidationError, match=f"spec.comment contains a {word}"):
        check_safe(f"x{char}echo INJECTED", "spec.comment")


def test_shquote_quotes_for_the_shell() -> None:
    assert shquote("a b'c") == "'a b'\"'\"'c'"
    assert shquote(42) == "42"


def test_directives_are_sorted_validated_and_quoted() -> None:
    text = render_directives(
        "#SBATCH",
        {"nodes": 2, "job-name": "my job", "exclusive": True, "requeue": False, "qos": None},
    )
    assert text == "#SBATCH --exclusive\n#SBATCH --job-name='my job'\n#SBATCH --nodes=2"


@pytest.mark.parametrize("key", ["Job-Name", "job_name", "-x", "9x", "a b", ""])
def test_directive_keys_must_be_long_option_names(key: str) -> None:
    with pytest.raises(ValidationError, match="invalid directive name"):
        render_directives("#SBATCH", {key: "x"})


def test_directive_values_with_newlines_are_refused() -> None:
    with pytest.raises(ValidationError, match="--job-name contains a newline"):
        render_directives("#SBATCH", {"job-name": "x\necho INJECTED"})


@pytest.mark.parametrize(
    "value", ["plain", "two words", "it's", 'say "hi"', "#hash", "back\\slash", "%j", "$(x) `y`"]
)
def test_directive_quoting_round_trips_through_slurms_parser(
    value: str, sbatch_directives: Callable[[str], list[str]]
) -> None:
    line = f"#SBATCH --comment={directive_quote(value, 'comment')}"
    assert sbatch_directives(line) == [f"--comment={value}"]


def test_site_template_directory_is_searched_first(tmp_path: Path, job_spec: SpecFactory) -> None:
    (tmp_path / TEMPLATE_NAME).write_text("site: {{ context_dir | shquote }}\n")
    backend = SlurmBackend(template_dir=str(tmp_path))
    assert (
        backend.render(job_spec("none")).script == "site: /shared/hpcdet/exp-7/trial-42/context\n"
    )


def test_packaged_template_is_used_when_the_site_has_none(
    tmp_path: Path, job_spec: SpecFactory
) -> None:
    script = SlurmBackend(template_dir=str(tmp_path)).render(job_spec("none")).script
    assert script.startswith("#!/bin/bash\n")


def test_undefined_template_variables_fail(tmp_path: Path, job_spec: SpecFactory) -> None:
    (tmp_path / TEMPLATE_NAME).write_text("{{ no_such_variable }}\n")
    with pytest.raises(jinja2.UndefinedError):
        SlurmBackend(template_dir=str(tmp_path)).render(job_spec("none"))


def test_environment_does_not_html_escape() -> None:
    template = make_environment().from_string("{{ v }}|{{ v | shquote }}")
    assert template.render(v="<a&b>") == "<a&b>|'<a&b>'"


@pytest.mark.parametrize("run_type", RUN_TYPES)
def test_golden_script(
    run_type: str, job_spec: SpecFactory, golden_check: Callable[[str, str], None]
) -> None:
    submission = SlurmBackend(gpu_request="gres").render(job_spec(run_type))
    golden_check(f"slurm_{run_type}.sbatch", submission.script)


@pytest.mark.parametrize("run_type", RUN_TYPES)
def test_golden_directives_are_what_sbatch_reads(
    run_type: str, job_spec: SpecFactory, sbatch_directives: Callable[[str], list[str]]
) -> None:
    argv = sbatch_directives(SlurmBackend(gpu_request="gres").render(job_spec(run_type)).script)
    assert "--job-name=det-exp-7-trial-42" in argv
    assert "--comment=hpcdet experiment 7 trial 42" in argv
    assert "--output=/shared/hpcdet/exp-7/trial-42/slurm-%j.out" in argv
    assert argv[-4:] == ["--mem-per-gpu=16G", "--exclusive", "-C", "a100"]


def test_submission_names_the_script_and_the_sbatch_argv(job_spec: SpecFactory) -> None:
    submission = SlurmBackend(sbatch="/opt/slurm/bin/sbatch").render(job_spec("none"))
    path = "/shared/hpcdet/exp-7/trial-42/job-1.sh"
    assert submission.script_path == path
    assert submission.argv == ("/opt/slurm/bin/sbatch", "--parsable", path)
