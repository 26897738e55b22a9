"""A gradient all-reduce whose result does not depend on how DDP buckets the gradients.

Floating-point sums depend on their order. gloo's ring all-reduce adds the ranks'
values in an order set by where each element falls in its bucket, and DDP rebuilds its
buckets after the first iteration of every process, so the first iteration after a
resume reduces in a different order than the same iteration of an uninterrupted run:
with more than two ranks the weights then drift apart in the last bits. (Two values add
the same either way, so two ranks are unaffected.) This hook gathers every rank's bucket
and adds them in rank order, the same order every time: bit-identical resumes on CPU, at
the cost of moving each bucket ``world_size`` times instead of about twice.

No ``from __future__ import annotations`` here: DDP checks the hook's annotations.
"""

import os

import torch
import torch.distributed as dist
from torch import nn
from torch._C._distributed_c10d import GradBucket

DISABLE_VARIABLE = "HPCDET_DETERMINISTIC_ALLREDUCE"


def rank_ordered_mean(state: object, bucket: GradBucket) -> torch.futures.Future[torch.Tensor]:
    """The mean of the ranks' gradients, summed in rank order (a DDP comm hook)."""
    tensor = bucket.buffer()
    world = dist.get_world_size()
    parts = [torch.empty_like(tensor) for _ in range(world)]
    gathered = dist.all_gather(parts, tensor, async_op=True).get_future()

    def mean(_: torch.futures.Future[object]) -> torch.Tensor:
        total = parts[0].clone()
        for part in parts[1:]:
            total += part
        return total.div_(world)

    result: torch.futures.Future[torch.Tensor] = gathered.then(mean)
    return result


def wants_ordered_allreduce(device: torch.device) -> bool:
    """On CPU with more than two ranks, unless ``HPCDET_DETERMINISTIC_ALLREDUCE=0``."""
    enabled = os.environ.get(DISABLE_VARIABLE, "1") != "0"
    return enabled and device.type == "cpu" and dist.get_world_size() > 2


def make_ddp(model: nn.Module, device: torch.device) -> nn.parallel.DistributedDataParallel:
    """Wrap ``model`` in DDP, with the rank-ordered all-reduce where it is wanted."""
    device_ids = [device] if device.type == "cuda" else None
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
    if wants_ordered_allreduce(device):
        ddp.register_comm_hook(None, rank_ordered_mean)
    return ddp
