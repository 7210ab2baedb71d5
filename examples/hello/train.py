"""User code for the quick-start example: a tiny least-squares fit reporting a loss.

Runs anywhere with plain Python; on a cluster the harness (Core API) reports its metrics.
"""

import json
import os
import random

hparams = json.loads(os.environ.get("DET_HPARAMS", "{}"))
lr = float(hparams.get("learning_rate", 0.01))
rng = random.Random(0)
data = [(x, 3.0 * x + 1.0 + rng.gauss(0, 0.1)) for x in (rng.uniform(-1, 1) for _ in range(256))]
w = b = 0.0
for step in range(1, 101):
    gw = sum(2 * (w * x + b - y) * x for x, y in data) / len(data)
    gb = sum(2 * (w * x + b - y) for x, y in data) / len(data)
    w, b = w - lr * 10 * gw, b - lr * 10 * gb
    if step % 20 == 0:
        loss = sum((w * x + b - y) ** 2 for x, y in data) / len(data)
        print(f"step {step} loss {loss:.4f}", flush=True)
