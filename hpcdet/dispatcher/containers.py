r"""Wrap each rank's command in a container runtime: the argv ``srun`` starts on every task.

``launch_argv`` returns a list of plain tokens; the job-script template quotes each one, so
no value here is ever parsed by a shell. Runtime notes:

* ``apptainer`` / ``singularity``: ``exec`` inherits the environment (``--cleanenv`` is
  deliberately *not* used: the ``DET_*`` and ``SLURM_*`` variables must reach the rank),
  ``--nv`` for GPUs, one ``--bind src:dst[:ro]`` per mount, ``--pwd`` for the cwd.
* ``enroot``: the image is passed verbatim, as ``enroot start`` expects it: the name of a
  container made by ``enroot create`` or the path of a ``.sqsh`` file. Names containing
  ``/`` or ``:`` are not rewritten by hpcdet (``enroot import`` URIs such as
  ``docker://nvcr.io#nvidia/pytorch:24.01-py3`` must be imported and created first).
  Enroot builds the container environment from the image and its ``environ.d`` files, so
  the variables a rank needs are passed by name (``--env NAME`` copies the host value), and
  since ``enroot start`` has no working-directory option the command is wrapped in
  ``/bin/sh -c 'cd "$1" && shift && exec "$@"'`` with the directory as an argument.
* ``podman``: ``run --rm --network=host --ipc=host`` (NCCL needs the host network and shared
  memory), GPUs through CDI (``--device nvidia.com/gpu=all``), ``-v src:dst[:ro]`` per
  mount, ``--env NAME`` per variable (only copied when set on the host; ``SLURM_*`` copies
  every Slurm variable), ``-w`` for the cwd. ``--env-host`` is avoided: remote podman
  clients do not support it. An absolute image path is a directory image, run with
  ``--rootfs DIR:O`` (an overlay per container); anything else is an image reference.
* ``charliecloud``: ``ch-run`` (Charliecloud 0.31, Debian's ``charliecloud-runtime``) on a
  directory image. It passes the host environment through unchanged (``DET_*``, ``SLURM_*``,
  ``CUDA_VISIBLE_DEVICES``), joins no PID namespace and ``exec``\ s the command, so srun's
  signals and the exit status are the harness's own. ``--private-tmp`` gives each rank (each
  ``ch-run``) its own tmpfs ``/tmp`` instead of the host's; ``-b src:dst`` binds are always
  read-write (ch-run has no read-only bind: a read-only mount is refused) and ``dst`` must be
  a directory of the image, or lie under ``/tmp``; ``--cd`` sets the cwd. GPUs need no flag
  (the host's driver libraries go into the image once with ``ch-fromhost --nvidia``).
* ``none``: the command unchanged.

docs/admin/containers.md shows each runtime's line and the manual option behind each flag.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from hpcdet.dispatcher.base import BindMount, ContainerSpec
from hpcdet.dispatcher.safety import check_safe
from hpcdet.errors import ValidationError

RUN_TYPES: tuple[str, ...] = (
    "apptainer", "singularity", "enroot", "podman", "charliecloud", "none")

# Runtimes that need $USER set (ch-run: "error: $USER not set"); the job script sets it
# from ``id -un`` where the job's environment lacks it.
USER_RUNTIMES: tuple[str, ...] = ("charliecloud",)

# The per-task variables srun always sets; enroot needs them named (podman uses SLURM_*).
# Variables srun sets only sometimes are left out: enroot would set them to "" instead.
SLURM_TASK_VARIABLES: tuple[str, ...] = (
    "SLURM_JOB_ID",
    "SLURM_JOB_NODELIST",
    "SLURM_JOB_NUM_NODES",
    "SLURM_LAUNCH_NODE_IPADDR",
    "SLURM_NNODES",
    "SLURM_NODEID",
    "SLURM_NTASKS",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_STEP_ID",
    "SLURM_STEP_NODELIST",
    "SLURM_STEP_NUM_NODES",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE",
    "SLURMD_NODENAME",
)

# Characters each runtime's mount syntax splits on, so they cannot appear in a bind path.
_MOUNT_SEPARATORS: dict[str, str] = {
    "apptainer": ":,",
    "singularity": ":,",
    "enroot": ": \t",  # enroot rejects mount specs with whitespace
    "podman": ":",
    "charliecloud": ":",  # -b SRC[:DST]
}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENROOT_CD = 'cd "$1" && shift && exec "$@"'

# One group of tokens per script line: the runtime, each option with its value, then the
# image and command. ``launch_argv`` flattens them; the template prints one per line.
Lines = list[list[str]]
Builder = Callable[[ContainerSpec, str, list[str], str | None], Lines]


def launch_argv(
    container: ContainerSpec, command: Sequence[str], *, cwd: str | None = None
) -> list[str]:
    """The argv that runs ``command`` for one rank inside ``container``, starting in ``cwd``.

    Raises :class:`ValueError` for an unknown run type and :class:`ValidationError` for a
    missing image, a bind path the runtime cannot express, or a bad variable name.
    """
    return [token for line in launch_lines(container, command, cwd=cwd) for token in line]


def launch_lines(
    container: ContainerSpec, command: Sequence[str], *, cwd: str | None = None
) -> Lines:
    """:func:`launch_argv` grouped into readable script lines (option and value together)."""
    if container.run_type not in RUN_TYPES:
        valid = ", ".join(RUN_TYPES)
        raise ValueError(f"unknown container run type {container.run_type!r} (valid: {valid})")
    if container.run_type == "none":
        return [list(command)]
    image = _require_image(container)
    _check_mounts(container)
    return _BUILDERS[container.run_type](container, image, list(command), cwd)


def with_job_dir(container: ContainerSpec, job_dir: str,
                 environment: Sequence[str]) -> ContainerSpec:
    """``container`` with the job directory visible at its own path (bound in unless a bind
    at its own path already holds it) and the job's ``environment`` names passed on.

    The job directory is bound at its own path because ``DET_JOB_DIR``/``DET_TRIAL_INFO``
    hold host paths; runtimes that do not inherit the environment get every exported name.
    """
    if container.run_type == "none":
        return container
    mounts = container.bind_mounts
    if not any(holds(mount, job_dir) for mount in mounts):
        mounts = (*mounts, BindMount(job_dir, job_dir))
    names = tuple(dict.fromkeys([*container.pass_environment, *environment]))
    return replace(container, bind_mounts=mounts, pass_environment=names)


def directories_to_create(container: ContainerSpec) -> list[str]:
    """The bind sources the job script makes before the ranks start (``BindMount.create``)."""
    if container.run_type == "none":
        return []
    return [check_safe(mount.host_path, "container.bind_mounts.host_path")
            for mount in container.bind_mounts if mount.create]


def holds(mount: BindMount, path: str) -> bool:
    """Whether ``path`` is inside ``mount`` and at the same path in the container."""
    host, inside = posixpath.normpath(mount.host_path), posixpath.normpath(mount.container_path)
    path = posixpath.normpath(path)
    return host == inside and (path == host or path.startswith(host.rstrip("/") + "/"))


def _require_image(container: ContainerSpec) -> str:
    if not container.image:
        raise ValidationError(
            f"container.image is required for container run type {container.run_type!r}"
        )
    return check_safe(container.image, "container.image")


def _check_mounts(container: ContainerSpec) -> None:
    """Refuse bind paths that are relative or that the runtime's mount syntax would split."""
    forbidden = _MOUNT_SEPARATORS[container.run_type]
    for index, mount in enumerate(container.bind_mounts):
        for attr in ("host_path", "container_path"):
            where = f"container.bind_mounts[{index}].{attr}"
            path = check_safe(getattr(mount, attr), where)
            if not path.startswith("/"):
                raise ValidationError(f"{where} must be an absolute path: {path!r}")
            bad = sorted({char for char in path if char in forbidden})
            if bad:
                raise ValidationError(
                    f"{where} contains {bad} which {container.run_type} cannot take in a "
                    f"bind path: {path!r}"
                )


