"""What the master can check about a trial's container before it submits the job.

Run from :func:`hpcdet.master.scheduling.jobspec.build_job_spec`, so an experiment is refused
at ``det experiment create`` (and every later submission re-checks): a bind mount whose host
path does not exist, an image file or directory that does not exist, and, for Charliecloud,
what ``ch-run`` cannot express (docs/admin/containers.md).

The master checks paths with its own permissions. When jobs run as their owner
(``security.jobs_run_as: owner``) the master's service account may not be allowed to look
into the owner's directories: a path the master cannot reach (``EACCES``) is taken on
trust, and a path it can prove missing (``ENOENT``, ``ENOTDIR``) is refused. A master that
reaches the cluster over SSH (``resource_manager.transport``) looks on the login node,
through its SFTP connection. ``resource_manager.container_path_checks: false`` turns the
path checks off (paths that only the compute nodes have).
"""

from __future__ import annotations

import errno
import os
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from hpcdet.dispatcher import BindMount
from hpcdet.dispatcher.transport import LocalTransport, Transport
from hpcdet.errors import ConfigError

# Runtimes whose image is a path on the nodes' file system, relative to apptainer_image_root
# if relative (enroot: a container name or a .sqsh path, taken as given).
PATH_IMAGE_RUNTIMES = ("apptainer", "singularity", "charliecloud")
# Runtimes whose absolute image paths the master checks (podman: a directory image run with
# --rootfs; its other images are registry references, never absolute).
CHECKED_IMAGE_RUNTIMES = (*PATH_IMAGE_RUNTIMES, "podman")
# ch-run --private-tmp mounts a fresh tmpfs at /tmp, where it can make a bind's mount point.
PRIVATE_TMP = "/tmp"


def missing(path: str, files: Transport) -> bool:
    """True when ``path`` provably does not exist where ``files`` reaches; False when it
    exists or the master may not look (see the module docstring)."""
    if files.name != LocalTransport.name:
        try:
            return not files.exists(path)
        except PermissionError:
            return False
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno in (errno.ENOENT, errno.ENOTDIR)
    return False


def check_bind_mounts(config: Mapping[str, Any], files: Transport) -> None:
    """Refuse a ``bind_mounts`` entry whose ``host_path`` does not exist."""
    problems = [
        f"<config>.bind_mounts[{index}].host_path: {mount.get('host_path')!r} does not exist "
        "on the master's host (bind mounts must exist before the trial starts)"
        for index, mount in enumerate(config.get("bind_mounts") or [])
        if isinstance(mount.get("host_path"), str) and missing(mount["host_path"], files)]
    if problems:
        raise ConfigError(problems)


def check_image(run_type: str, image: str, resolved_from: str | None,
                files: Transport) -> None:
    """Refuse an absolute image path (after ``apptainer_image_root``) that does not exist."""
    if run_type not in CHECKED_IMAGE_RUNTIMES or "://" in image or not image.startswith("/"):
        return
    if missing(image, files):
        how = f" (environment.image joined to apptainer_image_root {resolved_from})" \
            if resolved_from else ""
        raise ConfigError([f"<config>.environment.image: {image!r} does not exist{how}"])


def check_charliecloud(image: str, binds: Sequence[BindMount], first_user_bind: int, *,
                       look: bool = True, files: Transport) -> None:
    """Refuse what ``ch-run`` cannot do: a read-only bind, or a bind onto a directory the
    (read-only) image does not have.

    ``binds[first_user_bind:]`` are the config's ``bind_mounts``, named as such; the others
    are hpcdet's own (the job storage root, the checkpoint directory). Mount points are only
    checked with ``look`` (``container_path_checks``), in a directory image the master can
    read.
    """
    problems: list[str] = []
    for index, mount in enumerate(binds):
        where = (f"<config>.bind_mounts[{index - first_user_bind}]"
                 if index >= first_user_bind else f"the bind of {mount.host_path}")
        if mount.read_only:
            problems.append(f"{where}.read_only: charliecloud cannot mount read-only (ch-run's "
                            "-b binds are read-write); make the host path read-only instead, "
                            "or drop read_only")
        elif look and not _has_mount_point(image, mount.container_path, files):
            problems.append(
                f"{where}: the image {image} has no directory {mount.container_path} to bind "
                "onto (ch-run binds only onto directories a read-only image has, or under "
                f"/tmp); add it: scripts/build-image --mount-point {mount.container_path}")
    if problems:
        raise ConfigError(problems)


def _has_mount_point(image: str, container_path: str, files: Transport) -> bool:
    path = posixpath.normpath(container_path)
    if path == PRIVATE_TMP or path.startswith(PRIVATE_TMP + "/"):
        return True
    is_dir = os.path.isdir if files.name == LocalTransport.name else files.is_dir
    if "://" in image or not image.startswith("/") or not is_dir(image):
        return True  # a SquashFS file or a storage name: the master cannot look inside
    return is_dir(os.path.join(image, path.lstrip("/")))
