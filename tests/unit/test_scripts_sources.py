"""The shell scripts' shared helpers are sourced where they are used.

A script that calls a helper of ``scripts/lib`` without sourcing it fails only on a machine
where the helper's branch runs (a fresh one: ``apt_install`` is reached only when the package
is missing), so the mistake hides on every development machine. This reads the scripts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
HELPERS = {"apt_install": "lib/apt.sh", "apt_ensure": "lib/apt.sh"}


def _scripts() -> list[Path]:
    return sorted(path for path in SCRIPTS.iterdir()
                  if path.is_file() and path.read_text(errors="replace").startswith("#!"))


def missing_sources(text: str) -> list[str]:
    """The helpers the script ``text`` calls without sourcing their library."""
    return [f"{helper} (scripts/{library})" for helper, library in HELPERS.items()
            if re.search(rf"^\s*[^#\n]*\b{helper}\b", text, re.MULTILINE)
            and not re.search(rf"^\s*(source|\.) .*{re.escape(library)}", text, re.MULTILINE)]


@pytest.mark.parametrize("script", _scripts(), ids=lambda path: path.name)
def test_a_script_sources_the_helpers_it_calls(script: Path) -> None:
    assert missing_sources(script.read_text()) == [], f"scripts/{script.name}"


def test_the_check_sees_a_missing_source() -> None:
    bad = "#!/usr/bin/env bash\nset -eu\napt_install /tmp/log openssh-server\n"
    assert missing_sources(bad) == ["apt_install (scripts/lib/apt.sh)"]
    good = "#!/usr/bin/env bash\nsource \"$dir/lib/apt.sh\"\n" + bad.split("\n", 1)[1]
    assert missing_sources(good) == []
