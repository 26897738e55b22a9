"""Classifying and running the experiment's entrypoint."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

from hpcdet.harness.entrypoint import (
    Entrypoint,
    EntrypointError,
    parse_entrypoint,
    run_entrypoint,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("python3 train.py --epochs 3", Entrypoint("script", ("train.py", "--epochs", "3"))),
        ("python train.py", Entrypoint("script", ("train.py",))),
        ("/usr/bin/python3.11 -u train.py", Entrypoint("script", ("train.py",))),
        ("train.py --x 'a b'", Entrypoint("script", ("train.py", "--x", "a b"))),
        (["python3", "sub/train.py"], Entrypoint("script", ("sub/train.py",))),
        ("python3 -m pkg.train --lr 1", Entrypoint("module", ("pkg.train", "--lr", "1"))),
        ("model_def:MNistTrial", Entrypoint("trial_class", ("model_def:MNistTrial",))),
        ("bash run.sh", Entrypoint("command", ("bash", "run.sh"))),
        ("python3 -c 'print(1)'", Entrypoint("command", ("python3", "-c", "print(1)"))),
    ],
)
def test_parse(value: str | list[str], expected: Entrypoint) -> None:
    assert parse_entrypoint(value) == expected


@pytest.mark.parametrize("value", [None, "", []])
def test_no_entrypoint(value: str | list[str] | None) -> None:
    with pytest.raises(EntrypointError, match="no entrypoint"):
        parse_entrypoint(value)


SCRIPT = """
import json, os, sys
import helper  # next to the script: its directory is sys.path[0]
with open(os.environ["OUT_FILE"], "w") as out:
    json.dump({"argv": sys.argv, "path0": sys.path[0], "cwd": os.getcwd(), "name": __name__}, out)
code = sys.argv[1] if len(sys.argv) > 1 else ""
if code == "raise":
    raise RuntimeError("boom from the script")
if code:
    sys.exit(int(code) if code.isdigit() else code)
"""


@pytest.fixture
def script(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    code_dir = tmp_path / "code"
    code_dir.mkdir()
    (code_dir / "train.py").write_text(SCRIPT)
    (code_dir / "helper.py").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OUT_FILE", str(tmp_path / "out.json"))
    monkeypatch.delitem(sys.modules, "helper", raising=False)
    return code_dir / "train.py"


def _seen(script: pathlib.Path) -> dict[str, object]:
    seen: dict[str, object] = json.loads((script.parents[1] / "out.json").read_text())
    return seen


def test_script_runs_in_process_like_python_would(script: pathlib.Path) -> None:
    argv_before, path_before = list(sys.argv), list(sys.path)
    assert run_entrypoint(parse_entrypoint("python3 code/train.py")) == 0
    seen = _seen(script)
    # runpy puts the absolute path in argv[0] (and __file__), as python 3.9+ does for __file__.
    assert seen["argv"] == [str(script)]
    assert seen["path0"] == str(script.parent)
    assert seen["cwd"] == str(script.parents[1])
    assert seen["name"] == "__main__"
    assert (sys.argv, sys.path) == (argv_before, path_before)


@pytest.mark.parametrize(("arg", "code"), [("0", 0), ("3", 3), ("some message", 1)])
def test_system_exit_code_propagates(script: pathlib.Path, arg: str, code: int) -> None:
    assert run_entrypoint(Entrypoint("script", ("code/train.py", arg))) == code


def test_uncaught_exception_prints_traceback_and_exits_1(
    script: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_entrypoint(Entrypoint("script", ("code/train.py", "raise"))) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: boom from the script" in err


def test_missing_script_is_a_usage_error(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_entrypoint(parse_entrypoint("python3 nothere.py")) == 2
    assert "entrypoint script nothere.py not found" in capsys.readouterr().err


def test_module_entrypoint_finds_modules_in_the_cwd(
    script: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(script.parent)
    monkeypatch.delitem(sys.modules, "train", raising=False)
    assert run_entrypoint(parse_entrypoint("python -m train 4")) == 4
    assert _seen(script)["name"] == "__main__"


def test_trial_class_is_refused_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_entrypoint(parse_entrypoint("model_def:MyTrial")) == 2
    assert "trial classes (PyTorchTrial) are not supported yet" in capsys.readouterr().err


def test_command_runs_as_subprocess_and_its_exit_code_propagates() -> None:
    assert run_entrypoint(parse_entrypoint(["sh", "-c", "exit 5"])) == 5
    assert run_entrypoint(parse_entrypoint(["sh", "-c", "kill -TERM $$"])) == 128 + 15


def test_command_not_found(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_entrypoint(parse_entrypoint("no-such-command-hpcdet --x")) == 127
    assert "cannot run no-such-command-hpcdet" in capsys.readouterr().err