def _env_names(container: ContainerSpec, base: Sequence[str]) -> list[str]:
    """Variables to pass by name: ``base``, the GPU selection, then the spec's own, deduped."""
    gpu = ("CUDA_VISIBLE_DEVICES",) if container.use_gpus else ()
    names = list(dict.fromkeys([*base, *gpu, *container.pass_environment]))
    for name in container.pass_environment:
        if not _ENV_NAME.match(check_safe(name, "container.pass_environment")):
            raise ValidationError(f"container.pass_environment: invalid variable name {name!r}")
    return names


def _apptainer(container: ContainerSpec, image: str, command: list[str], cwd: str | None) -> Lines:
    lines = [[container.run_type, "exec", *(["--nv"] if container.use_gpus else [])]]
    if container.force_pull and "://" in image:
        lines.append(["--disable-cache"])  # pull the URI again, keep nothing
    lines += [["--bind", _bind(mount)] for mount in container.bind_mounts]
    if cwd:
        lines.append(["--pwd", cwd])
    return [*lines, [image, *command]]


def _enroot(container: ContainerSpec, image: str, command: list[str], cwd: str | None) -> Lines:
    lines = [["enroot", "start", "--rw"]]
    for mount in container.bind_mounts:
        # Same options as pyxis: create the target if missing, recursive bind.
        options = "x-create=auto,rbind" + (",ro" if mount.read_only else "")
        lines.append(["--mount", f"{mount.host_path}:{mount.container_path}:none:{options}"])
    lines += [["--env", name] for name in _env_names(container, SLURM_TASK_VARIABLES)]
    if cwd:
        lines += [[image, "/bin/sh", "-c", _ENROOT_CD, "hpcdet-cd", cwd], command]
        return lines
    return [*lines, [image, *command]]


