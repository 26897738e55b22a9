"""Classifying and running the experiment's entrypoint."""

from __future__ import annotations

import json
import pathlib
import re
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
        # Determined's launcher, and hpcdet's: what it runs on each rank.
        ("python3 -m determined.launch.torch_distributed --trial model_def:T",
         Entrypoint("trial_class", ("model_def:T",))),
        ("python3 -m determined.launch.torch_distributed -- --trial pkg.model_def:T",
         Entrypoint("trial_class", ("pkg.model_def:T",))),
        ("python3 -m hpcdet.launch.torch_distributed --trial=model_def:T",
         Entrypoint("trial_class", ("model_def:T",))),
        ("python3 -m determined.launch.torch_distributed python3 train.py --lr 1",
         Entrypoint("script", ("train.py", "--lr", "1"))),
        ("python3 -m determined.launch.torch_distributed -- python3 -m pkg.train",
         Entrypoint("module", ("pkg.train",))),
        ("python3 -m determined.launch.torch_distributed -- bash run.sh",
         Entrypoint("command", ("bash", "run.sh"))),
        ("python3 -c 'print(1)'", Entrypoint("command", ("python3", "-c", "print(1)"))),
    ],
)
def test_parse(value: str | list[str], expected: Entrypoint) -> None:
    assert parse_entrypoint(value) == expected


@pytest.mark.parametrize(("value", "message"), [
    ("python3 -m determined.launch.torch_distributed --nproc_per_node 4 -- --trial m:T",
     "torch.distributed.run overrides --nproc_per_node 4 are not supported: srun already "
     "starts one rank per slot"),
    ("python3 -m determined.launch.torch_distributed --trial m:T --lr 1",
     "extra arguments after --trial m:T: --lr 1"),
    ("python3 -m determined.launch.torch_distributed --trial", "--trial needs MODULE:CLASS"),
    ("python3 -m determined.launch.torch_distributed --trial model_def",
     "--trial 'model_def' is not MODULE:CLASS"),
    ("python3 -m determined.launch.torch_distributed", "no script to run"),
    ("python3 -m determined.launch.torch_distributed --", "no script to run"),
    ("python3 -m determined.launch.deepspeed train.py",
     "python3 -m determined.launch.deepspeed is Determined's"),
])
def test_launcher_forms_hpcdet_cannot_honour_are_refused(value: str, message: str) -> None:
    with pytest.raises(EntrypointError, match=re.escape(message)):
        parse_entrypoint(value)


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


TRIAL_MODULE = """
import hpcdet.pytorch

class GoodTrial(hpcdet.pytorch.PyTorchTrial):
    pass

class NotATrial:
    pass
"""


@pytest.fixture
def context(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A context directory holding trials_p2.py, as the working directory."""
    (tmp_path / "trials_p2.py").write_text(TRIAL_MODULE)
    (tmp_path / "old_det.py").write_text("from determined.pytorch import PyTorchTrial\n")
    (tmp_path / "broken_dep.py").write_text("import no_such_dependency_p2\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("trials_p2", "old_det", "broken_dep"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


@pytest.mark.torch
def test_a_trial_class_is_loaded_from_the_context_and_trained(
    context: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hpcdet.pytorch

    trained: list[str] = []

    def run_trial_class(trial_class: type, *, local: bool = False) -> int:
        trained.append(f"{trial_class.__name__} local={local}")
        return 3

    monkeypatch.setattr(hpcdet.pytorch, "run_trial_class", run_trial_class)
    assert run_entrypoint(parse_entrypoint("trials_p2:GoodTrial")) == 3
    assert trained == ["GoodTrial local=False"]
    assert sys.path[0] == str(context)  # stays, for data loader workers and unpickling


@pytest.mark.torch
@pytest.mark.parametrize(("spec", "message"), [
    ("nothere:MyTrial", "entrypoint nothere:MyTrial: no module nothere in {ctx} "
                        "(looked for {ctx}/nothere.py)"),
    ("pkg.nothere:MyTrial", "no module pkg.nothere in {ctx} (looked for {ctx}/pkg/nothere.py)"),
    ("trials_p2:Missing", "entrypoint trials_p2:Missing: module trials_p2 "
                          "({ctx}/trials_p2.py) has no class Missing"),
    ("trials_p2:NotATrial", "NotATrial is not a subclass of hpcdet.pytorch.PyTorchTrial"),
    ("old_det:T", "old_det imports determined, which is Determined's: import from hpcdet"),
])
def test_a_trial_class_that_cannot_be_loaded_exits_2_with_one_line(
    context: pathlib.Path, capsys: pytest.CaptureFixture[str], spec: str, message: str
) -> None:
    assert run_entrypoint(parse_entrypoint(spec)) == 2
    err = capsys.readouterr().err
    assert message.format(ctx=context) in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_trial_module_failing_on_its_own_import_shows_the_traceback(
    context: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_entrypoint(parse_entrypoint("broken_dep:T")) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "No module named 'no_such_dependency_p2'" in err


def test_command_runs_as_subprocess_and_its_exit_code_propagates() -> None:
    assert run_entrypoint(parse_entrypoint(["sh", "-c", "exit 5"])) == 5
    assert run_entrypoint(parse_entrypoint(["sh", "-c", "kill -TERM $$"])) == 128 + 15


def test_command_not_found(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_entrypoint(parse_entrypoint("no-such-command-hpcdet --x")) == 127
    assert "cannot run no-such-command-hpcdet" in capsys.readouterr().err


def test_the_launcher_run_directly_runs_what_it_names(
    script: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hpcdet.launch.torch_distributed import main as launch

    assert launch(["--", "python3", "code/train.py", "4"]) == 4
    assert _seen(script)["argv"] == [str(script), "4"]
    assert launch(["--nproc_per_node", "2", "--", "python3", "code/train.py"]) == 2
    assert "hpcdet launcher: entrypoint: torch_distributed launcher: torch.distributed.run " \
           "overrides --nproc_per_node 2 are not supported" in capsys.readouterr().err
