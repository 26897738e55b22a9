#!/usr/bin/env python3
"""hpcdet-runas: run one scheduler verb as the calling Unix user, for the hpcdet master.

Installed by root as a root-owned file (``scripts/install-runas-helper``, by default
``/usr/local/libexec/hpcdet-runas``) and started by the master's service account through
``sudo -n -u USER hpcdet-runas VERB ARGS...``. It uses the Python standard library only and
imports nothing from hpcdet: what runs as every user is this short file and the directive
reader it shares with the master (``directives.py``, installed as ``<helper>-directives.py``).

Verbs (scheduler-neutral; :data:`SCHEDULERS` maps them to one scheduler's argv)::

    submit  JOB_DIR SCRIPT_NAME [--OPTION[=VALUE]...] [-- SCRIPT_ARGS...]
                                      submit JOB_DIR/SCRIPT_NAME with allowlisted scheduler
                                      options; prints the job id
    cancel  JOB_ID...                 cancel jobs
    hold    JOB_ID                    hold a queued job
    release JOB_ID                    release a held job
    requeue JOB_ID                    requeue a job
    update  JOB_ID KEY=VALUE...       change partition, qos, account, nice or time_limit
    prepare JOB_DIR                   unpack a tar stream (stdin) of plain files and dirs
                                      (and make <job_root>/<user>/checkpoints)
    remove  JOB_DIR                   delete a job directory
    token   LIFESPAN_SECONDS          print a Slurm JWT of the calling user's own
                                      (``scontrol token lifespan=N``: SLURM_JWT=...), for
                                      slurmrestd; Slurm only, N in 10..604800

Every JOB_DIR must resolve (realpath) to a directory strictly below the user's own root,
``<job_root>/<user>``; settings come from the root-owned ``/etc/hpcdet/runas.conf``.
A refusal prints one line ``hpcdet-runas: <why>`` on stderr and exits with one of the
``EXIT_*`` codes below; a scheduler command's own exit status and output pass through.
"""

from __future__ import annotations

import configparser
import grp
import os
import pwd
import re
import shutil
import stat
import struct
import subprocess
import sys
import tarfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import IO, TYPE_CHECKING, NoReturn

CONFIG_PATH = "/etc/hpcdet/runas.conf"

EXIT_USAGE = 64  # unknown verb, wrong number of arguments
EXIT_INVALID = 65  # an argument failed validation
EXIT_UNAVAILABLE = 69  # the scheduler command could not be started
EXIT_NOPERM = 77  # the caller or target user is not allowed
EXIT_CONFIG = 78  # runas.conf missing, unsafe or invalid

# In <job_root>/<user>: the user's default checkpoint storage (the master's default
# checkpoint_storage when jobs run as their owner), made by ``prepare``.
CHECKPOINT_DIR = "checkpoints"

_JOB_ID = re.compile(r"^[0-9]{1,18}(?:_[0-9]{1,9})?$")
# PBS: 123.server, array jobs 123[].server and 123[4].server.
_PBS_JOB_ID = re.compile(r"^[0-9]{1,18}(?:\[[0-9]{0,9}\])?(?:\.[A-Za-z0-9][A-Za-z0-9.-]{0,253})?$")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_USER = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")
_TIME = re.compile(r"^[0-9][0-9:-]{0,15}$")
# token: seconds, as the master's token_source.lifespan_seconds allows (at most a week); a
# site caps it lower with Slurm's own AuthAltParameters=max_token_lifespan=N.
TOKEN_LIFESPAN = (10, 7 * 24 * 3600)
_LIFESPAN = re.compile(r"^[0-9]{1,7}$")
_UNSAFE = {"\n": "a newline", "\r": "a carriage return", "\x00": "a NUL byte"}
_MAX_ARG = 4096
# A script is read whole, or refused: Slurm's default max_script_size (hpcdet's are ~KB).
MAX_SCRIPT_BYTES = 4 * 1024 * 1024
_OPTION = re.compile(r"^--([a-z][a-z-]{0,40})(?:=(.*))?$", re.DOTALL)
_DIRECTIVE_PREFIX = {"slurm": "#SBATCH", "pbs": "#PBS"}


