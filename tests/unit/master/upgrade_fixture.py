"""The oldest released schema's database (tests/data/upgrade/, made from the git history by
scripts/make-upgrade-fixture), loaded as its code wrote it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "upgrade"
STEM = "schema-0001-9a2c6eb"
# The uuids of its four checkpoints (trials 1, 4, 5 and 6; uuid.UUID(int=trial id)).
CHECKPOINTS = [f"00000000-0000-0000-0000-00000000000{n}" for n in (1, 4, 5, 6)]


def load_fixture(url: str, job_root: Path) -> None:
    """Write the old database: the SQLite dump, or pg_dump's script, run as it is; the job
    directories (and the checkpoint storage) of its rows lie under ``job_root``."""
    kind = "sqlite" if url.startswith("sqlite") else "postgresql"
    script = (FIXTURES / f"{STEM}.{kind}.sql").read_text().replace("@JOB_ROOT@", str(job_root))
    if kind == "sqlite":
        connection = sqlite3.connect(url.split("///", 1)[1])
        connection.executescript(script)
        connection.close()
        return
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql(script.replace("%", "%%"))
    engine.dispose()
