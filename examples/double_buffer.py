"""Inputs of double_buffer.pto: eight 8 x 16 float tiles and one weight per row; y_i = x_i * w (row-broadcast)."""
import sys

import numpy as np

TILES = 8


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = {f"x{i}": rng.standard_normal((8, 16)).astype(np.float32) for i in range(TILES)}
    return {**x, "w": rng.standard_normal((8, 1)).astype(np.float32)}


def reference(x):
    # one float32 multiply per element: numpy rounds it to nearest even, as the unit does
    return {f"y{i}": x[f"x{i}"] * x["w"] for i in range(TILES)}


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "double_buffer.npz", **inputs())
