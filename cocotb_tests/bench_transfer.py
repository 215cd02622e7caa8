"""Benchmark cases for TLOAD / TSTORE (run by ``sim.bench``; results still checked against golden).

Each case records one instruction with label ``bench:<case>``; cycles come from the unit's response.
"""

import os

import cocotb
import numpy as np

from golden.numerics import DTYPE_NUMPY
from rtl.isa import DType, gm_region, Opcode, tile

from .harness import Harness

#: The engines of the unit these tests simulate (``Config.engines``; sim.regress builds it): a
#: unit of only what the tests exercise simulates several times faster.
UNIT_ENGINES = ('transfer',)

#: (case name, rows, cols, dtype). Lines are rows (row-major), dense in GM.
CASES = [
    ("64 B 1x16 fp32", 1, 16, DType.FP32),
    ("1 KiB 8x32 fp32", 8, 32, DType.FP32),
    ("4 KiB 32x32 fp32", 32, 32, DType.FP32),
    ("4 KiB 1x1024 fp32", 1, 1024, DType.FP32),
    ("16 KiB 64x64 fp32", 64, 64, DType.FP32),
    ("32 KiB 64x128 fp32", 64, 128, DType.FP32),
    ("32 KiB 256x128 fp8", 256, 128, DType.FP8E4M3),
]

SRC, DST = 0x10_0000, 0x20_0000


@cocotb.test()
async def bench_transfer(dut):
    latency = int(os.environ.get("TILEVEC_LATENCY", "32"))
    h = await Harness.start(dut, latency=latency)
    for name, rows, cols, dtype in CASES:
        data = np.random.default_rng(rows * cols).integers(0, 256, rows * cols * DTYPE_NUMPY[dtype].itemsize,
                                                             dtype=np.uint8)
        h.gm_write(SRC, data.tobytes())
        t = tile(0, rows, cols, dtype)
        await h.run({"opcode": Opcode.TLOAD, "dst": t, "gm": gm_region(SRC, rows, cols, dtype)},
                    label=f"bench:{name}")
        await h.run({"opcode": Opcode.TSTORE, "src0": t, "gm": gm_region(DST, rows, cols, dtype)},
                    label=f"bench:{name}")
        h.check_gm(DST, rows * cols * DTYPE_NUMPY[dtype].itemsize)
    await h.check_ub()
