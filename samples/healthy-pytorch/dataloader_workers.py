#!/usr/bin/env python3
"""Healthy: a DataLoader with 4 worker processes that augment each image
(a random flip), its batches pinned by the loader's pin-memory thread and
copied with non_blocking=True."""
import torch
from torch.utils.data import Dataset

from healthy_loop import UNet, dataset, done, loader, log, options, train_step, training


class Flipped(Dataset):
    """The images and masks, each flipped left-right at random in the worker."""

    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        image, mask = self.data[i]
        if torch.rand(()) < 0.5:
            image, mask = image.flip(-1), mask.flip(-1)
        return image, mask


def main():
    args = options(__doc__)
    model = UNet().to(args.dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    data = loader(args, Flipped(dataset()), num_workers=4, persistent_workers=True, prefetch_factor=4)
    for step, images, masks in training(args, data):
        log(step, train_step(model, opt, images, masks))
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
