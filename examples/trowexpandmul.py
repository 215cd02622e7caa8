"""Inputs of trowexpandmul.pto: src0 16 x 16 half, src1 16 x 1 half (one scalar per row)."""
import sys

import numpy as np


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"src0": rng.standard_normal((16, 16)).astype(np.float16),
            "src1": rng.standard_normal((16, 1)).astype(np.float16)}


def reference(x):
    # dst[i, j] = src0[i, j] * src1[i, 0], computed in float32 and rounded once to half
    return {"dst": (x["src0"].astype(np.float32) * x["src1"].astype(np.float32)).astype(np.float16)}


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "trowexpandmul.npz", **inputs())
