"""The manifest beside a backup: what wrote it and at which schema revision."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hpcdet.errors import HpcdetError

FORMAT = "hpcdet-backup/1"


class BackupError(HpcdetError):
    """A backup or restore cannot be done; the message says what and where."""


@dataclass(frozen=True)
class Manifest:
    """What ``<backup>.manifest.json`` records."""

    database: str  # "sqlite" or "postgresql"
    schema_revision: str
    hpcdet_version: str
    created_at: str
    size: int
    sha256: str
    format: str = FORMAT

    def as_json(self) -> dict[str, Any]:
        """The manifest as a JSON object."""
        return asdict(self)


def manifest_path(backup: Path) -> Path:
    """Where the manifest of ``backup`` lies: beside it, ``NAME.manifest.json``."""
    return backup.with_name(backup.name + ".manifest.json")


def make_manifest(backup: Path, database: str, revision: str, version: str) -> Manifest:
    """The manifest of a finished backup file."""
    return Manifest(database=database, schema_revision=revision, hpcdet_version=version,
                    created_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                    size=backup.stat().st_size, sha256=file_sha256(backup))


def file_sha256(path: Path) -> str:
    """The file's SHA-256, read in chunks (a backup may be many GB)."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_manifest(backup: Path) -> Manifest:
    """The manifest beside ``backup``, checked against the file (size and checksum)."""
    path = manifest_path(backup)
    try:
        data = json.loads(path.read_text())
        manifest = Manifest(**data)
    except FileNotFoundError:
        raise BackupError(f"{path}: no manifest beside the backup (det-master backup writes "
                          "one; a backup without it is not restored)") from None
    except (OSError, ValueError, TypeError) as exc:
        raise BackupError(f"{path}: not a backup manifest ({exc})") from None
    if manifest.format != FORMAT:
        raise BackupError(f"{path}: format {manifest.format!r}, this hpcdet reads {FORMAT}")
    if backup.stat().st_size != manifest.size or file_sha256(backup) != manifest.sha256:
        raise BackupError(f"{backup}: its size or checksum is not what {path.name} records "
                          "(a damaged or replaced backup)")
    return manifest


def private_temp(final: Path) -> Path:
    """A new empty file (0600) beside ``final``, for writing it whole before a rename."""
    final.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temp = final.with_name(f".{final.name}.{os.getpid()}.partial")
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    return temp


@contextlib.contextmanager
def written_whole(final: Path) -> Iterator[Path]:
    """A private temporary to write ``final`` into: renamed onto it when the block ends
    without an error, removed either way (``final`` is whole or untouched)."""
    temp = private_temp(final)
    try:
        yield temp
        publish(temp, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


def publish(temp: Path, final: Path) -> None:
    """Make ``temp`` durable and rename it onto ``final`` (whole or not at all)."""
    descriptor = os.open(temp, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(temp, final)


def write_manifest(backup: Path, manifest: Manifest) -> Path:
    """Write the manifest beside ``backup`` (0600, atomically)."""
    final = manifest_path(backup)
    temp = private_temp(final)
    temp.write_text(json.dumps(manifest.as_json(), indent=2, sort_keys=True) + "\n")
    publish(temp, final)
    return final
