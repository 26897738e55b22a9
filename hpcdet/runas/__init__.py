"""The run-as-owner helper (``helper.py``), installed by root as ``hpcdet-runas``.

Nothing in hpcdet imports the helper at run time: the master starts it through ``sudo``
(see :mod:`hpcdet.dispatcher.runas`). It lives in the package so that tests and the install
script find it. ``directives.py``, the batch-directive reader it loads from beside itself
(installed as ``hpcdet-runas-directives.py``), is imported by the master's det sbatch and
det qsub readers too: one reading of a script's directives for both.
"""
