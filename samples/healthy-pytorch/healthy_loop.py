"""What the healthy PyTorch samples share: the command line, the model, the
data, and the profiler.

Each sample is one idiom of a training loop that people really write and
that costs nothing worth a warning. Run one as it is (on the GPU), under
`gpudiag trace -- python3 <sample>.py`, or with `--profile trace.json` to
record its steps with torch.profiler (Kineto's JSON, which `gpudiag report`
reads). `--device cpu` runs it on the CPU, to check that it runs at all.
Where CUDA was asked for and PyTorch sees no GPU, a sample says so and exits
with 3.
"""
import argparse
import contextlib
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from torch_unet import UNet, synthetic_shapes  # noqa: E402


def options(description, steps=60):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--steps", type=int, default=steps, help="training steps in all")
    parser.add_argument("--profile", metavar="TRACE_JSON", help="record steps 3-6 with torch.profiler into this file")
    parser.add_argument("--epoch", type=int, default=16, metavar="STEPS",
                        help="steps an epoch (what is done once an epoch is done after this many)")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device available to PyTorch")
        sys.exit(3)
    torch.manual_seed(0)
    args.dev = torch.device(args.device)
    return args


def dataset(count=256, size=128):
    images, masks = synthetic_shapes(count, size, 1)
    return TensorDataset(images, masks)


def loader(args, data, batch_size=16, **kwargs):
    """Batches as most programs load them: shuffled, pinned where they go to a GPU."""
    return DataLoader(data, batch_size=batch_size, shuffle=True, drop_last=True,
                      pin_memory=args.device == "cuda", **kwargs)


def training(args, data_loader):
    """The loader's batches on the device, round after round, as many as
    --steps asks for. With --profile, torch.profiler records steps 3-6: the
    work done with each batch is one step of it."""
    with _profiler(args) as prof:
        step = 0
        while True:
            for images, masks in data_loader:
                if step == args.steps:
                    return
                yield step, images.to(args.dev, non_blocking=True), masks.to(args.dev, non_blocking=True)
                if prof is not None:
                    prof.step()
                step += 1


def _profiler(args):
    if not args.profile:
        return contextlib.nullcontext()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if args.device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return torch.profiler.profile(
        activities=activities,
        schedule=torch.profiler.schedule(wait=1, warmup=2, active=4, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(args.profile))


def loss_of(model, images, masks):
    return F.binary_cross_entropy_with_logits(model(images), masks)


def train_step(model, opt, images, masks):
    """One plain step: forward, gradients set to None, backward, update. The
    loss is returned on the device, read by no one here."""
    loss = loss_of(model, images, masks)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


def log(step, loss, every=10):
    """The progress line every `every` steps: the loss read then only."""
    if step % every == 0:
        print(f"step {step} loss {loss.item():.4f}")


def done(args):
    if args.device == "cuda":
        torch.cuda.synchronize()
    print("trained", args.steps, "steps")
    return 0

