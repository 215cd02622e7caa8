"""Inputs of gemv_stream.pto: 8 pairs of a 1 x 32 and a 32 x 4 fp16 tile (small integers: every product and sum is
exact in fp32, so the order of the additions does not matter); the reference multiplies each pair in fp32."""
import sys

import numpy as np

TILES = 8


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = {}
    for i in range(TILES):
        x[f"a{i}"] = rng.integers(-4, 5, (1, 32)).astype(np.float16)
        x[f"b{i}"] = rng.integers(-4, 5, (32, 4)).astype(np.float16)
    return x


def reference(x):
    return {f"c{i}": x[f"a{i}"].astype(np.float32) @ x[f"b{i}"].astype(np.float32) for i in range(TILES)}


def lanes_bound(config):
    """Cycles the GEMV engine's MAC lanes need at the least: a B row of a block of ``GemvEngine.lanes`` columns
    per cycle, ``K * ceil(N / lanes)`` per TGEMV (``GemvEngine.bound``)."""
    from rtl.engines.gemv import GemvEngine
    from rtl.isa import DType
    return TILES * 32 * -(-4 // GemvEngine.lanes(config, DType.FP16))


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "gemv_stream.npz", **inputs())
