"""Run the experiment's ``entrypoint``.

Four shapes are recognised:

* a Python script (``python3 train.py --epochs 3``, ``python train.py``, ``train.py``)
  or module (``python -m pkg.train``): run *in this process* with :mod:`runpy`, so the
  script uses the process group, signal handlers and seeds the harness set up;
* ``module:Class``: a ``PyTorchTrial`` subclass, loaded from the working directory (the
  context) and trained in this process by :func:`hpcdet.pytorch.run_trial_class`;
* Determined's launcher, ``python3 -m determined.launch.torch_distributed [--] --trial
  model_def:Trial`` (or ``... SCRIPT...``), and hpcdet's own ``hpcdet.launch.torch_distributed``:
  translated to what the launcher would run on each rank (the trial class, or the script
  classified as above); torch.distributed.run overrides are refused, since srun already
  started the ranks. Determined's ``determined.launch.wrap_rank RANK -- CMD`` (and
  ``hpcdet.launch.wrap_rank``) is CMD: every line a rank writes is labelled with its rank
  anyway. Other ``determined.*`` modules are refused with a message, unless hpcdet's
  optional ``determined`` shim is installed and hpcdet has the module (then it runs);
* anything else: a subprocess inheriting the environment; its exit code is ours, and
  the preemption signals are passed on to it.

An in-process entrypoint that raises :class:`~hpcdet.InvalidHP` ends like Determined's:
the caller's handler reports the early exit, and the exit code is 0.
"""

from __future__ import annotations

import importlib.util
import os
import re
import runpy
import shlex
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Literal

from hpcdet.core._preempt import PREEMPT_SIGNALS, signal_preemption
from hpcdet.harness.entrypoint_error import EntrypointError
from hpcdet.harness.launcher_args import LAUNCHER_MODULES, LauncherArgsError, parse_launcher_args
from hpcdet.job.early_exit import InvalidHP

Kind = Literal["script", "module", "trial_class", "command"]
WRAP_RANK_MODULES = frozenset({"determined.launch.wrap_rank", "hpcdet.launch.wrap_rank"})
# A file of hpcdet's optional `determined` shim package (compat/determined-shim), not of
# Determined's: with the shim, `python -m determined.X` is hpcdet.X and runs as written.
DETERMINED_SHIM_MARKER = "_hpcdet_shim.py"
# Called when the entrypoint raised InvalidHP; returns the exit code (0 once reported).
InvalidHPHandler = Callable[[InvalidHP], int]

_PYTHON = re.compile(r"python(\d+(\.\d+)*)?")
_TRIAL_CLASS = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
# Interpreter flags that change nothing the harness cares about (stdout is already
# line-buffered); with any other flag the command runs as a subprocess.
_HARMLESS_FLAGS = frozenset({"-u", "-B"})
EXIT_USAGE = 2
EXIT_NOT_FOUND = 127

@dataclass(frozen=True)
class Entrypoint:
    """A parsed entrypoint: what to run and how.

    ``argv`` is ``(script, *args)`` for a script, ``(module, *args)`` for a module,
    ``(spec,)`` for a trial class and the full command otherwise.
    """

    kind: Kind
    argv: tuple[str, ...]


def parse_entrypoint(value: str | Sequence[str] | None) -> Entrypoint:
    """Classify an entrypoint given as a command string or an argv list."""
    argv = shlex.split(value) if isinstance(value, str) else [str(a) for a in value or []]
    if not argv:
        raise EntrypointError("the experiment has no entrypoint")
    if len(argv) == 1 and _TRIAL_CLASS.fullmatch(argv[0]):
        return Entrypoint("trial_class", tuple(argv))
    if argv[0].endswith(".py"):
        return Entrypoint("script", tuple(argv))
    if _PYTHON.fullmatch(os.path.basename(argv[0])):
        return _parse_python(argv)
    return Entrypoint("command", tuple(argv))


def _parse_python(argv: list[str]) -> Entrypoint:
    rest = argv[1:]
    while rest and rest[0] in _HARMLESS_FLAGS:
        rest = rest[1:]
    if len(rest) >= 2 and rest[0] == "-m":
        return _parse_module(rest[1], rest[2:])
    if rest and not rest[0].startswith("-"):
        return Entrypoint("script", tuple(rest))
    return Entrypoint("command", tuple(argv))


def _parse_module(module: str, args: list[str]) -> Entrypoint:
    if module in LAUNCHER_MODULES:
        return _parse_launcher(args)
    if module in WRAP_RANK_MODULES:
        return _parse_wrap_rank(args)
    if module.split(".")[0] == "determined" and not _served_by_determined_shim(module):
        raise EntrypointError(
            f"entrypoint: python3 -m {module} is Determined's; hpcdet supports its "
            "determined.launch.torch_distributed and determined.launch.wrap_rank launchers, "
            "a trial class (model_def:Trial) or a script (python3 train.py)")
    return Entrypoint("module", (module, *args))


def _served_by_determined_shim(module: str) -> bool:
    """Whether ``python -m determined.X`` runs hpcdet's ``hpcdet.X`` as written: hpcdet's
    optional ``determined`` shim (compat/determined-shim) is installed and hpcdet has that
    module. Looked up without importing the shim (or Determined's package)."""
    try:
        spec = importlib.util.find_spec("determined")
        locations = (spec.submodule_search_locations or []) if spec else []
        if not any(os.path.isfile(os.path.join(p, DETERMINED_SHIM_MARKER)) for p in locations):
            return False
        return importlib.util.find_spec("hpcdet" + module[len("determined"):]) is not None
    except (ImportError, ValueError):
        return False


