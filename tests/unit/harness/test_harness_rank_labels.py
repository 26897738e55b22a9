"""A rank started by an MPI launcher labels its own lines, as ``srun --label`` would."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from hang_guard import HANG_GUARD_S

from hpcdet.harness.rank_labels import labels_needed

PROGRAM = textwrap.dedent("""
    import os, subprocess, sys
    from hpcdet.harness.rank_labels import RankLabels
    labels = RankLabels(3)
    sys.stdout.write("in "); sys.stdout.flush(); sys.stdout.write("two writes\\n")
    print("to stderr", file=sys.stderr)
    subprocess.run(["sh", "-c", "echo from a child; printf 'no newline'"], check=True)
    labels.close()
    print("after close")
""")


def test_every_line_gets_the_rank_even_a_child_process_and_a_split_write() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, check=True)
    assert done.stdout.splitlines() == ["3: in two writes", "3: from a child",
                                        "3: no newline", "after close"]
    assert done.stderr.splitlines() == ["3: to stderr"]


@pytest.mark.parametrize(("launcher", "needed"), [
    ("slurm", False), ("single", False), ("openmpi", True), ("pmi", True), ("pmix", True)])
def test_only_launchers_that_do_not_label_need_it(launcher: str, needed: bool) -> None:
    assert labels_needed(launcher) is needed
