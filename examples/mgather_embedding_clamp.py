"""Inputs of mgather_embedding_clamp.pto: a 65536 x 64 half table, 8 indices of which some are out of range
(clamped to row 65535; a negative int32 is a large uint32). ``python examples/mgather_embedding_clamp.py OUT.npz``."""
import sys

import numpy as np


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((65536, 64)).astype(np.float16)
    idx = np.array([[0], [1], [65535], [65536], [70000], [-1], [12345], [2 ** 31 - 1]], np.int32)
    return {"table": table, "idx": idx}


def reference(x):
    u = x["idx"][:, 0].astype(np.uint32).astype(np.int64)
    return {"dst": x["table"][np.minimum(u, len(x["table"]) - 1)]}


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "mgather_embedding_clamp.npz", **inputs())
