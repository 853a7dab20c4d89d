#!/usr/bin/env python3
"""Healthy: after each epoch, the validation set under torch.no_grad() in
eval mode, its Dice score summed on the device and read once."""
import torch

from healthy_loop import UNet, dataset, done, loader, options, train_step, training


def validate(args, model, val_loader):
    model.eval()
    dice, count = torch.zeros((), device=args.dev), 0
    with torch.no_grad():
        for images, masks in val_loader:
            images, masks = images.to(args.dev, non_blocking=True), masks.to(args.dev, non_blocking=True)
            pred = (model(images) > 0).float()
            dice += (2 * (pred * masks).sum() / (pred.sum() + masks.sum() + 1e-6))
            count += 1
    model.train()
    return dice.item() / count


def main():
    args = options(__doc__)
    model = UNet().to(args.dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    train_loader = loader(args, dataset(256))
    val_loader = loader(args, dataset(64))
    for step, images, masks in training(args, train_loader):
        loss = train_step(model, opt, images, masks)
        if step % args.epoch == args.epoch - 1:
            print(f"epoch {step // args.epoch} loss {loss.item():.4f} "
                  f"val dice {validate(args, model, val_loader):.3f}")
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
