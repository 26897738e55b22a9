"""What running trials report (metrics, checkpoints, logs, log policies) and their effects;
and how long metric series are read back for the charts (downsample)."""
