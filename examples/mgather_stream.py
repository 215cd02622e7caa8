"""Inputs of mgather_stream.pto: a 256 x 16 float32 table and 8 index tiles of 4 rows (some out of range,
clamped to row 255); the reference is each tile's rows of the table."""
import sys

import numpy as np

LOOKUPS, ROWS, TABLE_ROWS, COLS = 8, 4, 256, 16


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = {"table": rng.standard_normal((TABLE_ROWS, COLS)).astype(np.float32)}
    for k in range(LOOKUPS):
        idx = rng.integers(0, TABLE_ROWS, (ROWS, 1))
        idx[rng.random((ROWS, 1)) < 0.1] = TABLE_ROWS + 7          # out of range: clamped
        x[f"i{k}"] = idx.astype(np.int32)
    return x


def reference(x):
    rows = lambda i: np.minimum(i[:, 0].astype(np.uint32).astype(np.int64), TABLE_ROWS - 1)
    return {f"g{k}": x["table"][rows(x[f"i{k}"])] for k in range(LOOKUPS)}


def bus_bound(config):
    """Cycles the AXI read data channel needs at the least: every row's 64 bytes, a bus beat a cycle (the
    table starts on a beat: the runner places GM regions aligned, and its rows are 64 bytes apart)."""
    return LOOKUPS * ROWS * -(-COLS * 4 // config.axi_data_bytes)


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "mgather_stream.npz", **inputs())
