"""Seed rows for the records tests (tests/web/test_chromium_records.py): a finished single-trial
experiment whose checkpoints have files in its checkpoint storage, and a long log."""

from __future__ import annotations

import datetime as dt
import uuid as uuid_lib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.master.models import Checkpoint, Experiment, Trial, TrialLog

START = dt.datetime(2026, 11, 26, 9, 0, 0, tzinfo=dt.timezone.utc)
FILLER = 300  # more lines than the page shows (200), so a search must go to the server
NEEDLE = "Boom: the needle line"  # early in the log: only a server-side search finds it


@dataclass
class Seeded:
    exp_id: int
    trial_id: int
    deleted: str  # uuid of the DELETED checkpoint (no files)
    best: str  # the ACTIVE checkpoint with the best validation_loss
    latest: str  # the ACTIVE checkpoint with the most steps
    log_lines: int


def records_config(storage: Path) -> dict[str, Any]:
    """A single-trial experiment's config whose checkpoints live under ``storage``."""
    return {"name": "records <b>demo</b>", "entrypoint": "python3 train.py",
            "searcher": {"name": "single", "metric": "validation_loss",
                         "smaller_is_better": True, "max_length": {"batches": 300}},
            "hyperparameters": {"lr": {"type": "const", "val": 0.01}},
            "resources": {"slots_per_trial": 1},
            "checkpoint_storage": {"type": "shared_fs", "host_path": str(storage)}}


def _files(storage: Path, uuid: str, step: int) -> dict[str, int]:
    """Checkpoint files on disk; the sizes the harness would report."""
    root = storage / uuid
    (root / "state").mkdir(parents=True)
    (root / "state" / "model.bin").write_bytes(bytes(range(256)) * (40 + step))
    (root / "metadata.json").write_text(f'{{"steps_completed": {step}}}\n')
    return {path.relative_to(root).as_posix(): path.stat().st_size
            for path in root.rglob("*") if path.is_file()}


def seed_records(sessions: Callable[[], Session], storage: Path) -> Seeded:
    """The experiment, its trial, three checkpoints (one deleted) and the log."""
    ids = [str(uuid_lib.uuid4()) for _ in range(3)]
    deleted, best, latest = ids
    with sessions() as session, session.begin():
        exp = Experiment(name="records <b>demo</b>", owner="tester", state="COMPLETED",
                         config=records_config(storage), original_config="", context=b"",
                         searcher_name="single", progress=1.0, created_at=START,
                         ended_at=START + dt.timedelta(hours=1))
        session.add(exp)
        session.flush()
        trial = Trial(experiment_id=exp.id, state="COMPLETED", hparams={"lr": 0.01}, seed=7,
                      token="t", steps_completed=300, created_at=START,
                      ended_at=START + dt.timedelta(hours=1), latest_checkpoint=latest,
                      best_validation={"steps_completed": 200,
                                       "metrics": {"validation_loss": 0.2}})
        session.add(trial)
        session.flush()
        session.add_all([
            Checkpoint(uuid=deleted, trial_id=trial.id, steps_completed=100, state="DELETED",
                       resources={"state/model.bin": 35840},
                       validation_metrics={"validation_loss": 0.5},
                       reported_at=START + dt.timedelta(minutes=10)),
            Checkpoint(uuid=best, trial_id=trial.id, steps_completed=200,
                       resources=_files(storage, best, 200),
                       validation_metrics={"validation_loss": 0.2, "accuracy": 0.9},
                       reported_at=START + dt.timedelta(minutes=20)),
            Checkpoint(uuid=latest, trial_id=trial.id, steps_completed=300,
                       resources=_files(storage, latest, 300),
                       validation_metrics={"validation_loss": 0.3, "accuracy": 0.88},
                       reported_at=START + dt.timedelta(minutes=30))])
        lines = _log_rows(trial.id)
        session.add_all(lines)
        return Seeded(exp.id, trial.id, deleted, best, latest, len(lines))


def _log_rows(trial_id: int) -> list[TrialLog]:
    """Harness INFO lines on stderr (normal), one WARNING, one ERROR, stdout filler."""
    texts = [("stderr", "INFO: harness starting rank 0"), ("stdout", NEEDLE.lower()),
             ("stderr", "WARNING: slow data loader"), ("stderr", "INFO: <script>x</script>")]
    texts += [("stdout", f"step {i} loss {1 / (i + 1):.4f}") for i in range(FILLER)]
    texts += [("stderr", "ERROR: checkpoint upload failed, retrying"),
              ("stderr", "INFO: harness done")]
    return [TrialLog(trial_id=trial_id, job_id="1", rank=0, node="node1", stream=stream,
                     line=text, at=START + dt.timedelta(seconds=i))
            for i, (stream, text) in enumerate(texts)]
