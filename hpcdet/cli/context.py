"""Pack an experiment's context directory (the model code) into the tarball sent to the master.

Rules, following Determined's where it has them:

* ``.detignore`` at the top of the directory lists what to leave out, in ``.gitignore``
  syntax (``data/``, ``*.ckpt``, ``!keep.ckpt``, ``/build``). Only the top-level file is
  read. An ignored directory is not entered, so nothing inside it can be re-included
  (git's rule too).
* Always left out, before the ``.detignore`` lines: ``__pycache__/``, ``*.pyc`` (as in
  Determined) and ``.git/`` (history is not needed to train and is often large).
  Since these come first, a ``.detignore`` line such as ``!.git/`` takes them back.
* Symbolic links are never stored as links: a link to a file inside the directory is stored
  as a copy of that file; links to directories, links that leave the directory and
  dangling links are skipped and reported (the master would refuse links anyway).
* At most 95 MiB of file content (Determined's limit), checked before anything is read.
* The archive is deterministic for an unchanged tree: sorted entries, owner 0:0 without
  names, modes 0644/0755, real file mtimes, and a gzip header without a timestamp.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import os
import stat
import tarfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hpcdet.cli.output import format_size
from hpcdet.errors import ValidationError

if TYPE_CHECKING:
    import pathspec

MAX_CONTEXT_BYTES = 95 * 1024 * 1024
IGNORE_FILE = ".detignore"
ALWAYS_IGNORED = ("__pycache__/", "*.pyc", ".git/")
LARGEST_SHOWN = 5


@dataclasses.dataclass(frozen=True)
class Entry:
    """One member of the archive: its path inside it, and where its content comes from."""

    name: str
    source: Path
    is_dir: bool = False
    size: int = 0


@dataclasses.dataclass(frozen=True)
class ContextArchive:
    """A packed context: gzip tar bytes, what went in, and what was skipped (with why)."""

    data: bytes
    files: int
    size: int
    skipped: list[str]


def build_context(directory: str | os.PathLike[str], *,
                  includes: Sequence[str | os.PathLike[str]] = (),
                  limit: int = MAX_CONTEXT_BYTES) -> ContextArchive:
    """Pack ``directory`` and the ``includes`` (``det experiment create -i``); raise
    :class:`ValidationError` if one is missing, two share a top-level name, or the whole is
    too large."""
    root = _check_directory(Path(directory))
    entries, skipped = collect_entries(root)
    for include in includes:
        more, more_skipped = include_entries(Path(include))
        entries += more
        skipped += more_skipped
    _check_unique_tops(entries)
    entries.sort(key=lambda e: e.name)
    files = [e for e in entries if not e.is_dir]
    total = sum(e.size for e in files)
    if total > limit:
        raise ValidationError(_too_large_message(directory, files, total, limit))
    return ContextArchive(_pack(entries), len(files), total, skipped)


def _check_directory(path: Path) -> Path:
    if not path.exists():
        raise ValidationError(f"context directory {str(path)!r} does not exist")
    if not path.is_dir():
        raise ValidationError(f"context directory {str(path)!r} is not a directory")
    return path.resolve()


def collect_entries(root: Path) -> tuple[list[Entry], list[str]]:
    """Everything under ``root`` that goes into the archive, sorted by name, and the
    symbolic links and special files that were skipped."""
    spec = load_ignore_spec(root)
    entries: list[Entry] = []
    skipped: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in sorted(dirnames)
                       if _keep_dir(root, here / d, spec, entries, skipped)]
        for name in sorted(filenames):
            _add_file(root, here / name, spec, entries, skipped)
    return sorted(entries, key=lambda e: e.name), skipped


def include_entries(path: Path) -> tuple[list[Entry], list[str]]:
    """An ``--include`` as Determined adds it: a file or directory at the top of the archive
    under its own name; a directory's own ``.detignore`` applies inside it."""
    if not path.exists():
        raise ValidationError(f"--include {str(path)!r} does not exist")
    resolved = path.resolve()
    name = resolved.name
    if not name:
        raise ValidationError(f"--include {str(path)!r} has no name to give it in the context")
    if not resolved.is_dir():
        problem = _unpackable(resolved.parent, resolved)
        if problem:
            raise ValidationError(f"--include {str(path)!r}: {problem}")
        return [Entry(name, resolved, size=resolved.stat().st_size)], []
    inner, skipped = collect_entries(resolved)
    entries = [Entry(name, resolved, is_dir=True)]
    entries += [dataclasses.replace(e, name=f"{name}/{e.name}") for e in inner]
    return entries, [f"{name}/{s}" for s in skipped]


