"""Inputs of gather_scale_gemv.pto: a 64 x 16 half table (small integers), 8 indices (one past the table:
clamped), 8 scale factors (+-1, +-2) and a 1 x 8 half activation; every product and sum is exact in float."""
import sys

import numpy as np


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, 64, (8, 1)).astype(np.int32)
    idx[5, 0] = 70
    return {"table": rng.integers(-4, 5, (64, 16)).astype(np.float16), "idx": idx,
            "scale": rng.choice([-2.0, -1.0, 1.0, 2.0], (8, 1)).astype(np.float16),
            "a": rng.integers(-4, 5, (1, 8)).astype(np.float16)}


def reference(x):
    rows = x["table"][np.minimum(x["idx"][:, 0], 63)]
    b = (rows.astype(np.float32) * x["scale"].astype(np.float32)).astype(np.float16)
    return {"out": x["a"].astype(np.float32) @ b.astype(np.float32)}


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "gather_scale_gemv.npz", **inputs())
