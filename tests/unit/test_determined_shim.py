"""hpcdet's optional ``determined`` shim (``compat/determined-shim``): the mapping.

The shim is never installed into the test environment (it would change every other test's
``determined`` imports): in-process tests put its directory on ``sys.path`` and take the
finder, the path entry and every ``determined*`` module away again afterwards; the rest
run a subprocess with the directory on ``PYTHONPATH``, or a ``pip install --target``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import tomllib
from hang_guard import HANG_GUARD_S

import hpcdet
from hpcdet.harness.entrypoint import Entrypoint, EntrypointError, parse_entrypoint

REPO = Path(__file__).resolve().parents[2]
SHIM_DIR = REPO / "compat" / "determined-shim"
# A stand-in for Determined's real distribution (only its metadata): what pip would leave
# in site-packages after `pip install determined==0.38.1`.
FAKE_DETERMINED_DIST_INFO = "determined-0.38.1.dist-info"


def _forget_determined() -> None:
    for name in [n for n in sys.modules if n == "determined" or n.startswith("determined.")]:
        del sys.modules[name]


@pytest.fixture
def shim_on_path() -> Iterator[None]:
    """The shim's directory first on sys.path; everything it changed undone afterwards."""
    saved_path, saved_meta_path = list(sys.path), list(sys.meta_path)
    _forget_determined()
    sys.path.insert(0, str(SHIM_DIR))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.meta_path[:] = saved_meta_path
        sys.path[:] = saved_path
        _forget_determined()
        importlib.invalidate_caches()


@pytest.fixture
def det(shim_on_path: None) -> ModuleType:
    """``import determined as det``, through the shim."""
    return importlib.import_module("determined")


