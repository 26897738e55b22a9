"""What each rank launcher tells a rank about its place in the job: its variables.

(Named for the rank's environment, not for :mod:`hpcdet.launch`, the launcher commands.)

One module per family of launcher variables, each answering a :class:`Placement` (or
``None`` when its variables are absent): :mod:`.slurm` (``srun``), :mod:`.mpi`
(``mpiexec``/``mpirun`` of Open MPI, MPICH/Hydra or a PMIx launcher, e.g. under PBS) and
:mod:`.mpi_world`, which asks MPI itself (mpi4py) for what the variables leave open.
:class:`hpcdet.job.cluster_env.ClusterEnv` picks among them.
"""