class Refused(Exception):
    """A request the helper will not carry out; ``code`` is its exit status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _load_directives() -> ModuleType:
    """``<this file>-directives.py``, the reader installed beside the helper, if only root
    can change it; run from its source (no bytecode cache is read or written)."""
    path = f"{os.path.abspath(__file__)}-directives.py"
    try:
        with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as handle:
            info, source = os.fstat(handle.fileno()), handle.read()
    except OSError as exc:
        raise Refused(EXIT_CONFIG, f"cannot read {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise Refused(EXIT_CONFIG, f"{path} must be a root-owned file no one else can write")
    module = sys.modules["hpcdet_runas_directives"] = ModuleType("hpcdet_runas_directives")
    exec(compile(source, path, "exec"), module.__dict__)
    return module


if TYPE_CHECKING or __package__:  # imported as hpcdet.runas.helper: the master, the tests
    from . import directives
else:  # the installed helper: `python3 -I` puts no directory of ours on sys.path
    try:
        directives = _load_directives()
    except Refused as _refused:
        print(f"hpcdet-runas: {_refused}", file=sys.stderr)
        sys.exit(_refused.code)


# Options the submit verb passes on (see the reader's; hpcdet's PBS backend writes every
# qsub option into the script's #PBS lines).
SUBMIT_OPTIONS: Mapping[str, frozenset[str]] = {"slurm": directives.SBATCH_SUBMIT_OPTIONS,
                                                "pbs": frozenset()}


@dataclass(frozen=True)
class Config:
    """``/etc/hpcdet/runas.conf`` section ``[runas]``."""

    job_root: str
    service_user: str = "hpcdet"
    allowed_group: str = ""
    min_uid: int = 1000
    scheduler: str = "slurm"
    path: str = "/usr/local/bin:/usr/bin:/bin"
    scheduler_conf: str = ""
    max_prepare_mb: int = 1024


@dataclass(frozen=True)
class Caller:
    """Who the helper runs as (the job's owner) and who asked (sudo's SUDO_USER)."""

    uid: int
    user: str
    groups: frozenset[str]
    sudo_user: str | None


# ---- the per-scheduler table --------------------------------------------------------------

UPDATE_KEYS = ("partition", "qos", "account", "nice", "time_limit")
_Argv = Callable[[Sequence[str]], list[str]]


def _slurm_update(args: Sequence[str]) -> list[str]:
    names = {"partition": "Partition", "qos": "QOS", "account": "Account", "nice": "Nice",
             "time_limit": "TimeLimit"}
    return ["scontrol", "update", f"JobId={args[0]}",
            *(f"{names[k]}={v}" for k, v in (a.split("=", 1) for a in args[1:]))]


def _pbs_update(args: Sequence[str]) -> list[str]:
    """``qmove QUEUE ID`` for a partition, else one ``qalter`` for the rest.

    ``nice`` is hpcdet's (larger runs later): PBS's ``-p`` priority is its negation,
    clamped to -1024..1023. PBS has no QOS, and qmove changes nothing else.
    """
    values = dict(a.split("=", 1) for a in args[1:])
    if "qos" in values:
        raise Refused(EXIT_INVALID, "update: PBS has no qos")
    if "partition" in values:
        if len(values) > 1:
            raise Refused(EXIT_INVALID, "update: PBS moves a job (partition) on its own")
        return ["qmove", values["partition"], args[0]]
    argv = ["qalter"]
    if "nice" in values:
        argv += ["-p", str(max(-1024, min(1023, -int(values["nice"]))))]
    if "account" in values:
        argv += ["-A", values["account"]]
    if "time_limit" in values:
        argv += ["-l", f"walltime={values['time_limit']}"]
    return [*argv, args[0]]


# verb -> argv builder; args are validated before they get here.
SCHEDULERS: Mapping[str, Mapping[str, _Argv]] = {
    "slurm": {
        # a: [script, *options, "--", *script_args]
        "submit": lambda a: ["sbatch", "--parsable", *_split_submit(a)],
        "cancel": lambda a: ["scancel", *a],
        "hold": lambda a: ["scontrol", "hold", a[0]],
        "release": lambda a: ["scontrol", "release", a[0]],
        "requeue": lambda a: ["scontrol", "requeue", a[0]],
        "update": _slurm_update,
        # No username=: slurmctld mints the token of whoever asks, here the job's owner.
        "token": lambda a: ["scontrol", "token", f"lifespan={a[0]}"],
    },
    "pbs": {
        # a: [script, "--"] (no options: see SUBMIT_OPTIONS)
        "submit": lambda a: ["qsub", *_split_submit(a)],
        "cancel": lambda a: ["qdel", *a],
        "hold": lambda a: ["qhold", a[0]],
        "release": lambda a: ["qrls", a[0]],
        # PBS lets only operators and managers qrerun; an owner's request is refused there.
        "requeue": lambda a: ["qrerun", a[0]],
        "update": _pbs_update,
    },
}


def _split_submit(args: Sequence[str]) -> list[str]:
    """``[script, *options, "--", *script_args]`` -> ``[*options, script, *script_args]``."""
    rest = list(args[1:])
    cut = rest.index("--") if "--" in rest else len(rest)
    return [*rest[:cut], args[0], *rest[cut + 1:]]


# ---- settings and caller ------------------------------------------------------------------


def load_config(path: str = CONFIG_PATH, *, require_root_owned: bool = True) -> Config:
    """Read ``path``; refuse a file anyone but root could have written."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise Refused(EXIT_CONFIG, f"cannot read {path}: {exc.strerror}") from exc
    if require_root_owned and (info.st_uid != 0 or info.st_mode & 0o022):
        raise Refused(EXIT_CONFIG, f"{path} must be owned by root and not group/other-writable")
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
        section = parser["runas"]
        config = Config(
            job_root=section["job_root"],
            service_user=section.get("service_user", Config.service_user),
            allowed_group=section.get("allowed_group", Config.allowed_group),
            min_uid=section.getint("min_uid", Config.min_uid),
            scheduler=section.get("scheduler", Config.scheduler),
            path=section.get("path", Config.path),
            scheduler_conf=section.get("scheduler_conf", Config.scheduler_conf),
            max_prepare_mb=section.getint("max_prepare_mb", Config.max_prepare_mb),
        )
    except (configparser.Error, KeyError, ValueError) as exc:
        raise Refused(EXIT_CONFIG, f"{path}: invalid: {exc}") from exc
    if not os.path.isabs(config.job_root) or config.scheduler not in SCHEDULERS:
        raise Refused(EXIT_CONFIG, f"{path}: job_root must be absolute and scheduler one of "
                      f"{', '.join(sorted(SCHEDULERS))}")
    return config


