#!/usr/bin/python3
"""Writes the golden files gdrt's tests compare against (PyTorch 1.13, CPU, float32).

    /usr/bin/python3 tests/runtime/golden/make_golden.py [output_dir]

ops.safetensors   inputs, outputs and input gradients for every op; a case
                  "<name>" stores "<name>.in.<k>", "<name>.out", "<name>.grad_out"
                  (the upstream gradient, loss = sum(out * grad_out)) and
                  "<name>.grad.<k>".
unet.safetensors  a small UNet's initial state_dict ("init.<key>"), its input
                  and target, the losses of two Adam steps, and the state after
                  them ("step2.<key>"), plus parameter counts.
The files are written by hand (struct + json) in the safetensors layout, so the
tests also prove that gdrt reads a file it did not write.
"""
import json
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.int32: "I32",
          torch.uint8: "U8", torch.bool: "BOOL", torch.float16: "F16"}


def write_safetensors(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        data = t.numpy().tobytes() if t.dtype != torch.bool else t.to(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


OUT = {}


def case(name, fn, inputs, grads=True):
    """Runs fn(*inputs); records inputs, output and (if grads) input gradients."""
    ins = [t.clone().requires_grad_(grads and t.is_floating_point()) for t in inputs]
    out = fn(*ins)
    for i, t in enumerate(inputs):
        OUT[f"{name}.in.{i}"] = t
    OUT[f"{name}.out"] = out.detach()
    if grads:
        g = torch.randn_like(out)
        OUT[f"{name}.grad_out"] = g
        (out * g).sum().backward()
        for i, t in enumerate(ins):
            if t.grad is not None:
                OUT[f"{name}.grad.{i}"] = t.grad


def op_cases():
    r = torch.randn
    pos = lambda *s: torch.rand(*s) + 0.5
    case("add", torch.add, [r(2, 3, 4), r(3, 1)])
    case("sub", torch.sub, [r(2, 3, 4), r(4)])
    case("mul", torch.mul, [r(2, 3, 4), r(2, 1, 4)])
    case("div", torch.div, [r(2, 3, 4), pos(3, 4)])
    case("maximum", torch.maximum, [r(3, 4), r(3, 4)])
    case("minimum", torch.minimum, [r(3, 4), r(1, 4)])
    case("pow3", lambda x: torch.pow(x, 3.0), [pos(3, 5)])
    case("exp", torch.exp, [r(3, 5)])
    case("log", torch.log, [pos(3, 5)])
    case("log1p", torch.log1p, [pos(3, 5)])
    case("abs", torch.abs, [r(3, 5)])
    case("sqrt", torch.sqrt, [pos(3, 5)])
    case("square", torch.square, [r(3, 5)])
    case("neg", torch.neg, [r(3, 5)])
    case("relu", F.relu, [r(4, 6)])
    case("leaky_relu", lambda x: F.leaky_relu(x, 0.1), [r(4, 6)])
    case("sigmoid", torch.sigmoid, [r(4, 6)])
    case("tanh", torch.tanh, [r(4, 6)])
    case("softmax", lambda x: torch.softmax(x, 1), [r(2, 5, 3)])
    case("log_softmax", lambda x: torch.log_softmax(x, 1), [r(2, 5, 3)])
    case("sum_dim", lambda x: x.sum(1), [r(2, 5, 3)])
    case("sum_keep", lambda x: x.sum((0, 2), keepdim=True), [r(2, 5, 3)])
    case("mean_all", lambda x: x.mean(), [r(2, 5, 3)])
    case("amax", lambda x: torch.amax(x, 2), [r(2, 5, 3)])
    case("logsumexp", lambda x: torch.logsumexp(x, 1), [r(2, 5, 3)])
    case("matmul", torch.matmul, [r(3, 4), r(4, 5)])
    case("bmm", torch.matmul, [r(2, 3, 4), r(2, 4, 5)])
    case("views", lambda x: x.permute(0, 2, 1)[:, 1:3].reshape(-1) * 2.0, [r(2, 3, 4)])
    case("slice_step", lambda x: x[:, ::2] + 1.0, [r(3, 7)])
    case("cat", lambda a, b: torch.cat([a, b], 1), [r(2, 3, 4, 4), r(2, 5, 4, 4)])
    case("conv_s2p1", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), [r(2, 3, 7, 7), r(4, 3, 3, 3), r(4)])
    case("conv_d2p2", lambda x, w: F.conv2d(x, w, None, stride=1, padding=2, dilation=2), [r(2, 3, 9, 8), r(5, 3, 3, 3)])
    case("conv_1x1", lambda x, w, b: F.conv2d(x, w, b), [r(2, 6, 5, 5), r(3, 6, 1, 1), r(3)])
    case("convT_k2s2", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2), [r(2, 4, 5, 5), r(4, 3, 2, 2), r(3)])
    case("convT_k3s2p1op1", lambda x, w: F.conv_transpose2d(x, w, None, stride=2, padding=1, output_padding=1),
         [r(2, 4, 5, 6), r(4, 2, 3, 3)])
    case("maxpool_k2", lambda x: F.max_pool2d(x, 2), [r(2, 3, 8, 8)])
    case("maxpool_k3s2p1", lambda x: F.max_pool2d(x, 3, 2, 1), [r(2, 3, 9, 9)])
    rm, rv = r(3), torch.rand(3) + 0.5
    OUT["bn_train.running_mean.before"], OUT["bn_train.running_var.before"] = rm.clone(), rv.clone()
    rm_t, rv_t = rm.clone(), rv.clone()
    case("bn_train", lambda x, w, b: F.batch_norm(x, rm_t, rv_t, w, b, True, 0.1, 1e-5), [r(4, 3, 5, 5), r(3), r(3)])
    OUT["bn_train.running_mean.after"], OUT["bn_train.running_var.after"] = rm_t, rv_t
    case("bn_eval", lambda x, w, b: F.batch_norm(x, rm, rv, w, b, False, 0.1, 1e-5), [r(4, 3, 5, 5), r(3), r(3)])
    case("bce_logits", F.binary_cross_entropy_with_logits, [r(2, 1, 6, 6), (torch.rand(2, 1, 6, 6) > 0.5).float()])
    case("cross_entropy", lambda x: F.cross_entropy(x, CE_TARGET), [r(2, 4, 3, 3)])
    OUT["cross_entropy.target"] = CE_TARGET
    case("dice", lambda x, t: 1 - (2 * (torch.sigmoid(x) * t).sum() + 1) / (torch.sigmoid(x).sum() + t.sum() + 1),
         [r(2, 1, 6, 6), (torch.rand(2, 1, 6, 6) > 0.5).float()])
    case("mse", F.mse_loss, [r(3, 4), r(3, 4)])


