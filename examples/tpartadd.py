"""Inputs of tpartadd.pto: src0 16 x 16 float, src1 8 x 16 float (its valid shape)."""
import sys

import numpy as np


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"src0": rng.standard_normal((16, 16)).astype(np.float32),
            "src1": rng.standard_normal((8, 16)).astype(np.float32)}


def reference(x):
    dst = x["src0"].copy()
    r, c = x["src1"].shape
    dst[:r, :c] += x["src1"]
    return {"dst": dst}


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "tpartadd.npz", **inputs())
