"""Inputs of tpartadd_stream.pto: 16 pairs of 16 x 16 fp16 tiles; the reference adds each pair (float16 sums,
round to nearest even: numpy's float16 add)."""
import sys

import numpy as np

TILES = 16


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = {}
    for i in range(TILES):
        x[f"a{i}"] = rng.standard_normal((16, 16)).astype(np.float16)
        x[f"b{i}"] = rng.standard_normal((16, 16)).astype(np.float16)
    return x


def reference(x):
    return {f"d{i}": (x[f"a{i}"] + x[f"b{i}"]).astype(np.float16) for i in range(TILES)}


def lanes_bound(config):
    """Cycles the elementwise lanes need at the least: 16 destinations of 512 bytes at ``ew_lane_bytes`` a
    cycle."""
    return TILES * 16 * 16 * 2 // config.ew_lane_bytes


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "tpartadd_stream.npz", **inputs())
