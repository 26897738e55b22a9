"""What every object-store manager shares (s3, gcs, azure): the layout, the transfer loop,
safe names, progress and errors.

Checkpoint ``<id>`` is the objects ``<prefix>/<id>/<file>`` of one bucket (or container),
one object per file; an empty directory is an empty object whose name ends in ``/`` (as the
S3 and GCS consoles and Determined write one). A subclass supplies the primitives (put a
file, get a file, list, read, delete names) and turns its client library's exceptions into
text (:meth:`ObjectStore._describe_error`); :class:`ObjectStore` does the rest, so the
harness, the checkpoint GC and the master's download route treat every store alike.
"""

from __future__ import annotations

import abc
import contextlib
import os
import pathlib
import posixpath
import re
import sys
from collections.abc import Iterable, Iterator

from hpcdet.storage.base import (
    CheckpointMissingError,
    Progress,
    StorageError,
    StorageManager,
    check_storage_id,
    safe_relative,
)

READ_CHUNK = 1024 * 1024
MASK = "********"
# Shorter values are not masked in messages: masking "s" would garble every word, and no
# real key, signature or connection string is that short.
MIN_SECRET_LENGTH = 8
# A shared access signature in a URL or a message (Azure): its signature is the secret.
_SAS_SIGNATURE = re.compile(r"(?i)\b(sig=)[^&\s'\";]+")


def normalize_prefix(prefix: str | None) -> str:
    """Determined's normalization: the normalized path without leading slashes ('' for none);
    a ``..`` component is refused (the schema refuses it too)."""
    if not prefix:
        return ""
    if ".." in prefix.split("/"):
        raise StorageError(f"checkpoint_storage.prefix: {prefix!r} must not contain a '..' "
                           "component")
    normal = posixpath.normpath(prefix).lstrip("/")
    return "" if normal == "." else normal


