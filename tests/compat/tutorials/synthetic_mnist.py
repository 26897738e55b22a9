"""Synthetic stand-in for ``torchvision.datasets.MNIST``, for the compat tier's tutorials.

The tests cannot download MNIST (no network on the cluster nodes), so the tutorials'
dataset lines call :class:`MNIST` here instead: the same constructor, the same item shape
(a 28x28 ``uint8`` image passed through the tutorial's own ``transform``, and an ``int``
label 0-9), but few samples, so a run takes seconds. The images are learnable: each
class is a fixed random pattern plus noise, so a tutorial's loss goes down as with MNIST.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

TRAIN_SIZE = 256
TEST_SIZE = 128
_CLASSES = 10


class MNIST:
    """``datasets.MNIST(root, train=..., transform=..., download=...)``, generated in memory.

    ``root`` and ``download`` are accepted and ignored; the same ``train`` flag always
    gives the same samples (fixed seeds), on every rank and node.
    """

    def __init__(self, root: str = "", train: bool = True,
                 transform: Callable[[Any], Any] | None = None,
                 target_transform: Callable[[Any], Any] | None = None,
                 download: bool = False) -> None:
        size = TRAIN_SIZE if train else TEST_SIZE
        patterns = np.random.default_rng(0).integers(0, 256, (_CLASSES, 28, 28))
        rng = np.random.default_rng(1 if train else 2)
        self.targets = rng.integers(0, _CLASSES, size)
        noise = rng.integers(-60, 61, (size, 28, 28))
        self.data = np.clip(patterns[self.targets] + noise, 0, 255).astype(np.uint8)
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        image: Any = self.data[index]
        target: Any = int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target
