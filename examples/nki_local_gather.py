"""Inputs of nki_local_gather.pto and the seed's own numpy reference (nki_local_gather.txt), for any
``(rows, width, nepi, num_valid)``; ``python examples/nki_local_gather.py OUT.npz``."""
import sys

import numpy as np

SHAPE = dict(rows=128, width=512, nepi=4, num_valid=64)


def inputs(seed=0, rows=128, width=512, nepi=4, num_valid=64):
    rng = np.random.default_rng(seed)
    src_buffer = rng.random((rows, width, nepi)).astype(np.float32)
    index_per_core = rng.integers(0, width, (16, 4)).astype(np.uint16)
    index = np.tile(index_per_core, (rows // 16, 1))
    return {"src_buffer": src_buffer.reshape(rows, width * nepi), "index": (index * nepi).astype(np.uint16)}


def reference(x, nepi=4, num_valid=64, out="out"):
    """The seed's loop: per core of 16 partitions, indices flattened partition-first, np.take along axis 1."""
    rows = x["src_buffer"].shape[0]
    src_buffer = x["src_buffer"].reshape(rows, -1, nepi)
    index = x["index"] // nepi
    output_np = np.ndarray(shape=(rows, num_valid, nepi), dtype=src_buffer.dtype)
    for i_core in range(rows // 16):
        s, e = i_core * 16, (i_core + 1) * 16
        indices_1d = index[s:e].flatten(order="F")[0:num_valid]
        output_np[s:e, :, :] = np.take(src_buffer[s:e], indices_1d, axis=1)
    return {out: output_np.reshape(rows, num_valid * nepi)}


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "nki_local_gather.npz", **inputs())
