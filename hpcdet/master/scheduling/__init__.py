"""Trials and command tasks become batch jobs and back: job specs, placement, submission, and
the reconciler that polls the scheduler and classifies how each job ended (job_outcomes),
and records how its cycles go (health: the master's health banner, API and det warning)."""
