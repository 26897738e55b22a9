"""The master's scheduler-neutral batch-argument calls (hpcdet.dispatcher.batch_args) on PBS."""

from __future__ import annotations

import pytest

from hpcdet.dispatcher.batch_args import check_args, node_filter, split_cpus_per_rank
from hpcdet.errors import ConfigError


def test_check_args_passes_allowed_options_and_names_the_path_of_a_refused_one() -> None:
    assert check_args("pbs", ["-l mem=4gb", "-m abe"], "<config>.pbs.pbsbatch_args") == (
        "-l mem=4gb", "-m abe")
    with pytest.raises(ConfigError) as caught:
        check_args("pbs", ["-l mem=4gb", "-l walltime=01:00:00"], "<config>.pbs.pbsbatch_args")
    assert any(e.startswith("<config>.pbs.pbsbatch_args[1]: option -l walltime")
               for e in caught.value.errors), caught.value.errors


def test_every_rank_gets_one_cpu_and_no_option_carves_nodes() -> None:
    assert split_cpus_per_rank("pbs", ["-l mem=4gb"], "p") == (1, ("-l mem=4gb",))
    with pytest.raises(ConfigError):
        split_cpus_per_rank("pbs", ["-l ncpus=4"], "p")
    assert node_filter("pbs", ["-l mem=4gb"]) == (None, set())
