"""Experiments: their lifecycle, hyperparameter searches and listings."""
