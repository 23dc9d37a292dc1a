"""The learner's policy model: a small torch MLP on the CPU, else numpy, else pure Python.

Each backend offers the same calls: ``train_step(batch) -> loss``, ``save(handle)``, and the
attributes ``name`` and ``fallback_reason`` (None unless ``auto`` had to fall back). A batch is
a list of ``(features[9], target_distribution[9])`` pairs; the loss is the cross-entropy of
the policy against the MCTS visit distribution.
"""

from __future__ import annotations

import math
import pickle
import random
import warnings


class BackendUnavailable(Exception):
    """The backend asked for by name cannot be imported."""


def _import_torch():
    with warnings.catch_warnings():
        # torch warns at import when numpy is absent; the CPU model does not need numpy.
        warnings.filterwarnings("ignore", message=".*NumPy.*")
        import torch
    return torch


def make_model(backend: str = "auto", seed: int = 0):
    """The model for ``backend`` (``auto``, ``torch``, ``numpy`` or ``python``)."""
    missing: list[str] = []
    if backend in ("auto", "torch"):
        try:
            _import_torch()
        except ImportError as error:
            if backend == "torch":
                raise BackendUnavailable(f"--backend torch: torch cannot be imported ({error})") from None
            missing.append("torch")
        else:
            return TorchModel(seed)
    if backend in ("auto", "numpy"):
        try:
            import numpy  # noqa: F401
        except ImportError as error:
            if backend == "numpy":
                raise BackendUnavailable(f"--backend numpy: numpy cannot be imported ({error})") from None
            missing.append("numpy")
        else:
            model = NumpyModel(seed)
            if missing:
                model.fallback_reason = "torch is not installed: the learner falls back to numpy"
            return model
    model = PurePythonModel(seed)
    if missing:
        model.fallback_reason = f"{' and '.join(missing)} not installed: the learner falls back to pure Python"
    return model


class TorchModel:
    name = "torch (CPU)"
    fallback_reason: str | None = None

    def __init__(self, seed: int) -> None:
        torch = _import_torch()
        torch.manual_seed(seed)
        torch.set_num_threads(1)  # the actors need the other cores
        self.torch = torch
        nn = torch.nn
        self.net = nn.Sequential(nn.Linear(9, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 9))
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
        return loss.item()

    def save(self, handle) -> None:
        self.torch.save({"model": self.net.state_dict(), "optimizer": self.optimizer.state_dict()}, handle)


class NumpyModel:
    name = "numpy (a linear softmax policy)"
    fallback_reason: str | None = None

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
    name = "pure Python (a linear softmax policy)"
    fallback_reason: str | None = None

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.w = [[rng.gauss(0, 0.1) for _ in range(9)] for _ in range(9)]

    def train_step(self, batch) -> float:
        total = 0.0
        grad = [[0.0] * 9 for _ in range(9)]
        for x, y in batch:
            logits = [sum(x[i] * self.w[i][j] for i in range(9)) for j in range(9)]
            top = max(logits)
            exps = [math.exp(v - top) for v in logits]
            norm = sum(exps)
            p = [e / norm for e in exps]
            total -= sum(y[j] * math.log(p[j] + 1e-9) for j in range(9))
            for i in range(9):
                if x[i]:
                    row = grad[i]
                    for j in range(9):
                        row[j] += x[i] * (p[j] - y[j])
        scale = 0.1 / len(batch)
        for i in range(9):
            for j in range(9):
                self.w[i][j] -= scale * grad[i][j]
        return total / len(batch)

    def save(self, handle) -> None:
        pickle.dump({"w": self.w}, handle)