def _run(code: str, *extra_path: Path, cwd: Path | None = None,
         args: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``python -c code`` (or ``python ARGS`` when code is empty) with the shim on the path."""
    path = [str(p) for p in extra_path] + [str(SHIM_DIR), str(REPO)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    argv = [sys.executable, *(args or ("-c", code))]
    return subprocess.run(argv, env=env, cwd=cwd or REPO, capture_output=True, text=True,
                          timeout=HANG_GUARD_S)


# --- the top level ------------------------------------------------------------------------


def test_top_level_names_are_hpcdets(det: ModuleType) -> None:
    assert det.__file__ == str(SHIM_DIR / "determined" / "__init__.py")
    assert det.LOG_FORMAT == hpcdet.LOG_FORMAT
    assert det.InvalidHP is hpcdet.InvalidHP
    assert det.get_cluster_info is hpcdet.get_cluster_info
    assert (det.ClusterInfo, det.TrialInfo) == (hpcdet.ClusterInfo, hpcdet.TrialInfo)
    assert det.__version__ == hpcdet.__version__
    assert set(hpcdet.__all__) <= set(det.__all__) and set(hpcdet.__all__) <= set(dir(det))
    assert det.get_cluster_info() is None  # outside a job, as Determined's


def test_subpackages_as_attributes_are_hpcdets_modules(det: ModuleType) -> None:
    assert det.core is sys.modules["hpcdet.core"] is sys.modules["determined.core"]
    assert det.launch is sys.modules["hpcdet.launch"]
    assert det.experimental is sys.modules["hpcdet.experimental"]


def test_a_name_hpcdet_lacks_is_an_attribute_error(det: ModuleType) -> None:
    with pytest.raises(AttributeError, match="'determined' .* has no attribute 'keras'"):
        _ = det.keras
    assert not hasattr(det, "no_such_name")


# --- determined.X.Y is hpcdet.X.Y ----------------------------------------------------------


@pytest.mark.parametrize("name", [
    "core", "launch.torch_distributed", "launch.wrap_rank", "experimental",
    "experimental.client", "harness.entrypoint", "_info",
])
def test_every_module_is_the_same_object(shim_on_path: None, name: str) -> None:
    aliased = importlib.import_module(f"determined.{name}")
    assert aliased is importlib.import_module(f"hpcdet.{name}")
    # hpcdet's module keeps its own identity (name, spec, package): nothing was re-run.
    assert aliased.__spec__ is not None
    assert aliased.__name__ == aliased.__spec__.name == f"hpcdet.{name}"


def test_a_module_hpcdet_adds_later_is_mapped_without_naming_it(
        shim_on_path: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As ``hpcdet.experimental.core_v2`` will be: a module file the shim never names."""
    import hpcdet.experimental as experimental

    package = tmp_path / "extra"
    package.mkdir()
    (package / "brand_new.py").write_text("class Thing:\n    pass\n")
    monkeypatch.setattr(experimental, "__path__", [*experimental.__path__, str(package)])
    try:
        brand_new = importlib.import_module("determined.experimental.brand_new")
        assert brand_new is importlib.import_module("hpcdet.experimental.brand_new")
        assert brand_new.Thing is experimental.brand_new.Thing  # type: ignore[attr-defined]
    finally:
        sys.modules.pop("hpcdet.experimental.brand_new", None)
        if "brand_new" in vars(experimental):
            delattr(experimental, "brand_new")


def test_core_v2_is_mapped_like_any_other_module(shim_on_path: None) -> None:
    if importlib.util.find_spec("hpcdet.experimental.core_v2") is None:
        pytest.skip("hpcdet has no hpcdet.experimental.core_v2 (yet)")
    from determined.experimental import core_v2

    assert core_v2 is importlib.import_module("hpcdet.experimental.core_v2")


@pytest.mark.torch
def test_torch_modules_and_isinstance_agree(shim_on_path: None) -> None:
    pytest.importorskip("torch")
    from determined import pytorch
    from determined.core import DummyDistributedContext
    from determined.pytorch import PyTorchTrial, experimental
    from determined.pytorch.experimental import TorchBatchProcessor

    import hpcdet.pytorch.experimental
    assert pytorch is hpcdet.pytorch and PyTorchTrial is hpcdet.pytorch.PyTorchTrial
    assert experimental is hpcdet.pytorch.experimental
    assert TorchBatchProcessor is hpcdet.pytorch.experimental.TorchBatchProcessor

    trial = type("Trial", (PyTorchTrial,), {})  # a class written against Determined's name
    assert issubclass(trial, hpcdet.pytorch.PyTorchTrial)
    assert isinstance(DummyDistributedContext(), hpcdet.core.DistributedContext)


def test_a_module_hpcdet_lacks_says_so(shim_on_path: None) -> None:
    with pytest.raises(ModuleNotFoundError, match="'determined.keras': the determined shim "
                       "maps it onto 'hpcdet.keras', which hpcdet does not have") as caught:
        importlib.import_module("determined.keras")
    assert caught.value.name == "determined.keras"
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("determined.launch.deepspeed")


def test_importing_twice_installs_one_finder(det: ModuleType) -> None:
    from determined import _hpcdet_shim

    assert _hpcdet_shim.install() is _hpcdet_shim.install()
    assert sum(isinstance(f, _hpcdet_shim.AliasFinder) for f in sys.meta_path) == 1


# --- python -m determined.X ----------------------------------------------------------------


def test_python_m_runs_hpcdets_launcher() -> None:
    result = _run("", args=("-m", "determined.launch.torch_distributed", "--help"))
    assert result.returncode == 0, result.stderr
    assert "python3 -m hpcdet.launch.torch_distributed" in result.stdout


def test_python_m_wrap_rank_labels_and_runs_the_command() -> None:
    result = _run("", args=("-m", "determined.launch.wrap_rank", "5", "--",
                            sys.executable, "-c", "print('hello')"))
    assert (result.returncode, result.stdout) == (0, "[rank=5] hello\n"), result.stderr


def test_python_m_of_a_module_hpcdet_lacks_fails_with_the_shims_message() -> None:
    result = _run("", args=("-m", "determined.launch.deepspeed"))
    assert result.returncode == 1
    assert "which hpcdet does not have" in result.stderr


# --- hpcdet's entrypoint parsing, with and without the shim -------------------------------


def test_without_the_shim_other_determined_modules_are_refused() -> None:
    with pytest.raises(EntrypointError, match="determined.launch.torch_distributed and "
                       "determined.launch.wrap_rank launchers"):
        parse_entrypoint("python3 -m determined.harness.main")


def test_with_the_shim_a_determined_module_hpcdet_has_runs_as_written(
        shim_on_path: None) -> None:
    entry = parse_entrypoint("python3 -m determined.harness.main --x")
    assert entry == Entrypoint("module", ("determined.harness.main", "--x"))
    assert "determined" not in sys.modules  # found, not imported
    with pytest.raises(EntrypointError, match="determined.launch.deepspeed is Determined's"):
        parse_entrypoint("python3 -m determined.launch.deepspeed train.py")
    assert parse_entrypoint("python3 -m determined.launch.torch_distributed --trial m:T") == (
        Entrypoint("trial_class", ("m:T",)))


def test_hpcdet_never_imports_the_shim() -> None:
    code = ("import hpcdet, hpcdet.core, hpcdet.launch.torch_distributed, hpcdet.harness.local\n"
            "from hpcdet.harness.entrypoint import parse_entrypoint\n"
            "parse_entrypoint('python3 -m determined.launch.wrap_rank 0 -- python3 t.py')\n"
            "parse_entrypoint('python3 -m determined.harness.main')\n"
            "import sys; print(sorted(n for n in sys.modules if n.startswith('determined')))")
    result = _run(code)
    assert (result.returncode, result.stdout) == (0, "[]\n"), result.stderr


# --- refused beside Determined's own distribution -----------------------------------------


def _fake_determined(where: Path) -> Path:
    dist_info = where / FAKE_DETERMINED_DIST_INFO
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: determined\n"
                                        "Version: 0.38.1\n")
    return where


