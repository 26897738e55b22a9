"""The wheel as a site installs it: built from the working tree, installed into a fresh venv
outside the repository (no PYTHONPATH, cwd not the repository). The session fixture
``installed_hpcdet`` (conftest.py) makes one per session; tests run its programs with
:meth:`InstalledHpcdet.run`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from it_helpers import REPO

#: What ``python -m build`` reads: the project's metadata and the package (a copy of the
#: working tree, so the build writes its egg-info and build/ there, not into the repository).
_SOURCES = ("pyproject.toml", "README.md", "hpcdet")
_BUILD_TIMEOUT_S = 600
#: Variables of the test's own environment that would let the venv see the repository or
#: the project's venv instead of what the wheel installed.
_LEAKY = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "PYTHONUSERBASE")


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path

    @property
    def version(self) -> str:
        """The version in the wheel's file name (``hpcdet-<version>-py3-none-any.whl``)."""
        return self.wheel.name.split("-")[1]

    def wheel_names(self) -> set[str]:
        with zipfile.ZipFile(self.wheel) as archive:
            return set(archive.namelist())


@dataclass(frozen=True)
class InstalledHpcdet:
    """A venv with the wheel installed (``[extras]``), and a scratch directory to run in."""

    built: Built
    venv: Path
    workdir: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def env(self, **extra: str) -> dict[str, str]:
        """This process's environment without what would reach the repository, the venv's
        bin/ first in PATH."""
        env = {k: v for k, v in os.environ.items() if k not in _LEAKY}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        env.update(extra)
        return env

    def run(self, program: str, *args: str, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``<venv>/bin/<program> args...`` in the scratch directory; never raises on a
        non-zero exit (the caller's assertion shows stdout and stderr)."""
        return subprocess.run([str(self.bin / program), *args], cwd=self.workdir,
                              env=env or self.env(), capture_output=True, text=True,
                              timeout=timeout)


def build(out: Path) -> Built:
    """``python -m build`` (sdist, then the wheel from the sdist) of a copy of the working
    tree's package sources into ``out``."""
    source = out / "source"
    source.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in _SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=ignore)
        else:
            shutil.copy2(path, source / name)
    dist = out / "dist"
    _check([sys.executable, "-m", "build", "--outdir", str(dist), str(source)], cwd=out)
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in dist.iterdir())
    return Built(wheel=wheels[0], sdist=sdists[0])


def install(built: Built, root: Path, extras: str = "master") -> InstalledHpcdet:
    """A fresh venv under ``root`` with ``<wheel>[extras]`` from the package index (pip's
    cache makes a second session's install quick)."""
    venv, workdir = root / "venv", root / "work"
    workdir.mkdir(parents=True)
    installed = InstalledHpcdet(built=built, venv=venv, workdir=workdir)
    # The system's python3, not this venv's: the venv must not inherit the project's one.
    # --without-pip, then this pip installs into it (pip --python): ensurepip alone costs
    # about 10 s on a busy host. pip compiles the bytecode, as at a site: the master's
    # first start then takes what an installed master's takes.
    base = Path(getattr(sys, "_base_executable", sys.executable))
    _check([str(base), "-m", "venv", "--without-pip", str(venv)], cwd=workdir,
           env=installed.env())
    _check([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
            "--quiet", "--disable-pip-version-check", f"{built.wheel}[{extras}]"],
           cwd=workdir, env=installed.env())
    return installed


def _check(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    """Run a setup command; fail with its output if it fails."""
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=_BUILD_TIMEOUT_S)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed ({result.returncode}):\n"
                             f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