def current_caller() -> Caller:
    """The real user this process runs as, its groups, and sudo's record of who asked."""
    uid = os.getuid()
    entry = pwd.getpwuid(uid)
    groups = {g.gr_name for g in grp.getgrall() if entry.pw_name in g.gr_mem}
    try:
        groups.add(grp.getgrgid(entry.pw_gid).gr_name)
    except KeyError:
        pass
    return Caller(uid, entry.pw_name, frozenset(groups), os.environ.get("SUDO_USER"))


def check_caller(caller: Caller, config: Config, *, euid: int) -> None:
    """Never run as root, as a system account, or as a user outside the allowed group."""
    if caller.uid == 0 or euid == 0:
        raise Refused(EXIT_NOPERM, "refusing to run as root")
    if caller.uid < config.min_uid:
        raise Refused(EXIT_NOPERM, f"refusing to run as {caller.user}: uid {caller.uid} is "
                      f"below min_uid {config.min_uid}")
    if caller.user == config.service_user:
        raise Refused(EXIT_NOPERM, f"refusing to run as the service account {caller.user}")
    if config.allowed_group and config.allowed_group not in caller.groups:
        raise Refused(EXIT_NOPERM, f"refusing to run as {caller.user}: not in group "
                      f"{config.allowed_group}")
    if caller.sudo_user is not None and caller.sudo_user not in (config.service_user,
                                                                 caller.user):
        raise Refused(EXIT_NOPERM, f"only {config.service_user} may use this helper through "
                      f"sudo, not {caller.sudo_user}")


