"""Accepting an experiment: parse, validate, apply defaults, render, and only then store."""

from __future__ import annotations

import base64
import binascii
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy.orm import Session

from hpcdet import expconf, safe_yaml, storage
from hpcdet.dispatcher import Backend, Submission, registry
from hpcdet.dispatcher.batch_args import check_args, check_rest_args
from hpcdet.dispatcher.jobdir import MASTER_CERT_FILE, context_size, prepare_job_dir
from hpcdet.dispatcher.transport import RestSettings, Transport
from hpcdet.errors import ConfigError
from hpcdet.master.errors import Invalid, TooLarge
from hpcdet.master.models import Experiment, Template
from hpcdet.master.queue.pools import Pool, pool_for_config
from hpcdet.master.queue.slots import slot_layout
from hpcdet.master.reports.log_policies import check_actions, check_patterns
from hpcdet.master.scheduling.allocation_config import check_allocation, dry_run_allocation
from hpcdet.master.scheduling.jobspec import TrialRun, build_job_spec
from hpcdet.master.security.storage_roots import CHECKPOINTS, check_storage
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.experiment_config import batch_args, checkpoint_dir
from hpcdet.master.settings.runas import owner_root
from hpcdet.master.settings.tls import job_cert_pem
from hpcdet.master.transitions import transition
from hpcdet.searcher import TrialRequest, make_searcher
from hpcdet.states import State
from hpcdet.yaml_errors import yaml_error_line

CONTEXT_LIMIT = 95 * 1024 * 1024
# Scratch job directories of --dry-run, under the job storage root; removed after rendering.
DRY_RUN_DIR = "dry-run"
DRY_RUN_MAX_AGE = 3600.0
# Determined's master names unnamed experiments "Experiment (<adjective>-<noun>)"; one
# fixed name keeps hpcdet's submissions reproducible.
DEFAULT_EXPERIMENT_NAME = "Experiment"


@dataclass
class Accepted:
    """What a submission produced: the stored experiment, or the dry-run jobs."""

    warnings: list[str]
    experiment: Experiment | None = None
    dry_run_jobs: list[Submission] = field(default_factory=list)
    # Allocation mode (resources.allocation): the allocation job the trials run inside.
    dry_run_allocation: Submission | None = None


def parse_config(text: str) -> dict[str, Any]:
    """Parse YAML text within :mod:`hpcdet.safe_yaml`'s limits; errors name line and column."""
    try:
        doc = safe_yaml.load(text)
    except safe_yaml.YamlLimitError as exc:
        raise ConfigError([f"<config>: {exc}"],
                          title="the experiment config is over a YAML limit") from exc
    except yaml.YAMLError as exc:
        raise ConfigError([yaml_error_line(exc, "<config>")],
                          title="the experiment config is not valid YAML") from exc
    if not isinstance(doc, dict):
        raise ConfigError(["<config>: must be a mapping of fields"])
    return doc


def decode_context(encoded: str) -> bytes:
    """Decode the base64 context tarball and enforce the 95 MiB limit."""
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise Invalid("bad_request", "context: not valid base64") from exc
    size = context_size(data)
    if size > CONTEXT_LIMIT:
        raise TooLarge("payload_too_large",
                       f"context holds {size} bytes of files, over the {CONTEXT_LIMIT} limit")
    return data


def effective_config(settings: MasterSettings, user_doc: Mapping[str, Any],
                     template: Mapping[str, Any] | None = None, *,
                     owner: str = "") -> dict[str, Any]:
    """The config an experiment runs with, every field present (see docs/configuration.md).

    Sanity-checks what the user wrote (and the template), merges the config over the
    template, fills what the master decides (name, checkpoint storage, seed), then every
    schema default, and checks the result is complete and runnable on this cluster.
    ``owner``: the experiment's owner, whose jobs run as them with ``jobs_run_as: owner``
    (their checkpoints then stay in their own directory).
    """
    doc = _sane_merged(user_doc, template, settings.resource_manager.type)
    config = expconf.with_defaults(with_master_defaults(settings, doc, owner))
    errors = expconf.validate(config, phase="complete")
    if errors:
        raise ConfigError(errors, title="the experiment config is incomplete")
    storage.check_available(config)
    scheduler = settings.resource_manager.type
    where, args = batch_args(config, scheduler)
    check_args(scheduler, args, where)
    if isinstance(settings.resource_manager.transport, RestSettings):
        check_rest_args(scheduler, args, where)  # what slurmrestd can be sent
    check_patterns(config)
    check_actions(config, settings.resource_manager.scheduler)
    check_storage(settings, config, owner=owner)
    slot_layout(config, scheduler=scheduler)
    check_allocation(config, scheduler, owner_mode=settings.runas.owner_mode)
    return dict(config)