def _check_unique_tops(entries: list[Entry]) -> None:
    """Refuse an ``--include`` whose name is already at the top of the archive."""
    tops = Counter(e.name for e in entries if "/" not in e.name)
    duplicates = sorted(name for name, count in tops.items() if count > 1)
    if duplicates:
        raise ValidationError(f"--include: {', '.join(map(repr, duplicates))} is already in "
                              "the context (two top-level entries with one name)")


def load_ignore_spec(root: Path) -> pathspec.GitIgnoreSpec:
    """The always-ignored patterns followed by the lines of ``root/.detignore``."""
    import pathspec

    lines = list(ALWAYS_IGNORED)
    ignore_file = root / IGNORE_FILE
    if ignore_file.is_file():
        lines += ignore_file.read_text(encoding="utf-8").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _keep_dir(root: Path, path: Path, spec: pathspec.GitIgnoreSpec,
              entries: list[Entry], skipped: list[str]) -> bool:
    name = path.relative_to(root).as_posix()
    if spec.match_file(name + "/"):
        return False
    if path.is_symlink():
        skipped.append(f"{name} (link to a directory)")
        return False
    entries.append(Entry(name, path, is_dir=True))
    return True


def _add_file(root: Path, path: Path, spec: pathspec.GitIgnoreSpec,
              entries: list[Entry], skipped: list[str]) -> None:
    name = path.relative_to(root).as_posix()
    if spec.match_file(name):
        return
    problem = _unpackable(root, path)
    if problem:
        skipped.append(f"{name} ({problem})")
        return
    entries.append(Entry(name, path, size=path.stat().st_size))


def _unpackable(root: Path, path: Path) -> str | None:
    """Why ``path`` cannot be stored as a regular file, or None if it can."""
    if path.is_symlink():
        target = path.resolve()
        if not target.exists():
            return "dangling link"
        if not target.is_relative_to(root):
            return "link to outside the context directory"
    if not stat.S_ISREG(path.stat().st_mode):
        return "not a regular file"
    return None


def _too_large_message(directory: str | os.PathLike[str], files: list[Entry],
                       total: int, limit: int) -> str:
    largest = sorted(files, key=lambda e: (-e.size, e.name))[:LARGEST_SHOWN]
    listed = ", ".join(f"{e.name} ({format_size(e.size)})" for e in largest)
    return (
        f"context directory {str(directory)!r} holds {format_size(total)} of files, over the "
        f"{format_size(limit)} limit; largest: {listed}; list what training does not need "
        f"in {os.path.join(directory, IGNORE_FILE)} (.gitignore syntax)"
    )


def _pack(entries: list[Entry]) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=6) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for entry in entries:
                _add_member(tar, entry)
    return buffer.getvalue()


def _add_member(tar: tarfile.TarFile, entry: Entry) -> None:
    info = tarfile.TarInfo(entry.name)
    st = entry.source.stat()
    info.mtime, info.uid, info.gid, info.uname, info.gname = int(st.st_mtime), 0, 0, "", ""
    if entry.is_dir:
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)
        return
    info.mode = 0o755 if st.st_mode & stat.S_IXUSR else 0o644
    info.size = st.st_size
    with entry.source.open("rb") as handle:
        tar.addfile(info, handle)
