"""Inputs of tgemv_acc.pto: c0 1 x 16 float, a 1 x 16 half, b 16 x 16 half (small integers: exact sums)."""
import sys

import numpy as np


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"c0": rng.integers(-8, 8, (1, 16)).astype(np.float32),
            "a": rng.integers(-4, 4, (1, 16)).astype(np.float16),
            "b": rng.integers(-4, 4, (16, 16)).astype(np.float16)}


def reference(x):
    return {"c1": x["c0"] + x["a"].astype(np.float32) @ x["b"].astype(np.float32)}


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "tgemv_acc.npz", **inputs())
