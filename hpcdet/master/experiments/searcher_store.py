"""Where an experiment's searcher lives between reconcile cycles: in memory and in the database.

The database holds a *snapshot* (``experiments.searcher_state``, :meth:`Searcher.to_state`)
and a *journal* (:class:`~hpcdet.master.models.SearcherJournalEntry`): the inputs the
searcher absorbed after that snapshot, in order. The searcher is pure and deterministic, so
the snapshot with its journal replayed (the actions the replay returns are discarded: the
transaction that wrote each entry carried them out) is exactly the searcher that consumed
them. A search step therefore appends its inputs to the journal, O(events), instead of
rewriting a state that grows with the trials (1.9 MB of JSON at 7,700 ASHA trials); once the
journal holds a quarter as many entries as the searcher has trials (at least
:data:`FOLD_MIN_ENTRIES`), it is folded into a new snapshot and deleted, so the snapshot's
O(trials) cost is paid once per O(trials) inputs, and a restore (a restart, the rungs the
experiment page shows) replays at most that many. Journal entries, the consumed marks of
the events and the actions commit in one transaction, as the snapshot did before: a crash
between cycles loses nothing and repeats nothing.

The master keeps each running search's searcher in memory between cycles, under
``experiments.searcher_etag``: a random token replaced at every change. A cycle that finds
the token it holds uses the searcher in memory; any other token (a restart, another
master, a rolled-back transaction, a ``det experiment continue``) restores from the
database.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from hpcdet.master.models import Experiment, SearcherJournalEntry
from hpcdet.searcher import Action, Searcher, make_searcher

# The journal is folded into a new snapshot once it holds this many entries, or a quarter as
# many as the searcher has trials if more: the snapshot's size grows with the trials, and a
# restore replays ~17 us per entry (10,000 entries: ~170 ms on the busy 2-vCPU dev VM).
FOLD_MIN_ENTRIES = 1_000
FOLD_TRIALS_DIVISOR = 4
_VALIDATION, _EXIT = "validation", "exit"


def build_searcher(config: dict[str, Any], state: dict[str, Any] | None = None) -> Searcher:
    """The experiment's searcher, restored from ``state`` when given."""
    searcher = make_searcher(config["searcher"], config.get("hyperparameters") or {},
                             int(config["reproducibility"]["experiment_seed"]))
    if state is not None:
        searcher.from_state(state)
    return searcher


@dataclass
class LiveSearcher:
    """A restored searcher, the journal entries it has past its snapshot, and its token.

    Feed it through :meth:`validation` and :meth:`exited`, which record each input for the
    journal, never through the searcher's own methods.
    """

    searcher: Searcher
    etag: str | None
    journal_length: int = 0
    unsaved: list[dict[str, Any]] = field(default_factory=list)

    def validation(self, request_id: str, metric: float, time_units: float) -> list[Action]:
        """Feed a validation to the searcher and record it."""
        self._record(_VALIDATION, request_id, metric=metric, time_units=time_units)
        return self.searcher.on_validation(request_id, metric, time_units)

    def exited(self, request_id: str, reason: str) -> list[Action]:
        """Tell the searcher a trial exited and record it."""
        self._record(_EXIT, request_id, reason=reason)
        return self.searcher.on_trial_exited(request_id, reason)

    def _record(self, kind: str, request_id: str, *, metric: float | None = None,
                time_units: float | None = None, reason: str | None = None) -> None:
        self.unsaved.append({"seq": self.journal_length + len(self.unsaved), "kind": kind,
                             "request_id": request_id, "metric": metric,
                             "time_units": time_units, "reason": reason})


def restore(session: Session, exp: Experiment) -> LiveSearcher:
    """The experiment's current searcher from the database: snapshot, then its journal."""
    searcher = build_searcher(exp.config, exp.searcher_state)
    entries = session.execute(
        select(SearcherJournalEntry.kind, SearcherJournalEntry.request_id,
               SearcherJournalEntry.metric, SearcherJournalEntry.time_units,
               SearcherJournalEntry.reason)
        .where(SearcherJournalEntry.experiment_id == exp.id)
        .order_by(SearcherJournalEntry.seq)).all()
    for kind, request_id, metric, time_units, reason in entries:
        if kind == _VALIDATION:  # both written with every validation entry
            searcher.on_validation(request_id, float(metric or 0.0), float(time_units or 0.0))
        else:
            searcher.on_trial_exited(request_id, str(reason))
    return LiveSearcher(searcher, exp.searcher_etag, journal_length=len(entries))


def current_state(session: Session, exp: Experiment) -> dict[str, Any] | None:
    """The searcher's state as of the last commit (its snapshot with the journal applied)."""
    if exp.searcher_state is None:
        return None
    has_journal = session.scalar(select(SearcherJournalEntry.id).where(
        SearcherJournalEntry.experiment_id == exp.id).limit(1))
    return restore(session, exp).searcher.to_state() if has_journal else exp.searcher_state


def save_snapshot(session: Session, exp: Experiment, searcher: Searcher) -> None:
    """Replace the experiment's saved searcher with ``searcher``'s whole state."""
    exp.searcher_state = searcher.to_state()
    exp.searcher_etag = secrets.token_hex(16)
    session.execute(delete(SearcherJournalEntry)
                    .where(SearcherJournalEntry.experiment_id == exp.id)
                    .execution_options(synchronize_session=False))


@dataclass
class SearcherStore:
    """Searchers kept in memory between cycles, and their saving.

    ``keep_in_memory=False`` restores every searcher from the database each cycle, and
    ``fold_every_cycle=True`` writes the whole snapshot each cycle: both together are the
    design before the journal (the benchmark's baseline).
    """

    keep_in_memory: bool = True
    fold_every_cycle: bool = False
    _held: dict[int, LiveSearcher] = field(default_factory=dict)

    def open(self, session: Session, exp: Experiment) -> LiveSearcher:
        """The experiment's searcher: the one in memory if still current, else restored."""
        held = self._held.pop(exp.id, None)  # out until saved: an exception drops it
        if held is not None and held.etag is not None and held.etag == exp.searcher_etag:
            return held
        return restore(session, exp)

    def save(self, session: Session, exp: Experiment, live: LiveSearcher) -> None:
        """Write what ``live`` absorbed (journal entries or a new snapshot); keep it in memory.

        It is kept under the new token: if the transaction rolls back, the database keeps
        the old token and the next cycle restores from there.
        """
        searcher, entries = live.searcher, live.unsaved
        live.unsaved = []
        if self.fold_every_cycle or searcher.is_complete() or \
                live.journal_length + len(entries) >= max(
                    FOLD_MIN_ENTRIES, len(searcher.requested) // FOLD_TRIALS_DIVISOR):
            save_snapshot(session, exp, searcher)
            live.journal_length = 0
        else:
            if entries:
                session.execute(insert(SearcherJournalEntry),
                                [{"experiment_id": exp.id, **e} for e in entries])
            live.journal_length += len(entries)
            exp.searcher_etag = secrets.token_hex(16)
        live.etag = exp.searcher_etag
        if self.keep_in_memory and not searcher.is_complete():
            self._held[exp.id] = live

    def held(self) -> list[int]:
        """The experiments whose searcher is in memory."""
        return sorted(self._held)

    def keep_only(self, experiment_ids: Sequence[int]) -> None:
        """Forget the searchers of every other experiment (ended, killed, deleted)."""
        wanted = set(experiment_ids)
        for exp_id in [e for e in self._held if e not in wanted]:
            del self._held[exp_id]
