"""Inputs of tload_stream.pto: 16 GM regions of 4 x 8 float32; the reference is each region, loaded into its own
tile."""
import sys

import numpy as np

TILES = 16


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {f"x{i}": rng.standard_normal((4, 8)).astype(np.float32) for i in range(TILES)}


def reference(x):
    return {f"t{i}": x[f"x{i}"].copy() for i in range(TILES)}


def bus_bound(config):
    """Cycles the AXI read data channel needs at the least: every tile's 128 bytes, a bus beat a cycle (each
    region starts on a beat: the runner places GM regions aligned)."""
    return TILES * -(-4 * 8 * 4 // config.axi_data_bytes)


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "tload_stream.npz", **inputs())