def _parse_wrap_rank(args: list[str]) -> Entrypoint:
    """``wrap_rank RANK [--] CMD...`` as an entrypoint: CMD, classified as above.

    Every rank runs the experiment's entrypoint, and ``srun --label`` (or the harness)
    already labels each rank's lines with its rank: what wrap_rank adds in Determined.
    """
    rest = [a for a in args if a != "--no-redirect-stdio"]
    command = rest[1:]
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise EntrypointError("entrypoint: wrap_rank needs RANK and a command, e.g. "
                              "python3 -m determined.launch.wrap_rank RANK -- python3 train.py")
    return parse_entrypoint(command)


def _parse_launcher(args: list[str]) -> Entrypoint:
    """What the torch_distributed launcher runs on each rank (srun started the ranks)."""
    try:
        request = parse_launcher_args(args)
    except LauncherArgsError as exc:
        raise EntrypointError(f"entrypoint: {exc}") from None
    if request.trial is None:
        return parse_entrypoint(list(request.script))
    if not _TRIAL_CLASS.fullmatch(request.trial):
        raise EntrypointError(f"entrypoint: --trial {request.trial!r} is not MODULE:CLASS "
                              "(e.g. model_def:MyTrial)")
    return Entrypoint("trial_class", (request.trial,))


def interpreter_first_on_path(environ: MutableMapping[str, str] | None = None) -> None:
    """Make ``python3`` on PATH this interpreter (its directory goes first).

    In Determined's containers ``python3`` is the interpreter with ``determined`` installed;
    scripts start workers with it (``core_api/4_distributed.py`` runs ``python3 -m
    determined.launch.wrap_rank ...``). In a job the harness may run from a virtual
    environment that a login shell's PATH does not name: its children must find it first.
    """
    env = os.environ if environ is None else environ
    bindir = os.path.dirname(sys.executable)
    parts = [p for p in env.get("PATH", "").split(os.pathsep) if p]
    if bindir and parts[:1] != [bindir]:
        env["PATH"] = os.pathsep.join([bindir, *(p for p in parts if p != bindir)])


def run_entrypoint(entry: Entrypoint, on_invalid_hp: InvalidHPHandler | None = None) -> int:
    """Run ``entry`` and return the exit code it should give the job step.

    ``on_invalid_hp`` handles an in-process entrypoint's InvalidHP (default: say so, 0).
    """
    if entry.kind == "trial_class":
        return run_in_process(lambda: _train_trial_class(entry.argv[0]), on_invalid_hp)
    if entry.kind == "command":
        return run_command(entry.argv)
    if entry.kind == "module":
        return run_in_process(lambda: _run_module(entry.argv), on_invalid_hp)
    script = entry.argv[0]
    if not os.path.isfile(script):
        print(
            f"hpcdet harness: entrypoint script {script} not found in {os.getcwd()}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return run_in_process(lambda: _run_script(entry.argv), on_invalid_hp)


def run_in_process(
    target: Callable[[], object], on_invalid_hp: InvalidHPHandler | None = None
) -> int:
    """Call ``target`` as if it were a program: SystemExit and exceptions become codes."""
    try:
        target()
    except SystemExit as exc:
        return exit_code(exc.code)
    except InvalidHP as exc:
        return (on_invalid_hp or _invalid_hp_not_reported)(exc)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        return 1
    return 0


def _train_trial_class(spec: str) -> None:
    """Load the class from the working directory and train it; exits with the trainer's code.

    Everything the trainer needs comes from the Core API (``trial.json``), also for
    ``det experiment create --local``, which writes an unmanaged one (hpcdet.harness.local).
    """
    from hpcdet.harness.trial_class import load_trial_class

    try:
        trial_class = load_trial_class(spec)
    except EntrypointError as exc:
        print(f"hpcdet harness: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    from hpcdet.pytorch import run_trial_class

    raise SystemExit(run_trial_class(trial_class))


def _invalid_hp_not_reported(exc: InvalidHP) -> int:
    print(f"hpcdet harness: the entrypoint raised InvalidHP ({exc}); exiting 0", file=sys.stderr)
    return 0


def exit_code(code: object) -> int:
    """What the interpreter does with ``sys.exit(code)``: None is 0, text is printed, 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _run_script(argv: Sequence[str]) -> None:
    path = os.path.abspath(argv[0])
    # What `python train.py` would see: the script's directory first on the path.
    with _patched_sys([argv[0], *argv[1:]], os.path.dirname(path)):
        runpy.run_path(path, run_name="__main__")


def _run_module(argv: Sequence[str]) -> None:
    # What `python -m pkg.mod` would see: the cwd first on the path.
    with _patched_sys(list(argv), os.getcwd()):
        runpy.run_module(argv[0], run_name="__main__", alter_sys=True)


@contextmanager
def _patched_sys(argv: list[str], path0: str) -> Iterator[None]:
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = argv
    sys.path[:1] = [path0]
    try:
        yield
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


def run_command(argv: Sequence[str]) -> int:
    """Run a non-Python entrypoint as a child, forwarding the preemption signals."""
    try:
        child = subprocess.Popen(list(argv))
    except OSError as exc:
        print(f"hpcdet harness: cannot run {argv[0]}: {exc.strerror}", file=sys.stderr)
        return EXIT_NOT_FOUND
    with _forwarding_signals(child):
        code = child.wait()
    # A child killed by a signal exits like a shell would report it: 128 + signal.
    return 128 - code if code < 0 else code


@contextmanager
def _forwarding_signals(child: subprocess.Popen[bytes]) -> Iterator[None]:
    def forward(signum: int, frame: FrameType | None) -> None:
        signal_preemption()
        child.send_signal(signum)

    previous = {signum: signal.signal(signum, forward) for signum in PREEMPT_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
