"""The old databases the upgrade test starts from (tests/data/upgrade/, made from the git
history by scripts/make-upgrade-fixture), loaded as their code wrote them."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "upgrade"


@dataclass(frozen=True)
class Fixture:
    """One fixture: the schema revision its commit wrote, and what it holds beyond the six
    experiments both have."""

    revision: str
    commit: str
    # Where its experiments are: (workspace, project) names, or None (older than 0007).
    workspace: tuple[str, str] | None
    # Whether it holds a model registry, command tasks, a notebook and an API token.
    registry_and_tasks: bool

    @property
    def stem(self) -> str:
        return f"schema-{self.revision}-{self.commit}"


# 0001: the oldest released schema (9a2c6eb, the first commit whose master runs).
OLDEST = Fixture("0001", "9a2c6eb", None, False)
# 0015: the last commit before 0016 (dcd3ab7): workspaces, models, commands, notebooks, tokens.
WITH_REGISTRY = Fixture("0015", "dcd3ab7", ("research", "vision"), True)
ALL = [OLDEST, WITH_REGISTRY]
# The uuids of OLDEST's four checkpoints (trials 1, 4, 5 and 6; uuid.UUID(int=trial id)).
CHECKPOINTS = [f"00000000-0000-0000-0000-00000000000{n}" for n in (1, 4, 5, 6)]


def load_fixture(url: str, job_root: Path, fixture: Fixture = OLDEST) -> None:
    """Write the old database: the SQLite dump, or pg_dump's script, run as it is; the job
    directories (and the checkpoint storage) of its rows lie under ``job_root``."""
    kind = "sqlite" if url.startswith("sqlite") else "postgresql"
    script = (FIXTURES / f"{fixture.stem}.{kind}.sql").read_text() \
        .replace("@JOB_ROOT@", str(job_root))
    if kind == "sqlite":
        connection = sqlite3.connect(url.split("///", 1)[1])
        connection.executescript(script)
        connection.close()
        return
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(script.replace("%", "%%"))
    engine.dispose()