def test_refused_beside_determineds_distribution(shim_on_path: None, tmp_path: Path) -> None:
    sys.path.insert(0, str(_fake_determined(tmp_path / "site")))
    assert importlib.metadata.version("determined") == "0.38.1"
    with pytest.raises(ImportError) as caught:
        importlib.import_module("determined")
    message = str(caught.value)
    for part in ("Determined's own distribution 'determined' 0.38.1 is installed",
                 "'hpcdet-determined-shim'", "pip uninstall determined hpcdet-determined-shim",
                 "import hpcdet as det"):
        assert part in message, message
    assert "determined" not in sys.modules
    assert not any(type(f).__name__ == "AliasFinder" for f in sys.meta_path)


def test_refused_in_a_fresh_interpreter_too(tmp_path: Path) -> None:
    result = _run("import determined", _fake_determined(tmp_path / "site"))
    assert result.returncode == 1
    assert "ImportError: import determined: Determined's own distribution" in result.stderr


# --- packaging ----------------------------------------------------------------------------


def test_versions_agree_and_it_depends_on_hpcdet() -> None:
    shim = tomllib.loads((SHIM_DIR / "pyproject.toml").read_text())["project"]
    main = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert shim["name"] == "hpcdet-determined-shim"
    # hpcdet's own version is hpcdet.__version__ (pyproject's is dynamic: one place); the
    # shim, a distribution of its own, repeats it and this keeps them equal.
    assert "version" not in main and main["dynamic"] == ["version"]
    assert shim["version"] == hpcdet.__version__
    assert shim["dependencies"] == [f"hpcdet=={hpcdet.__version__}"]


def test_pip_installs_it_offline(tmp_path: Path) -> None:
    """``pip install`` from the directory (a copy: building writes build/ and egg-info)."""
    source = tmp_path / "src"
    shutil.copytree(SHIM_DIR, source, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert install.returncode == 0, install.stderr
    assert (target / "determined" / "_hpcdet_shim.py").is_file()
    code = ("import importlib.metadata as m, determined.core, hpcdet.core\n"
            "print(m.version('hpcdet-determined-shim'), determined.core is hpcdet.core)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": f"{target}{os.pathsep}{REPO}"},
                            timeout=HANG_GUARD_S)
    assert result.stdout == f"{hpcdet.__version__} True\n", result.stderr
