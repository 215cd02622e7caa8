"""TLOAD / TSTORE round trips, bit-exact against the golden machine, with canaries everywhere.

Parameters (environment, set by ``tests/cocotb`` through ``sim.runner.run(params=...)``):
``TILEVEC_ROUNDS``, ``TILEVEC_BACKPRESSURE`` (0/1).
"""

import os

import cocotb

from rtl.isa import DType, DTYPE_BYTES, gm_region, Layout, Opcode, Status, tile, UB_ALIGN

from .harness import Harness

#: The engines of the unit these tests simulate (``Config.engines``; sim.regress builds it): a
#: unit of only what the tests exercise simulates several times faster.
UNIT_ENGINES = ('transfer',)

GM_SRC = 0x0001_0000
GM_DST = 0x0010_0000


def _env(name, default):
    return os.environ.get(f"TILEVEC_{name}", default)


async def _fill_ub(h):
    """Random UB contents (through TLOAD, so the golden machine sees the same)."""
    cols = 256
    rows = h.config.ub_bytes // cols
    h.gm_write(0x0, bytes(h.rng.randrange(256) for _ in range(h.config.ub_bytes)))
    rsp = await h.run({"opcode": Opcode.TLOAD, "dst": tile(0, rows, cols, DType.UINT8),
                       "gm": gm_region(0, rows, cols, DType.UINT8)}, label="ub fill")
    assert rsp["status"] == Status.OK


def _random_transfer(h, dtype):
    """A random legal tile + GM geometry for ``dtype``; returns (tile dict, gm dict for src, for dst)."""
    rng, cfg = h.rng, h.config
    size = DTYPE_BYTES[dtype]
    layout = rng.choice([Layout.ROW_MAJOR, Layout.COL_MAJOR])
    while True:
        rows = rng.choice([1, 2, 3, rng.randrange(1, 40)])
        cols = rng.choice([1, 2, rng.randrange(1, 24), rng.randrange(1, 200)])
        if rows * cols * size <= cfg.ub_bytes // 2:
            break
    vr = rng.choice([rows, rng.randrange(1, rows + 1)])
    vc = rng.choice([cols, rng.randrange(1, cols + 1)])
    slots = (cfg.ub_bytes - rows * cols * size) // UB_ALIGN
    base = rng.randrange(slots + 1) * UB_ALIGN
    lines, line_elems = (vc, vr) if layout == Layout.COL_MAJOR else (vr, vc)

    def gm(region_base):
        stride = line_elems * size + rng.choice([0, 0, size, 7 * size, rng.randrange(0, 300) * size])
        if rng.random() < 0.2:
            stride += 4096          # lines on different pages
        start = region_base + rng.randrange(0, 5000) * size   # crosses 4 KiB boundaries at random
        return gm_region(start, vr, vc, dtype, row_stride=stride), (lines - 1) * stride + line_elems * size

    t = tile(base, rows, cols, dtype, valid=(vr, vc), layout=layout)
    return t, gm(GM_SRC), gm(GM_DST)


@cocotb.parametrize(dtype=[d.name for d in DType])
async def roundtrip_random(dut, dtype):
    """Random tiles of one data type: TLOAD from GM, TSTORE to fresh GM, compare UB and GM with golden."""
    dtype = DType[dtype]
    h = await Harness.start(dut, backpressure=_env("BACKPRESSURE", "1") == "1")
    await _fill_ub(h)
    for _ in range(int(_env("ROUNDS", "4"))):
        t, (src, src_len), (dst, dst_len) = _random_transfer(h, dtype)
        h.gm_write(src["base"] - 64, bytes(h.rng.randrange(256) for _ in range(src_len + 128)))
        h.gm_write(dst["base"] - 64, bytes(h.rng.randrange(256) for _ in range(dst_len + 128)))  # canaries
        await h.run({"opcode": Opcode.TLOAD, "dst": t, "gm": src})
        await h.run({"opcode": Opcode.TSTORE, "src0": t, "gm": dst})
        h.check_gm(dst["base"] - 64, dst_len + 128)
    await h.check_ub()                    # through the UB debug port: independent of TSTORE
    await h.check_ub(via="tstore")        # and through a whole-UB TSTORE, as before the port existed


@cocotb.test()
async def roundtrip_smoke(dut):
    """One dense 8 x 16 fp32 tile, no backpressure: the quickest sign of life."""
    import numpy as np
    h = await Harness.start(dut)
    a = np.arange(8 * 16, dtype=np.float32).reshape(8, 16) * np.float32(1.5)
    h.put_matrix(GM_SRC, a)
    t = tile(64, 8, 16, DType.FP32)
    await h.run({"opcode": Opcode.TLOAD, "dst": t, "gm": gm_region(GM_SRC, 8, 16, DType.FP32)})
    await h.run({"opcode": Opcode.TSTORE, "src0": t, "gm": gm_region(GM_DST + 4, 8, 16, DType.FP32, 80)})
    got = h.driver.get_matrix(GM_DST + 4, (8, 16), DType.FP32, 80)
    assert (got.view(np.uint32) == a.view(np.uint32)).all(), "round trip changed the data"
    h.check_gm(GM_DST - 64, 8 * 80 + 128)
    await h.check_ub()
    await h.check_ub(via="tstore")
