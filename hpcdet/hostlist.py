"""Slurm hostlist expressions (``gpu-[01-04]``, ``rack[1-2]-n[1-2],login``) to host names.

Shared by the harness (``SLURM_STEP_NODELIST``: the first host is the rendezvous address),
the dispatcher and the master (the node lists ``squeue``/``sacct`` report, pools carved
with ``--nodelist``). Pure Python, so it works where ``scontrol show hostnames`` is not
installed.
"""

from __future__ import annotations

import itertools
import re

# One bracket group, e.g. "[01-04,7]"; the split keeps it as its own piece.
_GROUP = re.compile(r"(\[[^\[\]]*\])")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def expand_nodelist(nodelist: str) -> list[str]:
    """Expand a Slurm hostlist into host names, in Slurm's order.

    ``"a[1-3,5]"`` gives ``a1 a2 a3 a5``; zero padding is kept (``gpu-[01-02]`` gives
    ``gpu-01 gpu-02``); several bracket groups in one name expand as a product with the
    last group varying fastest, as Slurm does. An empty string gives ``[]``. Raises
    :class:`ValueError` on malformed input such as unbalanced brackets.
    """
    hosts: list[str] = []
    for item in _split_top_level(nodelist.strip(), nodelist):
        hosts.extend(_expand_item(item, nodelist))
    return hosts


def first_host(nodelist: str) -> str:
    """The first host of a hostlist (the rank-0 node); ValueError if the list is empty."""
    hosts = expand_nodelist(nodelist)
    if not hosts:
        raise ValueError("empty node list: no first host")
    return hosts[0]


def _split_top_level(text: str, original: str) -> list[str]:
    """Split at the commas that are outside brackets."""
    if not text:
        return []
    items: list[str] = []
    depth = start = 0
    for index, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth not in (0, 1):
            raise ValueError(f"malformed node list {original!r}: unbalanced or nested brackets")
        if char == "," and depth == 0:
            items.append(text[start:index])
            start = index + 1
    if depth:
        raise ValueError(f"malformed node list {original!r}: unbalanced brackets")
    items.append(text[start:])
    return items


def _expand_item(item: str, original: str) -> list[str]:
    """Expand one comma-free host expression such as ``rack[1-2]-n[01-02]``."""
    if not item:
        raise ValueError(f"malformed node list {original!r}: empty host name")
    choices = [
        _expand_group(piece[1:-1], original) if piece.startswith("[") else [piece]
        for piece in _GROUP.split(item)
    ]
    return ["".join(parts) for parts in itertools.product(*choices)]


def _expand_group(body: str, original: str) -> list[str]:
    """Expand the inside of one bracket group, e.g. ``01-04,7``."""
    values: list[str] = []
    for part in body.split(","):
        match = _RANGE.match(part)
        if match is None:
            raise ValueError(f"malformed node list {original!r}: bad range {part!r}")
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low):
            raise ValueError(f"malformed node list {original!r}: range {part!r} runs backwards")
        values.extend(str(n).zfill(len(low)) for n in range(int(low), int(high) + 1))
    return values
