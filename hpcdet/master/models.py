"""SQLAlchemy 2 typed models, portable between SQLite and PostgreSQL.

Relationships are ``lazy="raise"`` so an accidental lazy load fails loudly; state columns
are written only by :func:`hpcdet.master.transitions.transition`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from hpcdet.master.model_base import Base, BigId, JSONType, as_utc, utcnow


class Experiment(Base):
    __tablename__ = "experiments"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(256))
    description: Mapped[str] = mapped_column(Text, default="")
    labels: Mapped[list[Any]] = mapped_column(default=list)
    owner: Mapped[str] = mapped_column(String(128), index=True)
    state: Mapped[str] = mapped_column(String(32), index=True)
    config: Mapped[dict[str, Any]] = mapped_column()
    original_config: Mapped[str] = mapped_column(Text)
    # Up to 95 MiB: loaded only when asked for (the reconciler, once per submission).
    context: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    searcher_name: Mapped[str] = mapped_column(String(32))
    resource_pool: Mapped[str | None] = mapped_column(String(128))
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    # Where it belongs (hpcdet.master.security.authz): NULL is its owner's alone (and admins').
    workspace_id: Mapped[int | None] = mapped_column(
        ForeignKey("workspaces.id", ondelete="RESTRICT"), index=True)
    project_id: Mapped[int | None] = mapped_column(
        ForeignKey("projects.id", ondelete="RESTRICT"), index=True)
    # The searcher's whole state (hpcdet.searcher.Searcher.to_state), saved in the same
    # transaction as the events it consumed; NULL until the searcher has started.
    searcher_state: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # A random token replaced whenever the searcher changes (hpcdet.master.experiments.
    # searcher_store): a master whose searcher in memory carries the same token may use it.
    searcher_etag: Mapped[str | None] = mapped_column(String(32))
    # The experiment this one was forked from (det experiment fork); kept if that one goes.
    parent_id: Mapped[int | None] = mapped_column(Integer)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    # Unmanaged (core_v2): a script run outside the master reports into it; the master
    # never schedules its trials. external_id: the script's own name for it (resuming).
    unmanaged: Mapped[bool] = mapped_column(Boolean, default=False)
    external_id: Mapped[str | None] = mapped_column(String(256), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    ended_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))

    trials: Mapped[list[Trial]] = relationship(back_populates="experiment", lazy="raise",
                                               order_by="Trial.id")


class Trial(Base):
    __tablename__ = "trials"
    # The search step's "trials that ended and the searcher has not heard of" reads just
    # those, not every trial that ended (10,000 in a large search).
    __table_args__ = (Index("ix_trials_searcher_closed_state", "searcher_closed", "state"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"),
                                               index=True)
    state: Mapped[str] = mapped_column(String(32), index=True)
    hparams: Mapped[dict[str, Any]] = mapped_column()
    seed: Mapped[int] = mapped_column(BigInteger)
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    run_id: Mapped[int] = mapped_column(Integer, default=0)
    steps_completed: Mapped[int] = mapped_column(BigInteger, default=0)
    # sha256 (hex) of the trial's bearer token; the token itself is only in the job's files.
    token: Mapped[str] = mapped_column(String(64))
    job_dir: Mapped[str] = mapped_column(Text, default="")
    latest_checkpoint: Mapped[str | None] = mapped_column(String(64))
    best_validation: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    latest_validation: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # The searcher's id for this trial (TrialRequest.request_id).
    request_id: Mapped[str | None] = mapped_column(String(36), index=True)
    # Why the trial's code exited early, as reported by it (e.g. "invalid_hp").
    early_exit: Mapped[str | None] = mapped_column(String(32))
    # True once the searcher has been told that the trial ended.
    searcher_closed: Mapped[bool] = mapped_column(Boolean, default=False)
    # When the master asked the trial's code to stop (searcher stop, pause): the clock for
    # ``preemption_timeout``.
    stop_requested_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    # Why the master asked it to stop, e.g. "early_stopped" by ASHA before max_time.
    stop_reason: Mapped[str | None] = mapped_column(String(32))
    # Interruptions that did not count against max_restarts (preemption, walltime).
    interruptions: Mapped[int] = mapped_column(Integer, default=0)
    # log_policies actions seen in the trial's logs: no more restarts; nodes to avoid.
    cancel_retries: Mapped[bool] = mapped_column(Boolean, default=False)
    excluded_nodes: Mapped[list[Any]] = mapped_column(default=list)
    # Unmanaged trials: the script's name for the trial, the scheduler job it runs in (a
    # user's own sbatch/qsub job; its end ends the trial) and its last heartbeat.
    external_id: Mapped[str | None] = mapped_column(String(256))
    external_job: Mapped[str | None] = mapped_column(String(64))
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    ended_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))

    experiment: Mapped[Experiment] = relationship(back_populates="trials", lazy="raise")


class Job(Base):
    """One scheduler job of a trial. ``job_id`` NULL means: intent to submit recorded."""

    __tablename__ = "jobs"

    id: Mapped[int] = mapped_column(primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"), index=True)
    run_id: Mapped[int] = mapped_column(Integer)
    job_id: Mapped[str | None] = mapped_column(String(64), index=True)
    # The job name, unique per (trial, run): how a restarted master finds a job whose
    # submission it recorded but whose id it never learnt.
    name: Mapped[str] = mapped_column(String(128), default="")
    # How many times Slurm has requeued this job (its restart count) as last seen.
    requeues: Mapped[int] = mapped_column(Integer, default=0)
    active: Mapped[bool] = mapped_column(Boolean, default=True, index=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    phase: Mapped[str | None] = mapped_column(String(32))
    native_state: Mapped[str | None] = mapped_column(String(64))
    reason: Mapped[str | None] = mapped_column(Text)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    nodes: Mapped[str | None] = mapped_column(Text)
    # The slot layout the job asked the scheduler for (JobSpec.nodes, ranks_per_node), by
    # which its log lines are attributed to nodes; NULL for a job recorded before 0019.
    node_count: Mapped[int | None] = mapped_column(Integer)
    slots_per_node: Mapped[int | None] = mapped_column(Integer)
    script_path: Mapped[str] = mapped_column(Text, default="")
    log_offsets: Mapped[dict[str, Any]] = mapped_column(default=dict)
    submitted_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    ended_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class StateChange(Base):
    """History: one row per state transition of an experiment or a trial."""

    __tablename__ = "state_changes"
    __table_args__ = (Index("ix_state_changes_entity", "entity_kind", "entity_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    entity_kind: Mapped[str] = mapped_column(String(16))
    entity_id: Mapped[int] = mapped_column(Integer)
    from_state: Mapped[str | None] = mapped_column(String(32))
    to_state: Mapped[str] = mapped_column(String(32))
    cause: Mapped[str] = mapped_column(Text, default="")
    actor: Mapped[str] = mapped_column(String(128), default="system")
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Metric(Base):
    """One reported value: (trial, group, step, name) -> value."""

    __tablename__ = "metrics"
    __table_args__ = (
        Index("ix_metrics_trial_group_step", "trial_id", "group", "steps_completed"),
        # One metric's series in step order, and the names of a group, read from the index
        # alone (it covers the charts' downsampling: steps and values of visible rows).
        Index("ix_metrics_trial_group_name_step", "trial_id", "group", "name", "archived",
              "steps_completed", "value"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"))
    group: Mapped[str] = mapped_column(String(32))
    steps_completed: Mapped[int] = mapped_column(BigInteger)
    name: Mapped[str] = mapped_column(String(256))
    value: Mapped[float] = mapped_column(Float)
    # The execution that reported it: the master's run and Slurm's requeue count.
    run_id: Mapped[int] = mapped_column(Integer, default=0)
    requeue: Mapped[int] = mapped_column(Integer, default=0)
    # Reported by a run that a later run rolled back (it resumed from an earlier
    # checkpoint and reported these steps again); hidden from readers, kept for audit.
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    reported_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Checkpoint(Base):
    __tablename__ = "checkpoints"

    uuid: Mapped[str] = mapped_column(String(64), primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"), index=True)
    steps_completed: Mapped[int] = mapped_column(BigInteger)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)
    resources: Mapped[dict[str, Any]] = mapped_column(default=dict)
    validation_metrics: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    state: Mapped[str] = mapped_column(String(16), default="ACTIVE")
    reported_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SearcherEvent(Base):
    """A validation reported by a trial, waiting for (or consumed by) the searcher.

    API workers append rows; the reconciler consumes unprocessed ones in id order and marks
    them processed in the transaction that saves the searcher's new state, so a restart
    neither loses nor repeats one.
    """

    __tablename__ = "searcher_events"
    __table_args__ = (Index("ix_searcher_events_processed_id", "processed", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), index=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"))
    steps_completed: Mapped[int] = mapped_column(BigInteger)
    metrics: Mapped[dict[str, Any]] = mapped_column()
    processed: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SearcherJournalEntry(Base):
    """One input the searcher absorbed after its saved snapshot (``searcher_state``).

    The snapshot plus these, replayed in ``seq`` order, is the searcher's current state; they
    are written in the transaction that consumed them and deleted when folded into a new
    snapshot (:mod:`hpcdet.master.experiments.searcher_store`). ``kind`` is ``validation``
    (``metric`` at ``time_units``) or ``exit`` (``reason``).
    """

    __tablename__ = "searcher_journal"
    __table_args__ = (Index("ix_searcher_journal_experiment_id_seq", "experiment_id", "seq"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    request_id: Mapped[str] = mapped_column(String(36))
    metric: Mapped[float | None] = mapped_column(Float)
    time_units: Mapped[float | None] = mapped_column(Float)
    reason: Mapped[str | None] = mapped_column(String(16))


class Template(Base):
    """A named config template (Determined's ``det template``), merged under a config."""

    __tablename__ = "templates"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    config: Mapped[dict[str, Any]] = mapped_column()
    owner: Mapped[str] = mapped_column(String(128))
    workspace_id: Mapped[int | None] = mapped_column(
        ForeignKey("workspaces.id", ondelete="RESTRICT"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ReportStream(Base):
    """The reports of one reporter of one execution of a trial.

    An execution is one run of the trial (a job the master submitted) or one Slurm requeue
    of it; within it each reporting rank (the chief, and ranks that report their own
    profiling) numbers its reports 0, 1, 2, ... and resends a batch until the master has
    answered. ``last_seq`` is the highest number stored, so a resent report is recognised
    and dropped instead of stored twice.
    """

    __tablename__ = "report_streams"

    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"),
                                          primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    requeue: Mapped[int] = mapped_column(Integer, primary_key=True)
    rank: Mapped[int] = mapped_column(Integer, primary_key=True)
    last_seq: Mapped[int] = mapped_column(BigInteger, default=-1)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class TrialLog(Base):
    __tablename__ = "trial_logs"
    __table_args__ = (Index("ix_trial_logs_trial_id_id", "trial_id", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"))
    job_id: Mapped[str | None] = mapped_column(String(64))
    rank: Mapped[int | None] = mapped_column(Integer)
    node: Mapped[str | None] = mapped_column(String(128))
    stream: Mapped[str] = mapped_column(String(8))
    line: Mapped[str] = mapped_column(Text)
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ClusterSnapshot(Base):
    """The latest copy of something read from the scheduler on a timer (pools, the queue).

    The reconciler writes it; API requests read it, so no request runs a scheduler command.
    """

    __tablename__ = "cluster_snapshots"

    kind: Mapped[str] = mapped_column(String(32), primary_key=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSONType)
    taken_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class CommandTask(Base):
    """A command task: one Slurm batch job submitted with ``det sbatch`` (docs/sbatch.md).

    The job runs as the master's Slurm user; ``owner`` is who submitted it through hpcdet.
    ``state`` is written only by :func:`hpcdet.master.transitions.transition`.
    """

    __tablename__ = "command_tasks"

    id: Mapped[int] = mapped_column(primary_key=True)
    owner: Mapped[str] = mapped_column(String(128), index=True)
    workspace_id: Mapped[int | None] = mapped_column(
        ForeignKey("workspaces.id", ondelete="RESTRICT"), index=True)
    # The Slurm job name (--job-name, else the script's file name, or "wrap").
    name: Mapped[str] = mapped_column(String(256))
    state: Mapped[str] = mapped_column(String(32), index=True)
    job_id: Mapped[str | None] = mapped_column(String(64), index=True)
    job_dir: Mapped[str] = mapped_column(Text)
    # The pool the user named with --partition (or the default aux pool), and its partition
    # (None: Slurm's default partition).
    pool: Mapped[str | None] = mapped_column(String(128))
    partition: Mapped[str | None] = mapped_column(String(128))
    account: Mapped[str | None] = mapped_column(String(128))
    # The merged sbatch options as [[long name, value or null], ...], in effect order.
    options: Mapped[list[Any]] = mapped_column(default=list)
    args: Mapped[list[Any]] = mapped_column(default=list)
    # Where det sbatch ran, and the job's working directory (--chdir, else cwd).
    cwd: Mapped[str] = mapped_column(Text)
    workdir: Mapped[str] = mapped_column(Text)
    # The user's output/error filename patterns (the master keeps its own copy too).
    output_pattern: Mapped[str] = mapped_column(Text)
    error_pattern: Mapped[str | None] = mapped_column(Text)
    native_state: Mapped[str | None] = mapped_column(String(64))
    reason: Mapped[str | None] = mapped_column(Text)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    nodes: Mapped[str | None] = mapped_column(Text)
    # Set by the kill route; the reconciler cancels the job and stamps cancel_sent_at.
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    cancel_sent_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    submitted_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    # "batch": the user's own script (det sbatch, det qsub); "command": a script the master
    # wrote from a command config (det cmd run), which is kept in ``config``.
    kind: Mapped[str] = mapped_column(String(16), default="batch", server_default="batch",
                                      index=True)
    config: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    # A proxied service (a notebook, a TensorBoard; hpcdet.master.proxy): where it listens
    # once its job wrote service.json (cleared when the task ends): the host the job named,
    # the address it resolved to at registration (the only one the proxy dials, so a later
    # DNS answer cannot redirect it: proxy/pinning.py) and the port; and the per-task secret
    # the master hands it (the job reads it from a 0600 file in its job directory).
    service_host: Mapped[str | None] = mapped_column(String(256), default=None)
    service_address: Mapped[str | None] = mapped_column(String(64), default=None)
    service_port: Mapped[int | None] = mapped_column(Integer, default=None)
    service_token: Mapped[str | None] = mapped_column(String(128), default=None)


class ShellKey(Base):
    """A shell's (``det shell``) client key pair and its sshd's host public key.

    Made at submission; the host's private key is only in the job directory. The owner's
    ``det`` fetches the client's private key to log in (``GET /shells/<id>/keys``).
    """

    __tablename__ = "shell_keys"

    task_id: Mapped[int] = mapped_column(
        ForeignKey("command_tasks.id", ondelete="CASCADE"), primary_key=True)
    # OpenSSH formats: the private key as "-----BEGIN OPENSSH PRIVATE KEY-----...",
    # the public ones as "ssh-ed25519 AAAA...".
    client_private_key: Mapped[str] = mapped_column(Text)
    client_public_key: Mapped[str] = mapped_column(Text)
    host_public_key: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class AuthToken(Base):
    """A user's session, API or one-time web-link token; only its sha256 is stored."""

    __tablename__ = "auth_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(128), index=True)
    kind: Mapped[str] = mapped_column(String(16))  # session | api | web_link | web
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(128), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    last_used_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class User(Base):
    """A user the master has seen sign in (for ``det user list``)."""

    __tablename__ = "users"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    first_seen: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_seen: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # A cluster admin may deactivate a user: every request of theirs is then refused (Forbidden).
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    display_name: Mapped[str] = mapped_column(String(256), default="")


class Workspace(Base):
    """A group of users sharing experiments, tasks and templates (Determined's workspace)."""

    __tablename__ = "workspaces"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # Archived: read-only for new work (no new experiments, tasks or projects), hidden from
    # default lists.
    archived: Mapped[bool] = mapped_column(Boolean, default=False)


class WorkspaceMember(Base):
    """A user's role in a workspace: ``viewer``, ``editor`` or ``admin``."""

    __tablename__ = "workspace_members"

    workspace_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True)
    user: Mapped[str] = mapped_column(String(128), primary_key=True, index=True)
    role: Mapped[str] = mapped_column(String(16))
    added_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class UserGroup(Base):
    """A named group of users (Determined's user group); cluster admins manage it, and a
    workspace admin may give it a role in the workspace (:class:`WorkspaceGroupRole`)."""

    __tablename__ = "user_groups"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class UserGroupMember(Base):
    """One user of a :class:`UserGroup`."""

    __tablename__ = "user_group_members"

    group_id: Mapped[int] = mapped_column(
        ForeignKey("user_groups.id", ondelete="CASCADE"), primary_key=True)
    user: Mapped[str] = mapped_column(String(128), primary_key=True, index=True)


class WorkspaceGroupRole(Base):
    """A group's role in a workspace: each of its users has (at least) that role there."""

    __tablename__ = "workspace_group_roles"

    workspace_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True)
    group_id: Mapped[int] = mapped_column(
        ForeignKey("user_groups.id", ondelete="CASCADE"), primary_key=True, index=True)
    role: Mapped[str] = mapped_column(String(16))


class Project(Base):
    """A named group of experiments inside a workspace (Determined's project)."""

    __tablename__ = "projects"
    __table_args__ = (UniqueConstraint("workspace_id", "name",
                                       name="uq_projects_workspace_id_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(128))
    description: Mapped[str] = mapped_column(Text, default="")
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    archived: Mapped[bool] = mapped_column(Boolean, default=False)


class RegisteredModel(Base):
    """A model of the registry (Determined's ``det model``): a name, unique on the cluster
    as Determined's ``models_name_unique``, and numbered versions that point at checkpoints.
    """

    __tablename__ = "models"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(256), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)
    labels: Mapped[list[Any]] = mapped_column(default=list)
    notes: Mapped[str] = mapped_column(Text, default="")
    owner: Mapped[str] = mapped_column(String(128), index=True)
    workspace_id: Mapped[int | None] = mapped_column(
        ForeignKey("workspaces.id", ondelete="RESTRICT"), index=True)
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ModelVersion(Base):
    """Version ``version`` (1, 2, ...) of a registered model: one checkpoint, pinned.

    The checkpoint's row cannot go while a version names it (RESTRICT), and checkpoint GC
    skips it (:mod:`hpcdet.master.reports.checkpoint_gc`).
    """

    __tablename__ = "model_versions"
    __table_args__ = (UniqueConstraint("model_id", "version",
                                       name="uq_model_versions_model_id_version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"),
                                          index=True)
    version: Mapped[int] = mapped_column(Integer)
    checkpoint_uuid: Mapped[str] = mapped_column(
        String(64), ForeignKey("checkpoints.uuid", ondelete="RESTRICT"), index=True)
    name: Mapped[str] = mapped_column(String(256), default="")
    comment: Mapped[str] = mapped_column(Text, default="")
    notes: Mapped[str] = mapped_column(Text, default="")
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)
    labels: Mapped[list[Any]] = mapped_column(default=list)
    owner: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


__all__ = ["AuthToken", "Base", "Checkpoint", "ClusterSnapshot", "CommandTask", "Experiment",
           "Job", "Metric", "Project", "ReportStream", "SearcherEvent", "SearcherJournalEntry",
           "ShellKey", "StateChange", "Template", "Trial", "TrialLog", "User", "Workspace",
           "WorkspaceMember", "as_utc", "utcnow"]

# Allocation mode's tables live in their own module; importing it registers them on Base.
from hpcdet.master import allocation_models  # noqa: E402,F401
