"""Launchers an ``entrypoint`` may name: ``python3 -m hpcdet.launch.torch_distributed``.

Determined's ``determined.launch.*`` modules start the worker processes themselves; in
hpcdet, ``srun`` has already started one rank per slot, so a launcher only says *what*
each rank runs. See :mod:`hpcdet.launch.torch_distributed`.
"""
