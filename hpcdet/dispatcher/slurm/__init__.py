"""Slurm: job scripts, sbatch/squeue/sacct/scontrol/sinfo/sacctmgr, and det sbatch's parsing."""