def _podman(container: ContainerSpec, image: str, command: list[str], cwd: str | None) -> Lines:
    lines = [["podman", "run", "--rm", "--network=host", "--ipc=host"]]
    if container.force_pull:
        lines.append(["--pull=always"])
    if container.use_gpus:
        lines.append(["--device", "nvidia.com/gpu=all"])
    lines += [["-v", _bind(mount)] for mount in container.bind_mounts]
    lines += [["--env", name] for name in _env_names(container, ("SLURM_*",))]
    if cwd:
        lines.append(["-w", cwd])
    if image.startswith("/"):
        # A directory image (scripts/build-image's): an overlay (":O") on it per container,
        # so no rank writes into the shared directory.
        return [*lines, ["--rootfs", f"{image}:O", *command]]
    return [*lines, [image, *command]]


def _charliecloud(container: ContainerSpec, image: str, command: list[str],
                  cwd: str | None) -> Lines:
    lines = [["ch-run", "--private-tmp"]]
    for index, mount in enumerate(container.bind_mounts):
        if mount.read_only:
            raise ValidationError(
                f"container.bind_mounts[{index}] ({mount.host_path}) is read-only, which "
                "charliecloud cannot mount: ch-run's -b binds are read-write (make the host "
                "path read-only, or use another container_run_type)")
        lines.append(["-b", f"{mount.host_path}:{mount.container_path}"])
    if cwd:
        lines.append(["--cd", cwd])
    return [*lines, [image, "--", *command]]


def _bind(mount: BindMount) -> str:
    """``src:dst`` or ``src:dst:ro``, the form apptainer's --bind and podman's -v share."""
    suffix = ":ro" if mount.read_only else ""
    return f"{mount.host_path}:{mount.container_path}{suffix}"


_BUILDERS: dict[str, Builder] = {
    "apptainer": _apptainer,
    "singularity": _apptainer,
    "enroot": _enroot,
    "podman": _podman,
    "charliecloud": _charliecloud,
}
