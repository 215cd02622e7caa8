"""LutFifo (rtl/lib/fifo.py) in Amaranth's simulator against a list model: random writes and reads, checking
``w_rdy``, ``r_rdy``, ``level`` and ``r_data`` (the oldest entry) in every cycle; with the entry split into
``groups`` slices of its own pointers (``pointer_groups``), the slices must stay in step, and so must each
slice's copy of ``r_rdy`` (``r_rdy_slices``). And the ring of registers beside them (``ring_push``,
``ring_index``) against a list model."""

import random

import pytest
from amaranth.sim import Simulator

from rtl.lib.fifo import GROUP_BITS, LutFifo, pointer_groups


def test_pointer_groups():
    assert pointer_groups(1) == 1
    assert pointer_groups(GROUP_BITS) == 1
    assert pointer_groups(GROUP_BITS + 1) == 2
    assert pointer_groups(675) == 6         # a dispatcher queue's entry: command, stamp and slot


@pytest.mark.parametrize("width,depth,groups,p_write,p_read", [
    (17, 4, 1, 0.7, 0.6),       # one memory (the serial unit's queues)
    (675, 4, 6, 0.7, 0.6),      # a dispatcher queue's shape: fills up
    (675, 6, 6, 0.5, 0.9),      # the check stage's depth (not a power of two): runs empty
    (40, 5, 3, 1.0, 1.0),       # a write and a read in every cycle they are allowed, uneven slices
])
def test_lut_fifo_against_model(width, depth, groups, p_write, p_read):
    dut = LutFifo(width, depth, groups=groups)
    rng = random.Random(f"{width}-{depth}-{groups}-{p_write}-{p_read}")

    async def bench(ctx):
        queue = []
        reads = 0
        for cycle in range(2000):
            w_rdy, r_rdy = ctx.get(dut.w_rdy), ctx.get(dut.r_rdy)
            assert w_rdy == (len(queue) < depth), cycle
            assert r_rdy == (len(queue) > 0), cycle
            assert ctx.get(dut.r_rdy_slices) == ((1 << groups) - 1 if queue else 0), cycle
            assert ctx.get(dut.level) == len(queue), cycle
            if queue:
                assert ctx.get(dut.r_data) == queue[0], cycle
            write = rng.random() < p_write
            read = rng.random() < p_read
            data = rng.getrandbits(width)
            ctx.set(dut.w_en, write)
            ctx.set(dut.w_data, data)
            ctx.set(dut.r_en, read)
            await ctx.tick()
            if read and r_rdy:
                queue.pop(0)
                reads += 1
            if write and w_rdy:
                queue.append(data)
        assert reads > 500

    _simulate(dut, bench)


def _simulate(top, bench):
    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("n", [2, 3])
def test_ring_push_against_model(n):
    """``ring_push`` / ``ring_index`` (the concurrent front end's released instructions): random pushes and pops
    on a ring of ``n`` registers, the caller moving ``head`` and ``count``; in every cycle the ``i``-th oldest
    read through ``ring_index`` equals a list model's, and a push never overwrites a live entry."""
    from amaranth import Array, Module, Signal

    from rtl.lib.fifo import ring_index, ring_push
    m = Module()
    entries = [Signal(8, name=f"e{i}") for i in range(n)]
    head, count = Signal(range(n)), Signal(range(n + 1))
    push, pop, value = Signal(), Signal(), Signal(8)
    ring_push(m, entries, head, count, push, value)
    with m.If(pop):
        m.d.sync += head.eq(ring_index(head, 1, n))
    m.d.sync += count.eq(count + push - pop)
    reads = [Signal(8, name=f"oldest{i}") for i in range(n)]
    m.d.comb += [r.eq(Array(entries)[ring_index(head, i, n)]) for i, r in enumerate(reads)]
    rng = random.Random(n)

    async def bench(ctx):
        model = []
        pops = 0
        for cycle in range(1500):
            for i, v in enumerate(model):
                assert ctx.get(reads[i]) == v, (cycle, i)
            do_pop = bool(model) and rng.random() < 0.5
            do_push = len(model) < n and rng.random() < 0.6       # (the front end releases only then)
            v = rng.getrandbits(8)
            ctx.set(push, do_push)
            ctx.set(pop, do_pop)
            ctx.set(value, v)
            await ctx.tick()
            if do_pop:
                model.pop(0)
                pops += 1
            if do_push:
                model.append(v)
        assert pops > 300

    _simulate(m, bench)
