"""Runs two small models written in plain torch (a CNN and a transformer block), one training
step each after a warm-up, with the PyTorch profiler recording shapes, so that the vendor logs
switched on by the caller's environment (cuBLASLt, cuBLAS, cuDNN, TunableOp) and the profiler's
Chrome trace hold the convolutions and GEMMs a real model makes. `rocsweep import` reads them
(README "Map your own model"; reports/h200/import/README.md).

usage: python3 model_logs.py OUT_DIR [--no-profile]
"""

import os
import sys

import torch
from torch import nn


class SmallCNN(nn.Module):
    """A ResNet-like stem and two blocks: 7x7/2, 3x3, 1x1, strided 3x3, depthwise 3x3."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 32, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(32), nn.ReLU()
        )
        self.block1 = nn.Sequential(
            nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
        )
        self.block2 = nn.Sequential(
            nn.Conv2d(64, 128, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(128), nn.ReLU(),
            nn.Conv2d(128, 128, 3, padding=1, groups=128, bias=False), nn.BatchNorm2d(128), nn.ReLU(),
        )
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        x = self.block2(self.block1(self.stem(x)))
        return self.head(x.mean(dim=(2, 3)))


class Block(nn.Module):
    """A pre-norm transformer block: attention (q, k, v and out projections) and an MLP."""

    def __init__(self, d=512, heads=8, hidden=2048):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))
        self.heads = heads

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        shape = (b, s, self.heads, d // self.heads)
        q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
        # Attention written with matmuls (bmm), not the fused kernel, so its GEMMs show.
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.out(y)
        return x + self.mlp(self.norm2(x))


def step(model, x, opt):
    opt.zero_grad(set_to_none=True)
    model(x).float().square().mean().backward()
    opt.step()


def main():
    out = sys.argv[1]
    profile = "--no-profile" not in sys.argv
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    dev = "cuda"
    cnn = SmallCNN().to(dev).to(memory_format=torch.channels_last)
    cnn_x = torch.randn(16, 3, 96, 96, device=dev).to(memory_format=torch.channels_last)
    block = Block().to(dev).to(torch.bfloat16)
    block_x = torch.randn(8, 128, 512, device=dev, dtype=torch.bfloat16)
    opts = [torch.optim.SGD(m.parameters(), lr=1e-3) for m in (cnn, block)]

    def both():
        with torch.autocast("cuda", dtype=torch.float16):
            step(cnn, cnn_x, opts[0])
        step(cnn, cnn_x, opts[0])  # f32 too
        step(block, block_x, opts[1])

    both()  # warm-up: cuDNN and cuBLASLt choices, allocations
    torch.cuda.synchronize()
    if not profile:
        both()
        torch.cuda.synchronize()
        return
    from torch.profiler import ProfilerActivity, profile as prof

    with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as p:
        for _ in range(2):
            both()
        torch.cuda.synchronize()
    p.export_chrome_trace(os.path.join(out, "trace.json"))
    print(f"torch {torch.__version__} cudnn {torch.backends.cudnn.version()} trace written")


if __name__ == "__main__":
    main()