# ---- argument checks ----------------------------------------------------------------------


def check_text(value: str, what: str) -> str:
    """No line breaks, NUL, leading '-' (an option) or absurd length in any argument."""
    _check_chars(value, what)
    if value.startswith("-"):
        raise Refused(EXIT_INVALID, f"{what} must not start with '-': {value!r}")
    if not value or len(value) > _MAX_ARG:
        raise Refused(EXIT_INVALID, f"{what} must hold 1 to {_MAX_ARG} characters")
    return value


def check_job_id(value: str, scheduler: str = "slurm") -> str:
    pattern = _PBS_JOB_ID if scheduler == "pbs" else _JOB_ID
    if not pattern.match(check_text(value, "job id")):
        expected = "<number>.<server>" if scheduler == "pbs" else "digits only"
        raise Refused(EXIT_INVALID, f"invalid job id {value!r}: {expected}")
    return value


def user_root(config: Config, caller: Caller) -> str:
    """``<job_root>/<user>``, resolved."""
    return os.path.join(os.path.realpath(config.job_root), caller.user)


def check_job_dir(value: str, config: Config, caller: Caller, *, must_exist: bool) -> str:
    """The resolved ``value``, which must lie strictly below the caller's own root."""
    check_text(value, "job directory")
    if not os.path.isabs(value):
        raise Refused(EXIT_INVALID, f"job directory must be absolute: {value!r}")
    real = os.path.realpath(value)
    root = user_root(config, caller)
    if os.path.commonpath([real, root]) != root or real == root:
        raise Refused(EXIT_INVALID, f"job directory {value!r} is not below {root}")
    if must_exist and not os.path.isdir(real):
        raise Refused(EXIT_INVALID, f"job directory {value!r} does not exist")
    return real


def check_submit_extras(extras: Sequence[str], scheduler: str) -> list[str]:
    """Allowlisted ``--option[=value]`` words, then optionally ``--`` and script arguments."""
    extras = list(extras)
    cut = extras.index("--") if "--" in extras else len(extras)
    for word in extras[:cut]:
        match = _OPTION.match(word)
        if match is None or match.group(1) not in SUBMIT_OPTIONS[scheduler]:
            raise Refused(EXIT_INVALID, f"submit: option {word[:80]!r} is not allowed")
        _check_chars(word, f"submit option --{match.group(1)}")
    for arg in extras[cut + 1:]:
        _check_chars(arg, "script argument")
    return [*extras[:cut], "--", *extras[cut + 1:]]


def _check_chars(value: str, what: str) -> None:
    for char, description in _UNSAFE.items():
        if char in value:
            raise Refused(EXIT_INVALID, f"{what} contains {description}")
    if len(value) > _MAX_ARG:
        raise Refused(EXIT_INVALID, f"{what} is longer than {_MAX_ARG} characters")


def check_update(args: Sequence[str]) -> list[str]:
    """``KEY=VALUE`` pairs with allowlisted keys and plain values."""
    if not args:
        raise Refused(EXIT_USAGE, "update needs at least one KEY=VALUE")
    for arg in args:
        key, sep, value = check_text(arg, "update argument").partition("=")
        if not sep or key not in UPDATE_KEYS:
            raise Refused(EXIT_INVALID, f"update: {arg!r} is not KEY=VALUE with KEY one of "
                          f"{', '.join(UPDATE_KEYS)}")
        if not _update_value_ok(key, value):
            raise Refused(EXIT_INVALID, f"update: invalid value for {key}: {value!r}")
    return list(args)