class ObjectStore(StorageManager):
    """Checkpoints under ``<scheme>://<root>/<prefix>/`` of an object store."""

    remote = True
    #: The URL scheme of :meth:`location` (``s3``, ``gs``, ``azure``).
    scheme = ""

    def __init__(self, root: str, prefix: str | None) -> None:
        self.root = root
        self.prefix = normalize_prefix(prefix)

    def key_prefix(self, storage_id: str) -> str:
        """``<prefix>/<id>/``: every key of the checkpoint starts with it."""
        check_storage_id(storage_id)
        return f"{self.prefix}/{storage_id}/" if self.prefix else f"{storage_id}/"

    def root_location(self) -> str:
        """``<scheme>://<root>/<prefix>``: where every checkpoint of the storage lives."""
        base = f"{self.scheme}://{self.root}"
        return f"{base}/{self.prefix}" if self.prefix else base

    def location(self, storage_id: str) -> str:
        return f"{self.scheme}://{self.root}/{self.key_prefix(storage_id).rstrip('/')}"

    # -- the primitives a store implements -------------------------------------------------

    @abc.abstractmethod
    def _put_empty(self, key: str) -> None:
        """Write an empty object (an empty directory's marker)."""

    @abc.abstractmethod
    def _put_file(self, key: str, path: pathlib.Path, progress: Progress) -> None:
        """Upload one file, telling ``progress`` the bytes moved."""

    @abc.abstractmethod
    def _get_file(self, key: str, target: pathlib.Path, progress: Progress) -> None:
        """Download one object into ``target``, telling ``progress`` the bytes moved."""

    @abc.abstractmethod
    def _list(self, prefix: str) -> Iterable[tuple[str, int]]:
        """``(key, size)`` of every object whose key starts with ``prefix``."""

    @abc.abstractmethod
    def _read(self, key: str) -> Iterator[bytes]:
        """The bytes of one object, a chunk at a time."""

    @abc.abstractmethod
    def _delete_keys(self, keys: list[str], storage_id: str) -> None:
        """Delete these objects (a missing one is not an error)."""

    @abc.abstractmethod
    def _describe_error(self, exc: BaseException) -> str | None:
        """The text of a client library's error; None for an exception that is not one."""

    def _secrets(self) -> Iterable[str]:
        """Values that must never appear in a message (credentials)."""
        return ()

    def _prepare_upload(self) -> None:
        """Called once before an upload (e.g. to create a missing container)."""

    # -- the interface ---------------------------------------------------------------------

    def upload(self, src: pathlib.Path, storage_id: str) -> None:
        where = self.location(storage_id)
        base = self.key_prefix(storage_id)
        files, empty_dirs = walk(src)
        progress = Progress(f"uploading checkpoint {storage_id} to {where}",
                            sum(size for _, size in files.values()))
        with self._errors(f"uploading checkpoint {storage_id} to {where}"):
            self._prepare_upload()
            for rel in empty_dirs:
                self._put_empty(f"{base}{rel}/")
            for rel, (path, _size) in sorted(files.items()):
                self._put_file(base + rel, path, progress)
        progress.finish()
        print(f"hpcdet storage: uploaded checkpoint {storage_id} to {where} "
              f"({len(files)} file(s), {progress.total} bytes)", file=sys.stderr, flush=True)

    def download(self, storage_id: str, dst: pathlib.Path) -> None:
        where = self.location(storage_id)
        objects = self._objects(storage_id)
        if not objects:
            raise CheckpointMissingError(f"checkpoint {storage_id} not found at {where}")
        progress = Progress(f"downloading checkpoint {storage_id} from {where}",
                            sum(objects.values()))
        base = self.key_prefix(storage_id)
        with self._errors(f"downloading checkpoint {storage_id} from {where}"):
            for rel in sorted(objects):
                target = dst / rel.rstrip("/")
                if rel.endswith("/"):
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                self._get_file(base + rel, target, progress)
        progress.finish()
        print(f"hpcdet storage: downloaded checkpoint {storage_id} from {where} "
              f"({len(objects)} object(s), {sum(objects.values())} bytes)", file=sys.stderr,
              flush=True)

    def list_files(self, storage_id: str) -> dict[str, int]:
        return {rel: size for rel, size in self._objects(storage_id).items()
                if not rel.endswith("/")}

    def read_chunks(self, storage_id: str, rel: str) -> Iterator[bytes]:
        """The bytes of one file of the checkpoint, a chunk at a time (the master's tar)."""
        key = self.key_prefix(storage_id) + rel
        with self._errors(f"reading {rel} of checkpoint {storage_id}"):
            yield from self._read(key)

    def delete(self, storage_id: str) -> None:
        keys = [key for key, _ in self._listing(storage_id)]
        with self._errors(f"deleting checkpoint {storage_id} at {self.location(storage_id)}"):
            if keys:
                self._delete_keys(keys, storage_id)

    # -- shared helpers --------------------------------------------------------------------

    def _listing(self, storage_id: str) -> Iterator[tuple[str, int]]:
        """``(key, size)`` of every object under the checkpoint's prefix."""
        base = self.key_prefix(storage_id)
        with self._errors(f"listing checkpoint {storage_id} at {self.location(storage_id)}"):
            yield from self._list(base)

    def _objects(self, storage_id: str) -> dict[str, int]:
        """``{relative key: size}`` under the checkpoint's prefix; unsafe names are left out
        (a key such as ``<id>/../x`` must not reach a path outside the target)."""
        base = self.key_prefix(storage_id)
        found: dict[str, int] = {}
        for key, size in self._listing(storage_id):
            rel = key[len(base):]
            safe = safe_relative(rel.rstrip("/"))
            if safe is not None:
                found[safe + ("/" if rel.endswith("/") else "")] = size
        return found

    def redact(self, text: str) -> str:
        """``text`` without this store's credentials or a URL's access signature."""
        for secret in self._secrets():
            if len(secret) >= MIN_SECRET_LENGTH:
                text = text.replace(secret, MASK)
        return _SAS_SIGNATURE.sub(lambda m: m.group(1) + MASK, text)

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """Turns the client library's errors into :class:`StorageError` saying what was
        being done (and never a credential)."""
        try:
            yield
        except StorageError:
            raise
        except Exception as exc:
            text = self._describe_error(exc)
            if text is None:
                raise
            raise StorageError(self.redact(f"{doing}: {text}")) from exc


def walk(src: pathlib.Path) -> tuple[dict[str, tuple[pathlib.Path, int]], list[str]]:
    """``({relative path: (file, size)}, [empty directories])`` under ``src``; a symlink to
    a file is uploaded as the file's content, a symlink to a directory is not followed."""
    files: dict[str, tuple[pathlib.Path, int]] = {}
    empty: list[str] = []
    for dirpath, dirnames, filenames in os.walk(src):
        here = pathlib.Path(dirpath)
        dirnames.sort()
        for name in sorted(filenames):
            path = here / name
            if path.is_file():
                files[path.relative_to(src).as_posix()] = (path, path.stat().st_size)
        if here != src and not dirnames and not filenames:
            empty.append(here.relative_to(src).as_posix())
    return files, empty
