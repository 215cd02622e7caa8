"""Inputs of mgather_hash_wrap.pto: a 100 x 16 float table and 16 hashes (any int32; read as uint32, wrapped
mod 100). ``python examples/mgather_hash_wrap.py OUT.npz``."""
import sys

import numpy as np


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((100, 16)).astype(np.float32)
    hashes = rng.integers(-2 ** 31, 2 ** 31 - 1, (16, 1)).astype(np.int32)
    return {"table": table, "indices": hashes}


def reference(x):
    u = x["indices"][:, 0].astype(np.uint32).astype(np.int64)
    return {"dst": x["table"][u % len(x["table"])]}


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "mgather_hash_wrap.npz", **inputs())
