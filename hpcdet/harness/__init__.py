"""The in-job harness: what ``srun`` starts on every rank (``python -m hpcdet.harness``).

It reads ``trial.json`` (:mod:`~hpcdet.harness.trial_info`), works out this rank's place
from Slurm's variables (:mod:`~hpcdet.harness.cluster_env`), joins ``torch.distributed``
(:mod:`~hpcdet.harness.distributed`) and runs the experiment's entrypoint
(:mod:`~hpcdet.harness.entrypoint`); :mod:`~hpcdet.harness.main` ties these together.

This package imports neither torch nor the master: it must load in any training image.
Submodules are not imported here, so ``hpcdet.core`` can use the light ones without
pulling in the rest.
"""
