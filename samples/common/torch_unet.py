"""The model and data of the PyTorch samples that train a UNet (premature-free,
unsynced-transfer, pageable-async-copy, scalar-indexing): a UNet of depth 2
with BatchNorm and ReLU, and noisy images with one bright disc each, drawn
the same on every run so that a sample's fixed twin trains on exactly the
data its buggy twin does.
And larger_model_work(), which keeps the GPU behind the host as a real model
does.
"""
import torch
import torch.nn.functional as F
from torch import nn


def larger_model_work(ms):
    """Queues about `ms` milliseconds of GPU work on the current stream: the
    layers of a model large enough that the GPU, not the host, sets the pace.
    This small UNet is launch-bound on a fast GPU (an H200 runs each step
    before the host has queued the next), and the mistakes these samples make
    only do harm while work is queued."""
    torch.cuda._sleep(int(ms * 2_000_000))  # cycles, at about 2 GHz


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):  # depth 2
    def __init__(self, base=32):
        super().__init__()
        self.enc1, self.enc2, self.mid = block(3, base), block(base, 2 * base), block(2 * base, 4 * base)
        self.up2, self.dec2 = nn.ConvTranspose2d(4 * base, 2 * base, 2, stride=2), block(4 * base, 2 * base)
        self.up1, self.dec1 = nn.ConvTranspose2d(2 * base, base, 2, stride=2), block(2 * base, base)
        self.head = nn.Conv2d(base, 1, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
        return self.head(self.dec1(torch.cat([self.up1(d2), e1], 1)))


def synthetic_shapes(count, size, seed):
    """Noisy images with a bright disc each, and the discs' masks."""
    g = torch.Generator().manual_seed(seed)
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    cx, cy, r = torch.rand(3, count, 1, 1, generator=g) * torch.tensor([size, size, 0.25 * size]).view(3, 1, 1, 1)
    masks = ((xx - cx) ** 2 + (yy - cy) ** 2 < (r + 0.1 * size) ** 2).float().unsqueeze(1)
    images = 0.2 + 0.6 * masks.expand(-1, 3, -1, -1) + 0.3 * torch.rand(count, 3, size, size, generator=g)
    return images, masks
