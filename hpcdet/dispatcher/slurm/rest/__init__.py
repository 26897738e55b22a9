"""Slurm through slurmrestd: the same backend as the CLI one, its commands made requests.

``resource_manager.transport: {type: rest, ...}`` (docs/admin/slurmrestd.md). The client
(:mod:`.client`) speaks slurmrestd's OpenAPI with JWTs (:mod:`.tokens`); the backend
(:mod:`.backend`) overrides only :class:`~hpcdet.dispatcher.slurm.backend.SlurmBackend`'s
command seams, reading replies with :mod:`.records` and translating a rendered script's
``#SBATCH`` lines (which slurmrestd does not read) into a job description (:mod:`.submit`).
"""
