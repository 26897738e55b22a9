"""Fingerprinted static URLs: ``static_url('app.js')`` is ``/static/app.js?v=<hash>``.

The hashes are of the files' bytes, taken once when the app is built (the files do not
change while the master runs; an upgrade restarts it). A URL whose ``v`` is the file's hash
names those bytes for good, so it is answered with a year's ``immutable`` cache lifetime: a
page load asks for no script or style again. A URL without it, or with a stale one, keeps
the default revalidation (``no-cache`` and an ETag).

The gzipped bytes are made here too, once, so a static file costs no compression per
request (:mod:`hpcdet.master.transfer.wire` sends them).
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path

from flask import Flask, current_app

IMMUTABLE = "public, max-age=31536000, immutable"
CONFIG_KEY = "HPCDET_STATIC_FILES"
# Twelve hex digits (48 bits): no two versions of one file meet by chance.
HASH_CHARS = 12


@dataclass(frozen=True)
class StaticFile:
    """One file under ``static/``: its content hash and its bytes gzipped."""

    digest: str
    gzipped: bytes


def fingerprint(folder: Path) -> dict[str, StaticFile]:
    """Every file under ``folder`` by its path there (``/``-separated)."""
    files: dict[str, StaticFile] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            digest = hashlib.sha256(data).hexdigest()[:HASH_CHARS]
            # mtime=0: the same bytes gzip to the same bytes on every start.
            files[path.relative_to(folder).as_posix()] = StaticFile(
                digest, gzip.compress(data, compresslevel=9, mtime=0))
    return files


def install(app: Flask) -> None:
    """Fingerprint ``app``'s static folder and give the templates ``static_url``."""
    folder = app.static_folder
    app.config[CONFIG_KEY] = fingerprint(Path(folder)) if folder else {}
    app.add_template_global(static_url)


def static_url(filename: str) -> str:
    """The fingerprinted URL of ``static/<filename>``; a name that is no file there is a
    template's mistake, so it fails the page (and the test that renders it) at once."""
    from flask import url_for

    known: dict[str, StaticFile] = current_app.config[CONFIG_KEY]
    if filename not in known:
        raise LookupError(f"static_url: no file static/{filename}")
    return url_for("static", filename=filename, v=known[filename].digest)


def lookup(filename: str) -> StaticFile | None:
    """``static/<filename>``'s fingerprint, or None for no such file."""
    known: dict[str, StaticFile] = current_app.config.get(CONFIG_KEY, {})
    return known.get(filename)
