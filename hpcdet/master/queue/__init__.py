"""The cluster as users see it: resource pools, the job queue, job updates, fair share."""