def _sane_merged(user_doc: Mapping[str, Any], template: Mapping[str, Any] | None,
                 scheduler: str) -> dict[str, Any]:
    """The user's config merged over the template, once both pass the sanity checks."""
    errors = expconf.validate(user_doc, phase="sanity")
    if template is not None:  # its lines say <template>: the user can tell where to look
        errors += expconf.validate(template, phase="sanity", root="<template>")
    if errors:
        raise ConfigError(errors, title="the experiment config is invalid")
    check_sbatch_args(user_doc, "<config>", scheduler)  # each named where it came from
    if template is not None:
        check_sbatch_args(template, "<template>", scheduler)
    return dict(expconf.merge(user_doc, template) if template is not None else user_doc)


def check_sbatch_args(doc: Mapping[str, Any], root: str, scheduler: str = "slurm") -> None:
    """Refuse the options hpcdet controls in ``doc``'s ``slurm.sbatch_args`` (or
    ``pbs.pbsbatch_args`` on PBS), errors naming ``root``."""
    plugin = registry.scheduler(scheduler)
    block = doc.get(plugin.config_section)
    args = block.get(plugin.args_key) if isinstance(block, Mapping) else None
    if isinstance(args, list):
        check_args(scheduler, args, plugin.args_path(root))


def with_master_defaults(settings: MasterSettings, doc: Mapping[str, Any],
                          owner: str) -> dict[str, Any]:
    """``doc`` with what the master decides when the user did not: the name, the
    checkpoint storage (the cluster's, merged under a partial one) and the seed."""
    out = dict(doc)
    out["name"] = out.get("name") or DEFAULT_EXPERIMENT_NAME
    out["checkpoint_storage"] = expconf.merge(out.get("checkpoint_storage") or {},
                                              default_storage(settings, owner),
                                              kind="checkpoint_storage")
    reproducibility = dict(out.get("reproducibility") or {})
    if reproducibility.get("experiment_seed") is None:
        reproducibility["experiment_seed"] = secrets.randbelow(2**31)
    out["reproducibility"] = reproducibility
    return out


def default_storage(settings: MasterSettings, owner: str = "") -> dict[str, Any]:
    """The cluster's checkpoint storage: ``checkpoint_storage`` in master.yaml, else a
    ``shared_fs`` under the job storage root.

    With ``jobs_run_as: owner`` it is ``owner``'s own, never one directory for everybody:
    ``<job_storage_root>/<owner>/checkpoints`` (the run-as helper makes it, as the owner),
    or ``<dir>/<owner>`` of the directory master.yaml names.
    """
    per_owner = settings.runas.owner_mode and bool(owner)
    if settings.checkpoint_storage:
        storage = dict(settings.checkpoint_storage)
        key = "container_path" if storage.get("type") == "directory" else "host_path"
        if per_owner and storage.get("type") in ("shared_fs", "directory") \
                and isinstance(storage.get(key), str):
            storage[key] = str(Path(storage[key]).expanduser() / owner)
        return storage
    root = owner_root(settings.resource_manager.job_storage_root, settings.runas,
                      owner if per_owner else "")
    return {"type": "shared_fs", "host_path": str(root / CHECKPOINTS)}


def accept(session: Session, settings: MasterSettings, backend: Backend, *, config_text: str,
           context_b64: str, owner: str, dry_run: bool,
           template: Template | None = None, activate: bool = True) -> Accepted:
    """Validate everything and render the first job before anything is stored.

    With a ``template``, its config is merged under the submitted one and the merged
    effective config is what is stored: editing the template later changes nothing here.
    Without ``activate`` the experiment is created PAUSED: the searcher starts (and its
    first trial is submitted) only once it is activated.
    """
    user_doc = parse_config(config_text)
    context = decode_context(context_b64)
    template_doc = dict(template.config) if template is not None else None
    config = effective_config(settings, user_doc, template=template_doc, owner=owner)
    warnings = _warnings(user_doc, template_doc)
    if dry_run:
        pool = pool_for_config(session, settings, config)
        scratch = str(Path(settings.resource_manager.job_storage_root).expanduser() / DRY_RUN_DIR)
        return Accepted(warnings, dry_run_jobs=[_dry_run_job(settings, backend, config,
                                                             context, pool, owner)],
                        dry_run_allocation=dry_run_allocation(settings, backend, pool, config,
                                                              owner, scratch))
    pool = pool_for_config(session, settings, config)
    probe = TrialRun(0, 0, 1, "/nonexistent", owner=owner)
    backend.render(build_job_spec(settings, config, probe, pool, files=backend.transport))
    cause = f"experiment created from template {template.name}" if template else None
    experiment = _store(session, config, config_text, context, owner,
                        cause=(cause or "experiment created") + ("" if activate else ", paused"),
                        state=State.ACTIVE if activate else State.PAUSED)
    return Accepted(warnings, experiment=experiment)


