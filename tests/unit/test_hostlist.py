"""Slurm hostlist expansion."""

from __future__ import annotations

import pytest

from hpcdet.hostlist import expand_nodelist, first_host


@pytest.mark.parametrize(
    ("nodelist", "hosts"),
    [
        ("node1", ["node1"]),
        ("x,y", ["x", "y"]),
        ("a[1-3,5]", ["a1", "a2", "a3", "a5"]),
        ("gpu-[01-04]", ["gpu-01", "gpu-02", "gpu-03", "gpu-04"]),
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("n[098-101]", ["n098", "n099", "n100", "n101"]),
        ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
        ("a[1-2],b[3]", ["a1", "a2", "b3"]),
        ("node[1-2],login,gpu-[07]", ["node1", "node2", "login", "gpu-07"]),
        ("", []),
    ],
)
def test_expand_nodelist(nodelist: str, hosts: list[str]) -> None:
    assert expand_nodelist(nodelist) == hosts


def test_first_host_is_rank_zero_node() -> None:
    assert first_host("gpu-[03-04],cpu1") == "gpu-03"


def test_first_host_of_empty_list_is_an_error() -> None:
    with pytest.raises(ValueError, match="empty node list"):
        first_host("")


@pytest.mark.parametrize(
    "nodelist", ["a[1-2", "a1-2]", "a[[1]]", "a[x]", "a[3-1]", "a,,b", "a[]", "a[1-]"]
)
def test_malformed_nodelist_is_refused(nodelist: str) -> None:
    with pytest.raises(ValueError, match="malformed node list"):
        expand_nodelist(nodelist)
