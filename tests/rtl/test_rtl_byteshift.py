"""select_bytes (rtl/ub/byteshift.py) in Amaranth's simulator: every offset, for the window sizes, output
widths and alignments its users build (UbReader: 2W -> W or fewer bytes, any or aligned offsets)."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator

from rtl.ub.byteshift import SELECT_LATENCY, select_bytes


@pytest.mark.parametrize("total,n,align", [(32, 16, 1), (64, 32, 1), (64, 16, 1), (64, 32, 4), (64, 4, 16),
                                           (32, 16, 16), (128, 64, 1), (48, 32, 1), (64, 1, 1)])
def test_select_bytes_every_offset(total, n, align):
    m = Module()
    window = Signal(8 * total)
    offset = Signal(range(total))
    out = select_bytes(m, window, offset, n, align=align)
    rng = random.Random(f"{total}-{n}-{align}")
    offsets = [o for o in range(0, total - n + 1, align)]
    cases = [(rng.getrandbits(8 * total), o) for o in offsets for _ in range(3)]

    async def bench(ctx):
        history = []
        for data, off in cases:
            ctx.set(window, data)
            ctx.set(offset, off)
            history.append((data, off))
            await ctx.tick()
            if len(history) >= SELECT_LATENCY:      # the inputs SELECT_LATENCY edges ago
                d, o = history[-SELECT_LATENCY]
                assert ctx.get(out) == (d >> (8 * o)) & ((1 << (8 * n)) - 1), (total, n, align, o)

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