def _warnings(user_doc: Mapping[str, Any], template_doc: Mapping[str, Any] | None) -> list[str]:
    """Fields that are not acted on, whether the config or the template set them."""
    warnings = expconf.warnings_for(user_doc)
    extra = expconf.warnings_for(template_doc) if template_doc is not None else []
    return warnings + [w for w in extra if w not in warnings]


def _store(session: Session, config: dict[str, Any], text: str, context: bytes,
           owner: str, *, cause: str, state: State = State.ACTIVE) -> Experiment:
    experiment = Experiment(
        name=config["name"], description=config.get("description") or "",
        labels=list(config.get("labels") or []), owner=owner, config=config,
        original_config=text, context=context, searcher_name=config["searcher"]["name"],
        resource_pool=config["resources"].get("resource_pool"),
    )
    session.add(experiment)
    transition(session, experiment, state, cause=cause, actor=owner)
    return experiment


def _dry_run_job(settings: MasterSettings, backend: Backend, config: dict[str, Any],
                 context: bytes, pool: Pool, owner: str) -> Submission:
    """Render the first trial's job in a scratch job directory, then remove the directory.

    Preparing it checks the context unpacks and the first trial's ``trial.json`` can be
    written, as a real submission would; nothing stays behind (each dry-run could leave up
    to 95 MiB), and scratch directories older than :data:`DRY_RUN_MAX_AGE` seconds that a
    crash left are removed too.
    """
    files = backend.transport
    scratch = Path(settings.resource_manager.job_storage_root).expanduser() / DRY_RUN_DIR
    expire_dry_runs(scratch, files=files)
    job_dir = str(scratch / secrets.token_hex(6))
    run = TrialRun(experiment_id=0, trial_id=0, run_id=1, job_dir=job_dir, owner=owner)
    submission = backend.render(build_job_spec(settings, config, run, pool,
                                               files=backend.transport))
    first = first_trial(config)
    info = trial_info(settings, config, run, hparams=first.hparams, seed=first.seed,
                      latest_checkpoint=None, unmanaged=True)
    try:
        prepare_job_dir(job_dir, context_tar=context, trial_info=info, token=None,
                        master_cert=job_cert_pem(settings.tls), files=files)
    finally:
        files.remove_tree(job_dir)
    return submission


def expire_dry_runs(scratch: Path, max_age: float = DRY_RUN_MAX_AGE, *,
                    files: Transport) -> None:
    """Remove the entries of ``scratch`` last changed more than ``max_age`` seconds ago
    (never following a link; ``files``: where they are, the backend's transport)."""
    cutoff = time.time() - max_age
    for entry in files.list_dir(str(scratch)):  # nothing for a link or a missing directory
        if entry.mtime < cutoff:
            files.remove_tree(str(scratch / entry.name))


def first_trial(config: Mapping[str, Any]) -> TrialRequest:
    """The first trial the experiment's searcher will create (hyperparameters and seed)."""
    searcher = make_searcher(config["searcher"], config.get("hyperparameters") or {},
                             int(config["reproducibility"]["experiment_seed"]))
    return searcher.initial_trials()[0]


def trial_info(settings: MasterSettings, config: Mapping[str, Any], run: TrialRun, *,
               hparams: Mapping[str, Any], seed: int, latest_checkpoint: str | None,
               unmanaged: bool = False) -> dict[str, Any]:
    """The trial.json the harness reads (docs/job-directory.md)."""
    info: dict[str, Any] = {
        "master_url": settings.master_url,
        "experiment_id": run.experiment_id,
        "trial_id": run.trial_id,
        "run_id": run.run_id,
        "trial_seed": seed,
        "hparams": dict(hparams),
        "experiment_config": dict(config),
        "latest_checkpoint": latest_checkpoint,
        "checkpoint_dir": checkpoint_dir(config, run.job_dir),
        "token_file": ".token",
    }
    if settings.tls is not None:
        info["master_cert_file"] = MASTER_CERT_FILE
    if unmanaged:  # a dry-run job: no trial in the master, so nothing is reported to it
        info.update(unmanaged=True, token_file=None)
    return info
