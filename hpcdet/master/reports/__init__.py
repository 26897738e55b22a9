"""What running trials report: metrics, checkpoints, logs and log policies, and their effects."""