def check_lifespan(value: str) -> str:
    """A token's lifespan: digits only, within :data:`TOKEN_LIFESPAN` seconds."""
    low, high = TOKEN_LIFESPAN
    if not _LIFESPAN.match(check_text(value, "token lifespan")) or not low <= int(value) <= high:
        raise Refused(EXIT_INVALID, f"invalid token lifespan {value[:80]!r}: seconds, "
                      f"{low} to {high}")
    return value


def _update_value_ok(key: str, value: str) -> bool:
    if key == "nice":
        return re.fullmatch(r"-?[0-9]{1,5}", value) is not None and abs(int(value)) <= 10000
    if key == "time_limit":
        return _TIME.match(value) is not None
    return _NAME.match(value) is not None


# ---- file verbs ---------------------------------------------------------------------------


def ensure_user_root(config: Config, caller: Caller) -> str:
    """Create ``<job_root>/<user>`` (0770 + ACL: the user and the service account only)."""
    return private_dir(user_root(config, caller), config, caller,
                       "job_root must exist, owned by root, mode 1733",
                       "ask the administrator to remove it")


def private_dir(path: str, config: Config, caller: Caller, cannot: str, squatted: str) -> str:
    """Create ``path`` as the caller (0770 + the private ACL) unless it is there; refuse
    one that is not a directory of the caller's. ``cannot`` and ``squatted`` end the
    refusals' messages (what to check, what to do)."""
    try:
        os.mkdir(path, 0o770)
    except FileExistsError:
        pass
    except OSError as exc:
        raise Refused(EXIT_CONFIG, f"cannot create {path}: {exc.strerror} ({cannot})") from exc
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != caller.uid:
        raise Refused(EXIT_NOPERM, f"{path} exists but is not a directory owned by "
                      f"{caller.user}; {squatted}")
    os.chmod(path, 0o770)
    set_private_acl(path, service_uid(config))
    return path


def service_uid(config: Config) -> int:
    try:
        return pwd.getpwnam(config.service_user).pw_uid
    except KeyError as exc:
        raise Refused(EXIT_CONFIG, f"service_user {config.service_user} does not exist") from exc


def acl_blob(entries: Sequence[tuple[int, int, int]]) -> bytes:
    """The kernel's POSIX ACL xattr format: version 2, then (tag, perm, id) entries."""
    body = b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in entries)
    return struct.pack("<I", 2) + body


def set_private_acl(path: str, service: int) -> None:
    """Owner rwx, the service account rwx, owning group and others nothing; inherited."""
    undefined = 0xFFFFFFFF
    entries = [(0x01, 7, undefined), (0x02, 7, service), (0x04, 0, undefined),
               (0x10, 7, undefined), (0x20, 0, undefined)]
    blob = acl_blob(entries)
    try:
        os.setxattr(path, "system.posix_acl_access", blob)
        os.setxattr(path, "system.posix_acl_default", blob)
    except OSError as exc:
        raise Refused(EXIT_CONFIG, f"cannot set the ACL of {path}: {exc.strerror} (the job "
                      "root must be on a filesystem with POSIX ACLs)") from exc


def check_member(member: tarfile.TarInfo) -> str:
    """A relative name without '..', of a regular file or a directory only."""
    name = member.name
    check_text(name, "archive member name")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if name.startswith("/") or ".." in parts or not parts:
        raise Refused(EXIT_INVALID, f"archive member {name!r}: absolute or '..' path")
    if not (member.isreg() or member.isdir()):
        raise Refused(EXIT_INVALID, f"archive member {name!r}: only files and directories")
    return "/".join(parts)


def ensure_checkpoint_dir(root: str, config: Config, caller: Caller) -> str:
    """Create ``<job_root>/<user>/checkpoints`` (0770 + the private ACL), the user's default
    checkpoint storage: made by the user, inside their own root, never shared."""
    return private_dir(os.path.join(root, CHECKPOINT_DIR), config, caller,
                       "the user's own root must be writable", "remove it")