class DoubleConv(nn.Module):
    def __init__(self, cin, cout, bn=True):
        super().__init__()
        layers = []
        for c in (cin, cout):
            layers.append(nn.Conv2d(c, cout, 3, padding=1, bias=not bn))
            if bn:
                layers.append(nn.BatchNorm2d(cout))
            layers.append(nn.ReLU(inplace=True))
        self.double_conv = nn.Sequential(*layers)

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, cin, cout, bn=True):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(cin, cout, bn))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, cin, cout, bn=True):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cin // 2, kernel_size=2, stride=2)
        self.conv = DoubleConv(cin, cout, bn)

    def forward(self, x1, x2):
        return self.conv(torch.cat([x2, self.up(x1)], dim=1))


class OutConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


class UNet(nn.Module):
    """The common segmentation UNet (milesial/Pytorch-UNet layout, bilinear=False)."""

    def __init__(self, in_channels=3, classes=1, base=64, depth=4, bn=True):
        super().__init__()
        self.inc = DoubleConv(in_channels, base, bn)
        for i in range(1, depth + 1):
            setattr(self, f"down{i}", Down(base << (i - 1), base << i, bn))
        for i in range(1, depth + 1):
            setattr(self, f"up{i}", Up(base << (depth - i + 1), base << (depth - i), bn))
        self.outc = OutConv(base, classes)
        self.depth = depth

    def forward(self, x):
        skips = [self.inc(x)]
        for i in range(1, self.depth + 1):
            skips.append(getattr(self, f"down{i}")(skips[-1]))
        h = skips[-1]
        for i in range(1, self.depth + 1):
            h = getattr(self, f"up{i}")(h, skips[-1 - i])
        return self.outc(h)


def unet_cases():
    out = {}
    big = UNet(3, 1, 64, 4, True)
    out["param_count.base64_depth4_bn"] = torch.tensor(sum(p.numel() for p in big.parameters()), dtype=torch.int64)
    out["param_count.base16_depth4_bn"] = torch.tensor(sum(p.numel() for p in UNet(3, 1, 16, 4).parameters()),
                                                       dtype=torch.int64)
    model = UNet(3, 1, 4, 2, True)
    for k, v in model.state_dict().items():
        out["init." + k] = v.clone()
    x = torch.randn(2, 3, 16, 16)
    t = (torch.rand(2, 1, 16, 16) > 0.5).float()
    out["x"], out["target"] = x, t
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for step in (1, 2):
        opt.zero_grad()
        loss = F.binary_cross_entropy_with_logits(model(x), t)
        loss.backward()
        if step == 1:
            for k, p in model.named_parameters():
                out["grad1." + k] = p.grad.clone()
        opt.step()
        out[f"loss{step}"] = loss.detach().reshape(())
    for k, v in model.state_dict().items():
        out["step2." + k] = v.clone()
    model.eval()
    with torch.no_grad():
        out["eval_out"] = model(x)
    return out, big


if __name__ == "__main__":
    here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(1234)
    CE_TARGET = torch.randint(0, 4, (2, 3, 3))
    op_cases()
    write_safetensors(os.path.join(here, "ops.safetensors"), OUT, {"producer": "make_golden.py", "torch": torch.__version__})
    unet, big = unet_cases()
    write_safetensors(os.path.join(here, "unet.safetensors"), unet, {"producer": "make_golden.py"})
    print("UNet(3,1,64,4,bn) parameters:", int(unet["param_count.base64_depth4_bn"]))
    print("keys:", len(OUT), "op tensors,", len(unet), "unet tensors")
