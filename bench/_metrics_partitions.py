"""``bench/metrics_scale.py --partition-check``: would declarative partitioning help?

Copies the filled ``metrics`` table into ``metrics_part``, hash-partitioned by ``trial_id``
(P partitions, the primary key ``(id, trial_id)`` as a partitioned table needs, the same two
secondary indexes), and times the reads the pages make against both tables: the same SQL
text with only the table's name changed, 2 untimed and 9 timed runs each, medians. The copy
is dropped at the end.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from sqlalchemy import Engine, text

# (name, SQL with {t} for the table, which trial it reads: "long", "typical" or None).
QUERIES: list[tuple[str, str, str | None]] = [
    ("sampled series (2000 probes)", """
WITH RECURSIVE bucket(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM bucket WHERE i + 1 < 2000)
SELECT (SELECT MIN(m.steps_completed) FROM {t} m
        WHERE m.trial_id = :trial AND m."group" = 'training' AND m.name = 'loss'
          AND m.archived = false AND m.steps_completed >= 1 + i * :span / 2000)
FROM bucket""", "long"),
    ("bucket extremes (typical)", """
SELECT ((steps_completed - 1) * 2000) / :span AS b,
       min(ARRAY[value, steps_completed::float]), max(ARRAY[value, steps_completed::float]),
       count(*)
FROM {t} WHERE trial_id = :trial AND "group" = 'training' AND name = 'loss'
  AND archived = false GROUP BY 1""", "typical"),
    ("metric names (long)", """
WITH RECURSIVE found(name) AS (
  SELECT MIN(name) FROM {t} WHERE trial_id = :trial AND "group" = 'training'
    AND archived = false
  UNION ALL
  SELECT (SELECT MIN(m.name) FROM {t} m WHERE m.trial_id = :trial
            AND m."group" = 'training' AND m.archived = false AND m.name > found.name)
  FROM found WHERE found.name IS NOT NULL)
SELECT name FROM found WHERE name IS NOT NULL""", "long"),
    ("latest step (long)", """
SELECT max(steps_completed) FROM {t} WHERE trial_id = :trial AND "group" = 'training'
  AND archived = false""", "long"),
    ("validations, full (long)", """
SELECT * FROM {t} WHERE trial_id = :trial AND archived = false AND "group" = 'validation'
ORDER BY "group", steps_completed, id""", "long"),
    ("experiment series", """
SELECT m.trial_id, m.steps_completed, m.value FROM {t} m JOIN trials t ON t.id = m.trial_id
WHERE t.experiment_id = :exp AND m."group" = 'validation' AND m.name = 'validation_loss'
  AND m.archived = false ORDER BY m.trial_id, m.steps_completed, m.id""", None),
    ("GC validations (a search)", """
SELECT trial_id, steps_completed, value FROM {t}
WHERE trial_id IN (SELECT id FROM trials WHERE experiment_id = :exp)
  AND "group" = 'validation' AND name = 'validation_loss' AND archived = false""", None),
]


def partition_check(engine: Engine, ids: dict[str, int], partitions: int,
                    log: Any) -> dict[str, Any]:
    """Build the partitioned copy, time both tables, drop the copy; the figures."""
    started = time.perf_counter()
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        log(f"partition check: copying metrics into {partitions} hash partitions")
        _create_copy(conn, partitions)
        copy_s = time.perf_counter() - started
        sizes = {table: int(conn.scalar(text(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "WHERE c.oid = CAST(:t AS regclass) OR c.oid IN "
            "(SELECT inhrelid FROM pg_inherits WHERE inhparent = CAST(:t AS regclass))"),
            {"t": table}) or 0) for table in ("metrics", "metrics_part")}
        try:
            rows = [_compare(conn, name, sql, ids, which) for name, sql, which in QUERIES]
        finally:
            conn.execute(text("DROP TABLE IF EXISTS metrics_part"))
    return {"partitions": partitions, "copy_s": copy_s, "bytes": sizes, "queries": rows}


def _create_copy(conn: Any, partitions: int) -> None:
    conn.execute(text("DROP TABLE IF EXISTS metrics_part"))
    conn.execute(text("CREATE TABLE metrics_part (LIKE metrics INCLUDING DEFAULTS) "
                      "PARTITION BY HASH (trial_id)"))
    for index in range(partitions):
        conn.execute(text(f"CREATE TABLE metrics_part_{index} PARTITION OF metrics_part "
                          f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {index})"))
    conn.execute(text("INSERT INTO metrics_part SELECT * FROM metrics"))
    conn.execute(text("ALTER TABLE metrics_part ADD PRIMARY KEY (id, trial_id)"))
    conn.execute(text('CREATE INDEX ON metrics_part (trial_id, "group", steps_completed)'))
    conn.execute(text('CREATE INDEX ON metrics_part (trial_id, "group", name, archived, '
                      "steps_completed, value)"))
    conn.execute(text("VACUUM ANALYZE metrics_part"))


def _compare(conn: Any, name: str, sql: str, ids: dict[str, int],
             which: str | None) -> dict[str, Any]:
    trial = ids["long_trial"] if which == "long" else ids["typical_trial"]
    params = {"trial": trial, "exp": ids["last_exp"], "span": 200_000}
    out: dict[str, Any] = {"name": name}
    for table in ("metrics", "metrics_part"):
        statement = text(sql.format(t=table))
        for _ in range(2):
            conn.execute(statement, params).all()
        walls = []
        for _ in range(9):
            started = time.perf_counter()
            conn.execute(statement, params).all()
            walls.append(time.perf_counter() - started)
        out[f"{table}_ms"] = statistics.median(walls) * 1e3
    return out


def render(check: dict[str, Any]) -> list[str]:
    """The check's table."""
    sizes = check["bytes"]
    lines = ["", f"## partition check: metrics vs {check['partitions']} hash partitions by "
                 f"trial_id (copy {check['copy_s']:.0f} s; {sizes['metrics'] / 1e9:.2f} GB "
                 f"vs {sizes['metrics_part'] / 1e9:.2f} GB)",
             f"{'query':<32} {'plain ms':>9} {'partitioned ms':>15}"]
    lines += [f"{q['name']:<32} {q['metrics_ms']:>9.2f} {q['metrics_part_ms']:>15.2f}"
              for q in check["queries"]]
    return lines