def prepare(job_dir: str, stream: IO[bytes], config: Config, caller: Caller) -> None:
    """Create ``job_dir`` (and the user's checkpoint directory) and unpack the tar stream
    into it; modes lose every 'other' bit."""
    ensure_checkpoint_dir(ensure_user_root(config, caller), config, caller)
    fresh = not os.path.lexists(job_dir)
    os.makedirs(job_dir, 0o770, exist_ok=True)
    try:
        _unpack(job_dir, stream, config)
    except BaseException:
        if fresh:  # nothing half-done: a refused archive leaves no directory behind
            shutil.rmtree(job_dir, ignore_errors=True)
        raise


def _unpack(job_dir: str, stream: IO[bytes], config: Config) -> None:
    limit, total = config.max_prepare_mb * 1024 * 1024, 0
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                name = check_member(member)
                total += member.size
                if total > limit:
                    raise Refused(EXIT_INVALID, f"archive larger than {config.max_prepare_mb} MB")
                _extract(tar, member, os.path.join(job_dir, name), job_dir)
    except tarfile.TarError as exc:
        raise Refused(EXIT_INVALID, f"not a valid tar stream: {exc}") from exc


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: str, job_dir: str) -> None:
    parent = os.path.dirname(dest)
    os.makedirs(parent, 0o770, exist_ok=True)
    if os.path.commonpath([os.path.realpath(parent), job_dir]) != job_dir:
        raise Refused(EXIT_INVALID, f"archive member {member.name!r} leaves the job directory")
    owner_bits = member.mode & 0o700
    if member.isdir():
        os.makedirs(dest, 0o770, exist_ok=True)
        os.chmod(dest, owner_bits | 0o700 | 0o070)
        return
    # Group bits are the ACL mask: the service account may read what the owner may read.
    mode = owner_bits | (owner_bits >> 3)
    tmp = f"{dest}.hpcdet-tmp"
    source = tar.extractfile(member)
    assert source is not None
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o660)
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(source, out)
    os.chmod(tmp, mode)
    os.replace(tmp, dest)


def remove(job_dir: str) -> None:
    """Delete ``job_dir`` (links inside are removed, never followed)."""
    if os.path.islink(job_dir) or not os.path.isdir(job_dir):
        return
    shutil.rmtree(job_dir)


