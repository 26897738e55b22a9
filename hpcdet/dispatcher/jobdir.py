"""Prepare a trial's job directory on the shared filesystem (see docs/job-directory.md).

Every file operation goes through the :class:`~hpcdet.dispatcher.transport.Transport` the
caller passes: this host's filesystem (``LOCAL``), or SFTP on a login node with the SSH
transport. The context
tarball is checked here, on the master, either way: ``tarfile``'s "data" filter refuses
absolute paths, ``..`` and links out of the directory, then the SSH transport writes the
members one by one (regular files and directories only).
"""

from __future__ import annotations

import io
import json
import posixpath
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hpcdet.dispatcher import registry
from hpcdet.dispatcher.transport.base import Transport
from hpcdet.dispatcher.transport.local import LocalTransport
from hpcdet.errors import ValidationError

TRIAL_INFO = "trial.json"
TOKEN_FILE = ".token"
CONTEXT_DIR = "context"
# A TLS master's certificate, for the job to verify the master with (DET_MASTER_CERT_FILE).
MASTER_CERT_FILE = "master-cert.pem"
# A command task's (det sbatch, det qsub) logs, in its job directory, whatever the scheduler.
TASK_OUTPUT_LOG = "output.log"
TASK_ERROR_LOG = "error.log"


def prepare_job_dir(job_dir: str | Path, *, context_tar: bytes | None,
                    trial_info: Mapping[str, Any], token: str | None,
                    master_cert: str | None = None, files: Transport) -> Path:
    """Create ``job_dir``, unpack the context (once) and write trial.json and the token.

    Everything is for the job's user only (0700 directories, 0600 files): ``trial.json``
    holds the experiment's ``environment_variables``, where people put API keys.
    ``master_cert``: the PEM text of a TLS master's certificate, written to
    ``master-cert.pem`` for the job to verify the master with (``DET_MASTER_CERT_FILE``).
    ``files``: where the directory is (the backend's transport; ``LOCAL``: this host).
    """
    root = str(job_dir)
    files.make_dirs(root, 0o700)
    context = posixpath.join(root, CONTEXT_DIR)
    if context_tar is not None and not files.exists(context):
        unpack_context(context_tar, context, files)
    info = json.dumps(dict(trial_info), indent=2, sort_keys=True)
    files.write_file(posixpath.join(root, TRIAL_INFO), info.encode(), 0o600)
    if token is not None:
        files.write_file(posixpath.join(root, TOKEN_FILE), token.encode(), 0o600)
    if master_cert is not None:
        files.write_file(posixpath.join(root, MASTER_CERT_FILE), master_cert.encode(), 0o644)
    return Path(root)


def job_dir_archive(*, context_tar: bytes | None, trial_info: Mapping[str, Any],
                    token: str | None, master_cert: str | None = None) -> bytes:
    """What :func:`prepare_job_dir` writes, as one tar for the run-as helper's ``prepare``.

    The context's members move under ``context/``; trial.json and the token are 0600 (the
    helper keeps only owner bits, plus the service account's read through the ACL mask).
    """
    files: dict[str, tuple[bytes, int]] = {
        TRIAL_INFO: (json.dumps(dict(trial_info), indent=2, sort_keys=True).encode(), 0o600)}
    if token is not None:
        files[TOKEN_FILE] = (token.encode(), 0o600)
    if master_cert is not None:
        files[MASTER_CERT_FILE] = (master_cert.encode(), 0o644)
    return tar_of(files, context_tar=context_tar)


