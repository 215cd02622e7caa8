"""Benchmark cases for MGATHER (run by ``sim.bench``; results still checked against golden).

Case names start with the work done: ``<n> KiB`` (bytes gathered, row mode) or ``<n> elem``.
"""

import os

import cocotb
import numpy as np

from rtl.isa import DType, gm_region, OobMode, Opcode, tile

from .harness import Harness

#: The engines of the unit these tests simulate (``Config.engines``; sim.regress builds it): a
#: unit of only what the tests exercise simulates several times faster.
UNIT_ENGINES = ('transfer',)

TABLE, IDX_GM = 0x100_0000, 0x20_0000
TABLE_ROWS = 4096


async def _indices(h, values, shape, base):
    rows, cols = shape
    h.put_matrix(IDX_GM, values.astype(np.uint32).reshape(rows, cols).view(np.uint8).reshape(rows, 4 * cols))
    t = tile(base, rows, cols, DType.UINT32)
    await h.run({"opcode": Opcode.TLOAD, "dst": t, "gm": gm_region(IDX_GM, rows, cols, DType.UINT32)})
    return t


@cocotb.test()
async def bench_mgather(dut):
    h = await Harness.start(dut, latency=int(os.environ.get("TILEVEC_LATENCY", "32")))
    rng = np.random.default_rng(1)
    # Row mode: R rows of `width` fp32 from a 4096-row table, random indices.
    for rows, width in ((1, 16), (256, 16), (128, 32), (64, 64), (16, 256)):
        nbytes = rows * width * 4
        h.gm_write(TABLE, rng.integers(0, 256, TABLE_ROWS * width * 4, dtype=np.uint8).tobytes())
        t_idx = await _indices(h, rng.integers(0, TABLE_ROWS, rows), (rows, 1), 0x8000)
        name = f"{nbytes // 1024} KiB" if nbytes >= 1024 else f"{nbytes} B"
        await h.run({"opcode": Opcode.MGATHER_ROW, "oob": OobMode.CLAMP, "src0": t_idx,
                     "dst": tile(0, rows, width, DType.FP32), "gm": gm_region(TABLE, TABLE_ROWS, width, DType.FP32)},
                    label=f"bench:{name} row {rows} x {width * 4} B random")
    # Element mode: 64 x 64 elements from a 256 K-element table. Random and sparse sorted indices need a
    # beat per element; dense sorted, contiguous and clustered ones share beats between neighbours.
    h.gm_write(TABLE, rng.integers(0, 256, 1 << 20, dtype=np.uint8).tobytes())
    n = 64 * 64
    starts = rng.integers(0, (1 << 18) - 8, n // 8)
    for kind, values, dtype in (
            ("random", rng.integers(0, 1 << 18, n), DType.FP32),
            ("sorted sparse (1 per 8 beats)", np.sort(rng.integers(0, 1 << 18, n)), DType.FP32),
            ("sorted dense (2 per beat)", np.sort(rng.integers(0, n * 4, n)), DType.FP32),
            ("clustered (runs of 8)", (starts[:, None] + np.arange(8)).reshape(-1), DType.FP32),
            ("contiguous", np.arange(5000, 5000 + n), DType.FP32),
            ("contiguous", np.arange(5000, 5000 + n), DType.INT8)):
        t_idx = await _indices(h, values, (64, 64), 0x8000)
        await h.run({"opcode": Opcode.MGATHER_ELEM, "oob": OobMode.CLAMP, "src0": t_idx,
                     "dst": tile(0, 64, 64, dtype), "gm": gm_region(TABLE, 512, 512, dtype)},
                    label=f"bench:{n} elem {kind} {dtype.name.lower()}")
    await h.check_ub()
