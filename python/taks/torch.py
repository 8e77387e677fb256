"""A PyTorch sampler over a :class:`taks.Selector`'s current k-set. Importing this
module imports torch; ``import taks`` alone does not.

    sampler = KSetSampler(selector)
    loader = DataLoader(train_set, batch_size=128, sampler=sampler)
    for epoch in range(epochs):
        for x, y in loader:          # the k samples the selector chose, shuffled
            ...
        selector.step(logits_of_every_sample)   # the next epoch's k-set
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import Sampler

from ._selector import Selector


class KSetSampler(Sampler[int]):
    """Yields the indices of ``selector``'s current k-set, in a fresh random order each
    pass when ``shuffle`` (drawn from ``generator``), else ascending. Each pass reads
    the set anew, so a loader built once follows every :meth:`Selector.step`."""

    def __init__(self, selector: Selector, *, shuffle: bool = True, generator: torch.Generator | None = None) -> None:
        self.selector = selector
        self.shuffle = shuffle
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        indices = torch.from_numpy(self.selector.indices)
        if self.shuffle:
            indices = indices[torch.randperm(len(indices), generator=self.generator)]
        return iter(indices.tolist())

    def __len__(self) -> int:
        return self.selector.k