def tar_of(files: Mapping[str, tuple[bytes, int]], *, context_tar: bytes | None = None) -> bytes:
    """A tar of ``{name: (content, mode)}``, plus ``context_tar``'s files under context/."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        if context_tar is not None:
            _add_context(tar, context_tar)
        for name, (data, mode) in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _add_context(tar: tarfile.TarFile, context_tar: bytes) -> None:
    try:
        with tarfile.open(fileobj=io.BytesIO(context_tar), mode="r:*") as source:
            for member in source.getmembers():
                if not (member.isfile() or member.isdir()):
                    continue  # the helper refuses links and devices; the "data" filter too
                copy = tarfile.TarInfo(f"{CONTEXT_DIR}/{member.name.lstrip('/')}")
                copy.type, copy.mode, copy.size = member.type, member.mode & 0o700, member.size
                tar.addfile(copy, source.extractfile(member) if member.isfile() else None)
    except tarfile.TarError as exc:
        raise ValidationError(f"the experiment context is not a valid tar archive: {exc}") from exc


def unpack_context(context_tar: bytes, dest: str, files: Transport) -> None:
    """Unpack the context tarball into ``dest`` through ``.partial`` and a rename."""
    if isinstance(files, LocalTransport):
        _unpack(context_tar, Path(dest))
        return
    partial = dest + ".partial"
    files.remove_tree(partial)  # a crash's leftovers
    files.make_dirs(partial, 0o700)
    made = {partial}
    try:
        with tarfile.open(fileobj=io.BytesIO(context_tar), mode="r:*") as tar:
            for member in tar.getmembers():
                _put_member(tar, _private(member, _CHECK_ROOT), partial, files, made)
    except (tarfile.TarError, OSError) as exc:
        raise ValidationError(f"the experiment context is not a valid tar archive: {exc}") from exc
    files.rename(partial, dest)


# Where the "data" filter pretends a remote context is unpacked (its path checks are lexical
# for a directory that does not exist here).
_CHECK_ROOT = "/nonexistent/hpcdet-context"


def _put_member(tar: tarfile.TarFile, member: tarfile.TarInfo, root: str, files: Transport,
                made: set[str]) -> None:
    """Write one checked member under ``root``: a directory or a regular file; links and
    devices are left out (as the run-as helper leaves them out)."""
    target = posixpath.join(root, member.name)
    if member.isdir():  # the filter leaves a directory's mode unset: the owner's rwx
        files.make_dirs(target, member.mode if member.mode is not None else 0o700)
        made.add(target)
        return
    source = tar.extractfile(member) if member.isfile() else None
    if source is None:
        return
    parent = posixpath.dirname(target)
    if parent not in made:
        files.make_dirs(parent, 0o700)
        made.add(parent)
    files.write_file(target, source.read(), member.mode if member.mode is not None else 0o600,
                     atomic=False)


def _unpack(context_tar: bytes, dest: Path) -> None:
    partial = dest.with_name(dest.name + ".partial")
    partial.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(context_tar), mode="r:*") as tar:
            # The "data" filter refuses absolute paths, "..", device files and links that
            # point outside the destination: the tarball came over the network.
            tar.extractall(partial, filter=_private)
    except (tarfile.TarError, OSError) as exc:
        raise ValidationError(f"the experiment context is not a valid tar archive: {exc}") from exc
    partial.rename(dest)


def _private(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """The "data" filter, then no group or other permissions (the owner keeps read/write,
    and execute where the archive had it)."""
    safe = tarfile.data_filter(member, dest)
    if safe.mode is None:
        return safe
    owner = safe.mode & 0o700 | (0o700 if safe.isdir() else 0o600)
    return safe.replace(mode=owner, deep=False)


def context_size(context_tar: bytes) -> int:
    """Total bytes of the regular files in a context tarball, once every member is checked
    (:func:`check_context_member`): a context that came over the network is refused where
    it enters, not when a job directory is prepared from it."""
    try:
        with tarfile.open(fileobj=io.BytesIO(context_tar), mode="r:*") as tar:
            members = tar.getmembers()
    except tarfile.TarError as exc:
        raise ValidationError(f"the experiment context is not a valid tar archive: {exc}") from exc
    for member in members:
        check_context_member(member)
    return sum(m.size for m in members if m.isfile())


# What a context member may not be, as tarfile's predicates tell them apart.
_NOT_PLAIN = (("issym", "a symbolic link"), ("islnk", "a hard link"),
              ("ischr", "a device"), ("isblk", "a device"), ("isfifo", "a FIFO"))
_UNSAFE_NAME = {"\x00": "a NUL byte", "\n": "a newline", "\r": "a carriage return"}


def check_context_member(member: tarfile.TarInfo) -> None:
    """:class:`ValidationError` naming ``member`` unless it is a regular file or a directory
    with a relative name inside the context (no ``..``, no line break or NUL): the rules of
    the run-as helper's ``prepare`` and of tarfile's "data" filter, in every mode."""
    name = member.name
    where = f"context: member {name[:200]!r}"
    for char, what in _UNSAFE_NAME.items():
        if char in name:
            raise ValidationError(f"{where}: its name holds {what}")
    if name.startswith("/") or ".." in name.split("/"):
        raise ValidationError(f"{where}: an absolute path or one with '..' leaves the "
                              "context directory")
    if member.isfile() or member.isdir():
        return
    kind = next((what for test, what in _NOT_PLAIN if getattr(member, test)()),
                "not a regular file or directory")
    raise ValidationError(f"{where}: is {kind}; a context holds regular files and "
                          "directories only")


def job_log_path(job_dir: str | Path, job_id: str, stream: str,
                 files: Transport) -> Path:
    """The file holding a trial job's ``stream`` (``out`` or ``err``), whichever scheduler
    wrote it: the first scheduler's name for it (:attr:`SchedulerPlugin.log_names`) that
    exists, the default scheduler's when none does yet. Job ids tell the names apart (PBS
    ids carry the server, ``12.pbs01``)."""
    names = [registry.scheduler(name).log_name(job_id, stream) for name in registry.names()]
    paths = [Path(job_dir) / name for name in names]
    return next((path for path in paths if files.exists(str(path))), paths[0])
