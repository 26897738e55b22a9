"""TensorBoard over the metrics the master stores (``det tensorboard``; docs/tensorboard.md).

A TensorBoard task's job runs ``python -m hpcdet.tensorboard``: it reads the trials'
training and validation metrics from the master's REST API as the task's owner
(:mod:`.source`), writes them as TensorBoard event files, one run directory per trial
(:mod:`.events`, :mod:`.sync`), and keeps doing so every few seconds for what is new while
``tensorboard`` serves them under ``/proxy/<task id>/`` (:mod:`.serve`), only to requests
carrying the task's secret as the master's proxy sends them (:mod:`.guard`). Like the CLI and
the harness it talks to the master over HTTP only and never imports ``hpcdet.master``.
"""
