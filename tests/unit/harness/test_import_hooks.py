"""hpcdet.job.import_hooks: a function run right after a module's first import."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hang_guard import HANG_GUARD_S

from hpcdet.job.import_hooks import when_imported


def _run(tmp_path: Path, code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter whose path has a package ``heavy``; its lines."""
    (tmp_path / "heavy").mkdir()
    (tmp_path / "heavy" / "__init__.py").write_text(
        "import importlib.resources\nprint('executing heavy')\nVALUE = 41\n"
        "SPEC_LOADER = type(__spec__.loader).__name__\n")
    (tmp_path / "heavy" / "data.txt").write_text("a resource")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_callbacks_run_in_order_after_the_module_executed(tmp_path: Path) -> None:
    lines = _run(tmp_path, """
        import sys
        from hpcdet.job.import_hooks import pending, when_imported
        when_imported("heavy", lambda m: print("first", m.VALUE))
        when_imported("heavy", lambda m: print("second", m.VALUE + 1))
        print("registered", "heavy" in sys.modules, pending("heavy"))
        import heavy
        import heavy  # a second import runs nothing again
        print("after", pending("heavy"))
    """)
    assert lines == ["registered False True", "executing heavy", "first 41", "second 42",
                     "after False"]


def test_the_module_keeps_its_own_loader(tmp_path: Path) -> None:
    lines = _run(tmp_path, """
        import importlib.resources
        from hpcdet.job.import_hooks import when_imported
        when_imported("heavy", lambda m: None)
        import heavy
        print(heavy.SPEC_LOADER, type(heavy.__loader__).__name__)
        print(importlib.resources.files("heavy").joinpath("data.txt").read_text())
    """)
    assert lines == ["executing heavy", "SourceFileLoader SourceFileLoader", "a resource"]


def test_a_callback_error_comes_out_of_the_import(tmp_path: Path) -> None:
    lines = _run(tmp_path, """
        from hpcdet.job.import_hooks import when_imported
        def refuse(module):
            raise SystemExit(7)
        when_imported("heavy", refuse)
        try:
            import heavy
        except SystemExit as exc:
            print("exit", exc.code)
    """)
    assert lines == ["executing heavy", "exit 7"]


def test_an_imported_module_calls_back_at_once() -> None:
    seen: list[str] = []
    when_imported("json", lambda module: seen.append(module.__name__))
    assert seen == ["json"]


def test_only_top_level_modules() -> None:
    with pytest.raises(ValueError, match="top-level module"):
        when_imported("torch.distributed", lambda module: None)
