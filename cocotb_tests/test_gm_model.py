"""The benchmark's GM model (:class:`sim.gm.LatencyRam`) keeps its promise: the first R beat of a burst
is taken exactly ``latency`` edges after its AR, one beat per cycle, many bursts in flight. The unit's
own top-level AXI ports are watched while it runs TLOADs, so the figures in the benchmark mean what
they say."""

import os

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from rtl.isa import DType, gm_region, Opcode, tile

from .harness import Harness

#: The engines of the unit these tests simulate (``Config.engines``; sim.regress builds it): a
#: unit of only what the tests exercise simulates several times faster.
UNIT_ENGINES = ('transfer',)

SRC = 0x10_0000


async def _watch(dut, ars, rs):
    edge = 0
    while True:
        await RisingEdge(dut.clk)
        edge += 1
        if dut.m_axi__arvalid.value == 1 and dut.m_axi__arready.value == 1:
            ars.append((edge, int(dut.m_axi__arlen.value)))
        if dut.m_axi__rvalid.value == 1 and dut.m_axi__rready.value == 1:
            rs.append(edge)


@cocotb.test()
async def gm_latency_exact(dut):
    latency = int(os.environ.get("TILEVEC_LATENCY", "32"))
    h = await Harness.start(dut, latency=latency)
    ars, rs = [], []
    cocotb.start_soon(_watch(dut, ars, rs))
    for rows, cols in ((1, 4), (1, 64), (16, 24), (8, 100)):   # fits the small config
        ars.clear()
        rs.clear()
        data = np.random.default_rng(rows).integers(0, 256, rows * cols * 4, dtype=np.uint8)
        h.gm_write(SRC, data.tobytes())
        await h.run({"opcode": Opcode.TLOAD, "dst": tile(0, rows, cols, DType.FP32),
                     "gm": gm_region(SRC, rows, cols, DType.FP32)})
        # rready is never low in a TLOAD this small, so every burst starts exactly when it is due.
        expect, free = [], 0
        for edge, arlen in ars:
            first = max(edge + latency, free)
            expect += range(first, first + arlen + 1)
            free = first + arlen + 1
        assert rs == expect, f"{rows}x{cols}: AR at {ars}, R beats at {rs}, expected {expect}"
        assert len(ars) > 1 or rows == 1
    await h.check_ub()
