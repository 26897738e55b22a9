"""The in-job harness: what ``srun`` starts on every rank (``python -m hpcdet.harness``).

It reads ``trial.json`` (:mod:`hpcdet.job.trial_info`), works out this rank's place
from Slurm's variables (:mod:`hpcdet.job.cluster_env`), joins ``torch.distributed``
(:mod:`hpcdet.job.process_group`) and runs the experiment's entrypoint
(:mod:`~hpcdet.harness.entrypoint`); :mod:`~hpcdet.harness.main` ties these together.
Local runs (:mod:`~hpcdet.harness.local`) and the shell service
(:mod:`~hpcdet.harness.shell_service`) are entry points too.

The harness is the top of the in-job stack: it may import :mod:`hpcdet.pytorch`,
:mod:`hpcdet.core` and :mod:`hpcdet.job`, and none of them imports it.

This package imports neither torch nor the master: it must load in any training image.
Submodules are not imported here.
"""
