"""``log_policies`` are acted on by the master now, so they are no longer warned about."""

from __future__ import annotations

from hpcdet.expconf import NOT_YET_ACTED_ON, warnings_for


def test_log_policies_are_not_warned_about() -> None:
    doc = {"log_policies": [{"name": "oom", "pattern": "CUDA out of memory",
                             "action": "exclude_node"},
                            {"pattern": "NCCL", "action": {"type": "cancel_retries"}}],
           "records_per_epoch": 10}
    assert "log_policies" not in NOT_YET_ACTED_ON
    assert warnings_for(doc) == [
        "<config>.records_per_epoch: accepted but not acted on by this version of hpcdet"]
