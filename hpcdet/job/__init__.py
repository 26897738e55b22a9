"""What a job knows about itself: the bottom of the in-job stack.

``trial.json`` (:mod:`~hpcdet.job.trial_info`), this rank's place in the job
(:mod:`~hpcdet.job.cluster_env`, from the variables each rank launcher sets:
:mod:`~hpcdet.job.rank_env`), the ``torch.distributed`` process group the ranks share
(:mod:`~hpcdet.job.process_group`), the early-exit vocabulary
(:mod:`~hpcdet.job.early_exit`), post-import hooks (:mod:`~hpcdet.job.import_hooks`) and
the secret files the master writes into the job directory (:mod:`~hpcdet.job.secret_file`).

The Core API (:mod:`hpcdet.core`), the trial APIs (:mod:`hpcdet.pytorch`) and the entry
points (:mod:`hpcdet.harness`, :mod:`hpcdet.launch`) build on these; this package imports
none of them (an import contract in ``pyproject.toml`` keeps it so). It imports neither
torch nor the master, and nothing is imported here: ``import hpcdet`` and the master use
:mod:`~hpcdet.job.early_exit` without loading the rest.
"""