def check_script(job_dir: str, script_name: str, scheduler: str) -> str:
    """The script path, once its directives (read whole, as sbatch/qsub do) pass the check."""
    if not _NAME.match(check_text(script_name, "script name")) or script_name.startswith("."):
        raise Refused(EXIT_INVALID, f"script name must be a plain file name: {script_name!r}")
    path = os.path.join(job_dir, script_name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise Refused(EXIT_INVALID, f"cannot open {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_SCRIPT_BYTES + 1)
    if len(data) > MAX_SCRIPT_BYTES:  # a directive further on would go unread
        raise Refused(EXIT_INVALID, f"{path}: larger than {MAX_SCRIPT_BYTES} bytes")
    try:  # who the job runs as; for PBS, -V too: the environment sudo gave the helper
        refused = directives.refused_directives(data.decode("utf-8", "replace"), scheduler,
                                                environment=True)
    except directives.DirectiveError as exc:  # the scheduler would refuse it, or misread it
        raise Refused(EXIT_INVALID, f"{path}: {exc}") from exc
    if refused:
        raise Refused(EXIT_INVALID, f"{path}: {_DIRECTIVE_PREFIX[scheduler]} {refused[0]} "
                      "is not allowed")
    return path


# ---- dispatch -----------------------------------------------------------------------------

_ARITY = {"submit": (2, 1000), "cancel": (1, 1000), "hold": (1, 1), "release": (1, 1),
          "requeue": (1, 1), "update": (2, 16), "prepare": (1, 1), "remove": (1, 1),
          "token": (1, 1)}


def plan(verb: str, args: Sequence[str], config: Config, caller: Caller) -> tuple[str, list[str]]:
    """Validate one request; return ``("run", argv)``, ``("prepare"|"remove", [dir])``."""
    if verb not in _ARITY:
        raise Refused(EXIT_USAGE, f"unknown verb {verb!r} (known: {', '.join(_ARITY)})")
    low, high = _ARITY[verb]
    if not low <= len(args) <= high:
        raise Refused(EXIT_USAGE, f"{verb} takes {low}..{high} arguments, not {len(args)}")
    table = SCHEDULERS[config.scheduler]
    if verb in ("prepare", "remove"):
        job_dir = check_job_dir(args[0], config, caller, must_exist=verb == "remove")
        return verb, [job_dir]
    if verb == "submit":
        job_dir = check_job_dir(args[0], config, caller, must_exist=True)
        script = check_script(job_dir, args[1], config.scheduler)
        return "run", table[verb]([script, *check_submit_extras(args[2:], config.scheduler)])
    if verb not in table:  # token: slurmrestd's JWTs are Slurm's alone
        raise Refused(EXIT_USAGE, f"{verb} is not available with scheduler "
                      f"{config.scheduler} (Slurm only)")
    if verb == "update":
        job_id = check_job_id(args[0], config.scheduler)
        return "run", table[verb]([job_id, *check_update(args[1:])])
    if verb == "token":
        return "run", table[verb]([check_lifespan(args[0])])
    return "run", table[verb]([check_job_id(arg, config.scheduler) for arg in args])


def scheduler_env(config: Config) -> dict[str, str]:
    """A clean environment: PATH from the config, the scheduler's config file, the user."""
    env = {"PATH": config.path, "LANG": "C.UTF-8"}
    for name in ("USER", "LOGNAME", "HOME"):
        if name in os.environ:
            env[name] = os.environ[name]
    if config.scheduler_conf:
        env["SLURM_CONF" if config.scheduler == "slurm" else "PBS_CONF_FILE"] = \
            config.scheduler_conf
    return env


def run_scheduler(argv: Sequence[str], config: Config, cwd: str | None) -> int:
    """Run ``argv`` (no shell); its output and exit status pass through."""
    env = scheduler_env(config)
    program = shutil.which(argv[0], path=config.path)
    if program is None:
        raise Refused(EXIT_UNAVAILABLE, f"{argv[0]}: not found on {config.path}")
    try:
        proc = subprocess.run([program, *argv[1:]], env=env, cwd=cwd, check=False,
                              stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise Refused(EXIT_UNAVAILABLE, f"{argv[0]}: cannot run: {exc.strerror}") from exc
    return proc.returncode


def main(argv: Sequence[str] | None = None, *, config_path: str = CONFIG_PATH) -> int:
    """Entry point; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if not args:
            raise Refused(EXIT_USAGE, f"usage: hpcdet-runas VERB ARGS... ({', '.join(_ARITY)})")
        config = load_config(config_path)
        caller = current_caller()
        check_caller(caller, config, euid=os.geteuid())
        action, values = plan(args[0], args[1:], config, caller)
        if action == "prepare":
            os.umask(0o077)
            prepare(values[0], sys.stdin.buffer, config, caller)
            return 0
        if action == "remove":
            remove(values[0])
            return 0
        cwd = os.path.realpath(args[1]) if args[0] == "submit" else None
        return run_scheduler(values, config, cwd)
    except Refused as exc:
        return _fail(exc.code, str(exc))
    except OSError as exc:
        return _fail(EXIT_INVALID, f"{exc.strerror}: {exc.filename}")


def _fail(code: int, message: str) -> int:
    print(f"hpcdet-runas: {message.splitlines()[0] if message else 'refused'}", file=sys.stderr)
    return code


def _exit() -> NoReturn:
    sys.exit(main())


if __name__ == "__main__":
    _exit()
