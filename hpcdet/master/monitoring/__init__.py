"""The master's Prometheus metrics (``GET /metrics``; docs/admin/metrics.md).

Two kinds, because a scrape reaches one process of several (gunicorn's workers and the
reconciler): what happens in a process (reconciler cycles, scheduler commands, ingest
batches, proxy connections, database pool checkouts) is counted in :mod:`.instruments`, in
prometheus_client's multiprocess mode when the master runs (:mod:`.multiproc`), so every
process's counts are summed in each answer; what is a state of the database (experiments
and trials by state, jobs by scheduler state and pool, queue depths and waits) is read at
scrape time by :mod:`.database`, a few GROUP BY queries, the same in every worker.
"""
