"""Packing the context directory: .detignore, always-ignored files, links, the size limit."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from hpcdet.cli.context import MAX_CONTEXT_BYTES, build_context
from hpcdet.errors import ValidationError

MiB = 1024 * 1024


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _members(data: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name: m for m in tar.getmembers()}


def _files(root: Path) -> set[str]:
    return {name for name, m in _members(build_context(root).data).items() if m.isfile()}


def test_packs_every_file_with_its_content(tmp_path: Path) -> None:
    _tree(tmp_path, {"train.py": "print(1)\n", "pkg/model.py": "x = 1\n"})
    archive = build_context(tmp_path)
    with tarfile.open(fileobj=io.BytesIO(archive.data), mode="r:gz") as tar:
        assert sorted(tar.getnames()) == ["pkg", "pkg/model.py", "train.py"]
        handle = tar.extractfile("pkg/model.py")
        assert handle is not None and handle.read() == b"x = 1\n"
    assert (archive.files, archive.size, archive.skipped) == (2, 15, [])


def test_always_ignores_pyc_pycache_and_git(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.py": "", "a.pyc": "", "pkg/__pycache__/m.cpython-311.pyc": "",
                     "pkg/b.pyc": "", ".git/HEAD": "ref", "pkg/m.py": ""})
    assert _files(tmp_path) == {"a.py", "pkg/m.py"}


def test_detignore_patterns_negation_and_directories(tmp_path: Path) -> None:
    _tree(tmp_path, {
        ".detignore": "# comment\n*.txt\n!keep.txt\ndata/\n/build\n",
        "notes.txt": "", "keep.txt": "", "sub/keep.txt": "", "sub/other.txt": "",
        "data/big.bin": "", "sub/data/x.bin": "", "build/out.o": "", "sub/build/ok.py": "",
        "model.py": "",
    })
    assert _files(tmp_path) == {
        ".detignore", "keep.txt", "sub/keep.txt", "sub/build/ok.py", "model.py"}


def test_ignored_directory_cannot_be_reincluded(tmp_path: Path) -> None:
    _tree(tmp_path, {".detignore": "data/\n!data/keep.py\n", "data/keep.py": ""})
    assert _files(tmp_path) == {".detignore"}


def test_detignore_can_take_back_a_default(tmp_path: Path) -> None:
    _tree(tmp_path, {".detignore": "!.git/\n", ".git/HEAD": ""})
    assert ".git/HEAD" in _files(tmp_path)


def test_only_the_top_level_detignore_counts(tmp_path: Path) -> None:
    _tree(tmp_path, {"sub/.detignore": "*.py\n", "sub/m.py": ""})
    assert _files(tmp_path) == {"sub/.detignore", "sub/m.py"}


def test_links_inside_are_copied_and_links_outside_skipped(tmp_path: Path) -> None:
    root = _tree(tmp_path / "ctx", {"real.py": "x = 1\n", "dir/a.py": ""})
    _tree(tmp_path, {"secret.txt": "no"})
    os.symlink("real.py", root / "alias.py")
    os.symlink(tmp_path / "secret.txt", root / "leak.txt")
    os.symlink("missing.py", root / "dangling.py")
    os.symlink("dir", root / "dirlink")
    archive = build_context(root)
    members = _members(archive.data)
    assert members["alias.py"].isfile() and members["alias.py"].size == 6
    assert not any(m.issym() or m.islnk() for m in members.values())
    assert set(members) == {"alias.py", "real.py", "dir", "dir/a.py"}
    assert sorted(archive.skipped) == [
        "dangling.py (dangling link)", "dirlink (link to a directory)",
        "leak.txt (link to outside the context directory)"]


def test_archive_is_deterministic(tmp_path: Path) -> None:
    _tree(tmp_path, {"b.py": "b", "a/c.py": "c", "run.sh": "#!/bin/sh\n"})
    (tmp_path / "run.sh").chmod(0o700)
    first, second = build_context(tmp_path).data, build_context(tmp_path).data
    assert first == second
    members = _members(first)
    assert [members[n].mode for n in ("a", "b.py", "run.sh")] == [0o755, 0o644, 0o755]
    assert {(m.uid, m.gid, m.uname, m.gname) for m in members.values()} == {(0, 0, "", "")}


def test_over_the_limit_names_the_largest_files(tmp_path: Path) -> None:
    sizes = {"data/huge.bin": 60 * MiB, "weights.pt": 30 * MiB, "a.npy": 3 * MiB,
             "b.npy": 2 * MiB, "c.npy": 1 * MiB, "d.npy": 512 * 1024}
    for name, size in sizes.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        with open(tmp_path / name, "wb") as handle:
            handle.truncate(size)  # sparse: the test writes no data
    with pytest.raises(ValidationError) as caught:
        build_context(tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert "96.5 MiB" in message and "95.0 MiB limit" in message
    assert "data/huge.bin (60.0 MiB), weights.pt (30.0 MiB), a.npy (3.0 MiB)" in message
    assert "c.npy (1.0 MiB)" in message and "d.npy" not in message
    assert ".detignore" in message


def test_exactly_the_limit_is_accepted(tmp_path: Path) -> None:
    with open(tmp_path / "f.bin", "wb") as handle:
        handle.truncate(10)
    assert build_context(tmp_path, limit=10).size == 10
    with pytest.raises(ValidationError):
        build_context(tmp_path, limit=9)
    assert MAX_CONTEXT_BYTES == 95 * MiB


def test_ignored_files_do_not_count_towards_the_limit(tmp_path: Path) -> None:
    _tree(tmp_path, {".detignore": "data/\n", "m.py": ""})
    (tmp_path / "data").mkdir()
    with open(tmp_path / "data" / "big.bin", "wb") as handle:
        handle.truncate(100 * MiB)
    assert _files(tmp_path) == {".detignore", "m.py"}


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="context directory '.*nope' does not exist"):
        build_context(tmp_path / "nope")


def test_file_instead_of_directory(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("")
    with pytest.raises(ValidationError, match="f.py' is not a directory"):
        build_context(tmp_path / "f.py")
