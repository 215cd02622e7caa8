"""Benchmark cases for LOCAL_GATHER (run by ``sim.bench``; results still checked against golden).

Case names start with the bytes written to dst; ``R`` rows (128 = all of NKI's partitions when the UB
holds them, else 16), ``n`` indices per group, destination rows word-aligned. ``random``: offsets
uniform in ``[0, C - nepi]``; ``aligned``: multiples of ``nepi`` (a chunk never straddles two source
words when ``nepi x size <= W``); ``straddle``: only offsets at which the chunk straddles two source
words (source rows are word-aligned).
"""

import os

import cocotb
import numpy as np

from rtl.isa import DType, DTYPE_BYTES, Opcode, tile

from .harness import Harness
from .test_local_gather import _image, _load_ub

#: The engines of the unit these tests simulate (``Config.engines``; sim.regress builds it): a
#: unit of only what the tests exercise simulates several times faster.
UNIT_ENGINES = ('transfer', 'local_gather')      # (the UB is loaded with a TLOAD)

NAMES = {DType.INT8: "int8", DType.FP16: "fp16", DType.FP32: "fp32"}

#: (dtype, nepi, offsets)
CASES = [
    (DType.INT8, 1, "random"), (DType.FP16, 1, "random"), (DType.FP32, 1, "random"), (DType.FP32, 2, "random"),
    (DType.FP32, 4, "random"), (DType.FP32, 4, "aligned"), (DType.FP32, 4, "straddle"), (DType.INT8, 16, "random"),
    (DType.FP16, 8, "random"),
    (DType.FP32, 8, "random"), (DType.INT8, 32, "random"), (DType.FP32, 16, "random"), (DType.FP32, 32, "random"),
]


@cocotb.test()
async def bench_local_gather(dut):
    h = await Harness.start(dut, latency=int(os.environ.get("TILEVEC_LATENCY", "32")))
    ub = h.config.ub_bytes
    R = 128 if ub >= 64 * 1024 else 16
    dst_row = ub // 2 // R                   # bytes per destination row: 256 (default), 128 (small)
    src_row = 3 * ub // 8 // R // 32 * 32    # 192 (default), 96 (small)
    rng = np.random.default_rng(3)
    for dtype, nepi, kind in CASES:
        size = DTYPE_BYTES[dtype]
        B = nepi * size
        n, C = dst_row // B, src_row // size
        if n < 1 or C < nepi:
            continue
        X = -(-n // 16)
        hi = C - nepi + 1
        if kind == "random":
            per_core = rng.integers(0, hi, size=(16, X))
        elif kind == "aligned":
            per_core = rng.integers(0, -(-hi // nepi), size=(16, X)) * nepi
        else:
            W = h.config.ub_word_bytes
            straddling = [o for o in range(hi) if (o * size) % W + B > W]
            if not straddling:
                continue
            per_core = np.random.default_rng(4).choice(straddling, size=(16, X))   # leaves rng's sequence
        idx = np.tile(per_core, (R // 16, 1)).astype(np.uint16)
        src_bytes, dst_bytes = R * src_row, R * n * B
        cmd = {"opcode": Opcode.LOCAL_GATHER, "nepi_log2": nepi.bit_length() - 1, "num_valid": n,
               "src0": tile(0, R, C, dtype), "dst": tile(src_bytes, R, n * nepi, dtype),
               "src1": tile(src_bytes + dst_bytes, R, X, DType.UINT16)}
        await _load_ub(h, _image(h, cmd, idx))
        work = f"{dst_bytes // 1024} KiB" if dst_bytes % 1024 == 0 else f"{dst_bytes} B"
        await h.run(cmd, label=f"bench:{work} {NAMES[dtype]} nepi {nepi} ({B} B) R {R} n {n} {kind}")
        await h.check_ub()
