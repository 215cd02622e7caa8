"""BeatBuffer (rtl/lib/fifo.py) in Amaranth's simulator against a list model: random writes and pops
(the pop only while ``avail``, as its users do), checking ``w_rdy`` and ``avail`` in every cycle, ``last``
(the entry popped last) in every cycle after the first pop, and ``before`` (the entry popped before it)
in every cycle that follows a pop, once two have been popped."""

import random

import pytest
from amaranth.sim import Simulator

from rtl.lib.fifo import BeatBuffer


@pytest.mark.parametrize("width,depth,groups,p_write,p_pop", [
    (33, 16, 8, 0.7, 0.6),      # the transfer engine's shape, narrowed: pops slower than writes (fills up)
    (33, 16, 8, 0.5, 0.9),      # pops faster than writes (runs empty)
    (8, 4, 1, 0.8, 0.8),        # the smallest buffer, one slice
    (40, 8, 3, 1.0, 1.0),       # a write and a pop in every cycle they are allowed
])
def test_beat_buffer_against_model(width, depth, groups, p_write, p_pop):
    dut = BeatBuffer(width, depth, groups=groups)
    rng = random.Random(f"{width}-{depth}-{groups}-{p_write}-{p_pop}")

    async def bench(ctx):
        queue = []                  # entries written and not popped, oldest first
        popped = []                 # every entry popped, in order
        prev_popped = False         # a pop at the previous edge
        await ctx.tick()            # the cycle after reset (the pointers are set)
        for cycle in range(3000):
            # outputs of this cycle
            w_rdy, avail = ctx.get(dut.w_rdy), ctx.get(dut.avail)
            assert avail == (len(queue) > 0), cycle
            assert w_rdy == (len(queue) <= depth - 2), cycle
            if prev_popped:
                assert ctx.get(dut.last) == popped[-1], cycle
                if len(popped) >= 2:
                    assert ctx.get(dut.before) == popped[-2], cycle
            elif popped:
                assert ctx.get(dut.last) == popped[-1], cycle       # held while nothing is popped
            # inputs for the next edge
            write = rng.random() < p_write
            pop = avail and rng.random() < p_pop
            data = rng.getrandbits(width)
            ctx.set(dut.w_en, write)
            ctx.set(dut.w_data, data)
            ctx.set(dut.pop, pop)
            await ctx.tick()
            if pop:
                popped.append(queue.pop(0))
            if write and w_rdy:
                queue.append(data)
            # ``before`` in the cycle after a pop is ``last`` of the cycle before it
            prev_popped = pop
        assert len(popped) > 200

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
