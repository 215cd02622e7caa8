"""Inputs of gather_scale.pto: a 256 x 32 half table, 16 indices (two out of range: clamped), 16 weights."""
import sys

import numpy as np


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, 256, (16, 1)).astype(np.int32)
    idx[3, 0], idx[11, 0] = 300, -5
    return {"table": rng.standard_normal((256, 32)).astype(np.float16), "idx": idx,
            "weight": rng.standard_normal((16, 1)).astype(np.float16)}


def reference(x):
    u = x["idx"][:, 0].astype(np.uint32).astype(np.int64)
    rows = x["table"][np.minimum(u, 255)]
    scaled = (rows.astype(np.float32) * x["weight"].astype(np.float32)).astype(np.float16)
    return {"scaled": scaled, "out": scaled}


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "gather_scale.npz", **inputs())
