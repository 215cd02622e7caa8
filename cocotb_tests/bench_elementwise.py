"""Benchmark cases for the elementwise family (run by ``sim.bench``; results still checked against golden).

Case names start with the destination's valid bytes. Rows are word-aligned (pitch a multiple of 32 bytes)
unless the case says ``odd pitch``; ``in place``: dst is the full source's tile (so 128 x 128 fp16 fits
the 64 KiB UB). Cases that do not fit the configured UB answer UB_OUT_OF_RANGE and are skipped.
"""

import os

import cocotb
import numpy as np

from rtl.isa import DType, DTYPE_BYTES, Layout, Opcode, tile

from .harness import Harness

#: The engines of the unit these tests simulate (``Config.engines``; sim.regress builds it): a
#: unit of only what the tests exercise simulates several times faster.
UNIT_ENGINES = ('elementwise',)

NAMES = {DType.INT8: "int8", DType.INT16: "int16", DType.INT32: "int32", DType.FP16: "fp16", DType.BF16: "bf16",
         DType.FP32: "fp32"}
ROW, COL = Layout.ROW_MAJOR, Layout.COL_MAJOR
O = Opcode


def _rowexpand(op, dtype, R, C, mode, expanded, *, in_place=False, pad=0):
    size = DTYPE_BYTES[dtype]
    block = 32 // size
    cols = C + pad
    full = tile(0, R, cols, dtype, valid=(R, C))
    dst_base = 0 if in_place else -(-(R * cols * size) // 32) * 32
    dst = tile(dst_base, R, cols, dtype, valid=(R, C))
    e_base = dst_base + -(-(R * cols * size) // 32) * 32
    e = tile(e_base, R, 1, dtype, layout=COL) if mode == 1 else tile(e_base, R, block, dtype)
    srcs = (e, full) if expanded == 0 else (full, e)
    return {"opcode": op, "dst": dst, "src0": srcs[0], "src1": srcs[1]}


def _part(op, dtype, R, C, partial, *, layouts=(ROW, ROW, ROW), in_place=False):
    size = DTYPE_BYTES[dtype]
    n = -(-(R * C * size) // 32) * 32
    full = tile(0, R, C, dtype, layout=layouts[1])
    dst = tile(0 if in_place else n, R, C, dtype, layout=layouts[0])
    part = tile(n if in_place else 2 * n, R, C, dtype, valid=partial, layout=layouts[2])
    return {"opcode": op, "dst": dst, "src0": full, "src1": part}


#: (label detail, command)
CASES = [
    ("fp32 64x64 mode 1 src1 expanded", _rowexpand(O.TROWEXPANDMUL, DType.FP32, 64, 64, 1, 1)),
    ("fp32 64x64 mode 1 src0 expanded", _rowexpand(O.TROWEXPANDMUL, DType.FP32, 64, 64, 1, 0)),
    ("fp32 64x64 mode 2 src1 expanded", _rowexpand(O.TROWEXPANDMUL, DType.FP32, 64, 64, 2, 1)),
    ("fp32 64x64 mode 2 src0 expanded", _rowexpand(O.TROWEXPANDMUL, DType.FP32, 64, 64, 2, 0)),
    ("fp16 128x128 mode 1 in place", _rowexpand(O.TROWEXPANDMUL, DType.FP16, 128, 128, 1, 1, in_place=True)),
    ("fp16 128x128 mode 2 in place", _rowexpand(O.TROWEXPANDMUL, DType.FP16, 128, 128, 2, 1, in_place=True)),
    ("bf16 64x64 mode 2", _rowexpand(O.TROWEXPANDMUL, DType.BF16, 64, 64, 2, 1)),
    ("int8 128x128 mode 1", _rowexpand(O.TROWEXPANDMUL, DType.INT8, 128, 128, 1, 1)),
    ("int16 64x64 mode 2", _rowexpand(O.TROWEXPANDMUL, DType.INT16, 64, 64, 2, 0)),
    ("int32 64x64 mode 1", _rowexpand(O.TROWEXPANDMUL, DType.INT32, 64, 64, 1, 1)),
    ("fp32 64x8 mode 2 both full", _rowexpand(O.TROWEXPANDMUL, DType.FP32, 64, 8, 2, 1)),
    ("fp32 64x61 mode 2 odd pitch", _rowexpand(O.TROWEXPANDMUL, DType.FP32, 64, 61, 2, 1, pad=2)),
    ("fp16 16x16 mode 1 (seed)", _rowexpand(O.TROWEXPANDMUL, DType.FP16, 16, 16, 1, 1)),
    ("fp32 4x8 mode 1 small", _rowexpand(O.TROWEXPANDMUL, DType.FP32, 4, 8, 1, 1)),
    ("fp32 64x64 SUB mode 1 src0 expanded", _rowexpand(O.TROWEXPANDSUB, DType.FP32, 64, 64, 1, 0)),
    ("fp16 64x64 MAX mode 2", _rowexpand(O.TROWEXPANDMAX, DType.FP16, 64, 64, 2, 1)),
    ("fp32 64x64 partial 48x40", _part(O.TPARTADD, DType.FP32, 64, 64, (48, 40))),
    ("fp32 64x64 full", _part(O.TPARTADD, DType.FP32, 64, 64, (64, 64))),
    ("fp16 128x128 partial 100x96 in place", _part(O.TPARTADD, DType.FP16, 128, 128, (100, 96), in_place=True)),
    ("int8 128x128 partial 64x128", _part(O.TPARTADD, DType.INT8, 128, 128, (64, 128))),
    ("fp32 64x64 col-major partial 40x48", _part(O.TPARTADD, DType.FP32, 64, 64, (40, 48), layouts=(COL,) * 3)),
    ("fp16 16x16 partial 8x16 (seed)", _part(O.TPARTADD, DType.FP16, 16, 16, (8, 16))),
    ("fp32 16x16 mixed layouts (element per cycle)", _part(O.TPARTADD, DType.FP32, 16, 16, (8, 16),
                                                          layouts=(ROW, COL, ROW))),
    ("bf16 64x64 TPARTMAX partial 32x64", _part(O.TPARTMAX, DType.BF16, 64, 64, (32, 64))),
]


@cocotb.test()
async def bench_elementwise(dut):
    h = await Harness.start(dut, latency=int(os.environ.get("TILEVEC_LATENCY", "32")))
    rng = np.random.default_rng(5)
    await h.ub_load(0, rng.integers(0, 256, h.config.ub_bytes, dtype=np.uint8).tobytes())
    for detail, cmd in CASES:
        d = cmd["dst"]
        work = d["valid_rows"] * d["valid_cols"] * DTYPE_BYTES[d["dtype"]]
        work = f"{work // 1024} KiB" if work % 1024 == 0 else f"{work} B"
        await h.run(cmd, label=f"bench:{work} {detail}")
    await h.check_ub()
