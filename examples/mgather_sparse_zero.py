"""Inputs of mgather_sparse_zero.pto: a 1024 x 64 float table and 16 x 16 linear offsets, a quarter of them out
of range (zero-filled). ``python examples/mgather_sparse_zero.py OUT.npz``."""
import sys

import numpy as np


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((1024, 64)).astype(np.float32)
    idx = rng.integers(0, 1024 * 64, (16, 16)).astype(np.int32)
    oob = rng.random((16, 16)) < 0.25
    idx[oob] = rng.integers(1024 * 64, 2 ** 31 - 1, int(oob.sum()))
    return {"data": data, "idx": idx}


def reference(x):
    flat = x["data"].reshape(-1)
    u = x["idx"].astype(np.int64)
    return {"dst": np.where(u < flat.size, flat[np.minimum(u, flat.size - 1)], np.float32(0))}


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "mgather_sparse_zero.npz", **inputs())
