"""Launchers an ``entrypoint`` (or a script) may name: ``python3 -m
hpcdet.launch.torch_distributed`` and ``python3 -m hpcdet.launch.wrap_rank``.

Determined's ``determined.launch.*`` modules start the worker processes themselves; in
hpcdet, ``srun`` has already started one rank per slot, so a launcher only says *what*
each rank runs. See :mod:`hpcdet.launch.torch_distributed`.
"""
