"""The learner's policy model: a small torch MLP on the CPU, else numpy, else pure Python.

Each backend offers the same three calls: train_step(batch) -> loss, save(path), name.
A batch is a list of (features[9], target_distribution[9]) pairs.
"""

from __future__ import annotations

import math
import pickle
import random


def make_model(seed: int = 0):
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        return TorchModel(seed)
    try:
        import numpy  # noqa: F401
    except ImportError:
        return PurePythonModel(seed)
    return NumpyModel(seed)


class TorchModel:
    name = "torch (CPU)"

    def __init__(self, seed: int) -> None:
        import torch

        torch.manual_seed(seed)
        torch.set_num_threads(1)
        self.torch = torch
        self.net = torch.nn.Sequential(
            torch.nn.Linear(9, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 9)
        )
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=1e-3)

    def train_step(self, batch) -> float:
        torch = self.torch
        x = torch.tensor([b[0] for b in batch])
        y = torch.tensor([b[1] for b in batch])
        logits = self.net(x)
        loss = -(y * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return float(loss)

    def save(self, handle) -> None:
        self.torch.save({"model": self.net.state_dict(), "optimizer": self.optimizer.state_dict()}, handle)


class NumpyModel:
    name = "numpy (torch not installed)"

    def __init__(self, seed: int) -> None:
        import numpy as np

        self.np = np
        rng = np.random.default_rng(seed)
        self.w = rng.normal(0, 0.1, (9, 9))
        self.b = np.zeros(9)

    def train_step(self, batch) -> float:
        np = self.np
        x = np.array([b[0] for b in batch])
        y = np.array([b[1] for b in batch])
        logits = x @ self.w + self.b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        loss = float(-(y * np.log(p + 1e-9)).sum(axis=1).mean())
        grad = (p - y) / len(batch)
        self.w -= 0.1 * x.T @ grad
        self.b -= 0.1 * grad.sum(axis=0)
        return loss

    def save(self, handle) -> None:
        pickle.dump({"w": self.w, "b": self.b}, handle)


class PurePythonModel:
    name = "pure Python (neither torch nor numpy installed)"

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.w = [[rng.gauss(0, 0.1) for _ in range(9)] for _ in range(9)]

    def train_step(self, batch) -> float:
        total = 0.0
        for x, y in batch:
            logits = [sum(x[i] * self.w[i][j] for i in range(9)) for j in range(9)]
            top = max(logits)
            exps = [math.exp(v - top) for v in logits]
            norm = sum(exps)
            p = [e / norm for e in exps]
            total -= sum(y[j] * math.log(p[j] + 1e-9) for j in range(9))
            for i in range(9):
                for j in range(9):
                    self.w[i][j] -= 0.1 * x[i] * (p[j] - y[j]) / len(batch)
        return total / len(batch)

    def save(self, handle) -> None:
        pickle.dump({"w": self.w}, handle)
