"""The search-efficiency benchmark's training task: scikit-learn's digits, a one-hidden-layer MLP
in NumPy, one epoch at a time from a checkpoint (a dict of arrays).

NumPy only (plus scikit-learn for the bundled data), so the very same code trains under our
searchers, Ray Tune and Optuna: both venvs have these two packages. The split matches
examples/digits: the first 1,500 images train, the last 297 validate.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

VALIDATION_SIZE = 297
MAX_EPOCHS = 27

SPACE: dict[str, Any] = {
    "lr": {"type": "log", "minval": -3.5, "maxval": 0.5, "base": 10},
    "hidden": {"type": "int", "minval": 4, "maxval": 96},
    "momentum": {"type": "double", "minval": 0.0, "maxval": 0.95},
    "weight_decay": {"type": "log", "minval": -6, "maxval": -1, "base": 10},
    "batch_size": {"type": "categorical", "vals": [16, 32, 64, 128, 256]},
}


@cache
def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float64)
    y = digits.target.astype(np.int64)
    cut = len(x) - VALIDATION_SIZE
    return x[:cut], y[:cut], x[cut:], y[cut:]


def init(hparams: dict[str, Any], seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    hidden = int(hparams["hidden"])
    w1 = rng.normal(0, math.sqrt(2 / 64), (64, hidden))
    w2 = rng.normal(0, math.sqrt(2 / hidden), (hidden, 10))
    params = {"w1": w1, "b1": np.zeros(hidden), "w2": w2, "b2": np.zeros(10)}
    velocity = {f"v_{k}": np.zeros_like(v) for k, v in params.items()}
    return {**params, **velocity, "epoch": 0, "seed": seed}


def _forward(state: dict[str, Any], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hidden = np.maximum(x @ state["w1"] + state["b1"], 0.0)
    return hidden, hidden @ state["w2"] + state["b2"]


def train_epoch(hparams: dict[str, Any], state: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """One epoch of SGD with momentum from `state`; returns the new state and the validation
    accuracy. Deterministic: the shuffle is seeded by the trial seed and the epoch."""
    x_train, y_train, x_val, y_val = _data()
    state = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()}
    lr = float(hparams["lr"])
    momentum = float(hparams["momentum"])
    decay = float(hparams["weight_decay"])
    batch = int(hparams["batch_size"])
    order = np.random.default_rng(state["seed"] * 1000 + state["epoch"]).permutation(len(x_train))
    for start in range(0, len(order), batch):
        idx = order[start : start + batch]
        x, y = x_train[idx], y_train[idx]
        hidden, logits = _forward(state, x)
        logits = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        probs[np.arange(len(y)), y] -= 1.0
        grad_logits = probs / len(y)
        grads = {
            "w2": hidden.T @ grad_logits + decay * state["w2"],
            "b2": grad_logits.sum(axis=0),
        }
        grad_hidden = (grad_logits @ state["w2"].T) * (hidden > 0)
        grads["w1"] = x.T @ grad_hidden + decay * state["w1"]
        grads["b1"] = grad_hidden.sum(axis=0)
        for name, grad in grads.items():
            grad = np.clip(np.nan_to_num(grad), -10.0, 10.0)
            state[f"v_{name}"] = momentum * state[f"v_{name}"] - lr * grad
            state[name] = state[name] + state[f"v_{name}"]
    state["epoch"] += 1
    _, logits = _forward(state, x_val)
    accuracy = float(np.mean(np.argmax(np.nan_to_num(logits), axis=1) == y_val))
    return state, accuracy
