"""Issue 43's device check, step 1: a PyTorch profiler trace of a small CNN (three training
iterations, batch 8, 32x32 RGB input) written as a Chrome trace, the file `rocsweep import`
reads. Usage: python3 cnn_trace.py OUT.json"""
import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

torch.backends.cudnn.benchmark = False
torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
    nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10),
).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8, 3, 32, 32, device="cuda")
y = torch.randint(0, 10, (8,), device="cuda")
for _ in range(2):  # warm-up outside the trace
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    for _ in range(3):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    torch.cuda.synchronize()
prof.export_chrome_trace(sys.argv[1])
print("trace written:", sys.argv[1], "torch", torch.__version__)
