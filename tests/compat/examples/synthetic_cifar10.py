"""Synthetic stand-in for ``torchvision.datasets.CIFAR10``, for the compat tier's examples.

The cluster nodes cannot download CIFAR-10, so the batch-inference example's dataset line
calls :class:`CIFAR10` here instead (inside its ``hpcdet-compat: synthetic data`` region):
the same constructor, the same item shape (a 32x32x3 ``uint8`` image passed through the
example's own ``transform``, and an ``int`` label 0-9), but :data:`TEST_SIZE` records: 11
batches of 200, so that 2 ranks get 6 and 5 of them. Fixed seeds: every rank and node,
and the test reading the outputs, see the same records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

TRAIN_SIZE = 2000
TEST_SIZE = 2200
_CLASSES = 10


class CIFAR10:
    """``datasets.CIFAR10(root, train=..., transform=..., download=...)``, in memory.

    ``root`` and ``download`` are accepted and ignored.
    """

    def __init__(self, root: str = "", train: bool = True,
                 transform: Callable[[Any], Any] | None = None,
                 target_transform: Callable[[Any], Any] | None = None,
                 download: bool = False) -> None:
        size = TRAIN_SIZE if train else TEST_SIZE
        rng = np.random.default_rng(1 if train else 2)
        self.targets = [int(t) for t in rng.integers(0, _CLASSES, size)]
        self.data = rng.integers(0, 256, (size, 32, 32, 3), dtype=np.uint8)
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        image: Any = self.data[index]
        target: Any = self.targets[index]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target
