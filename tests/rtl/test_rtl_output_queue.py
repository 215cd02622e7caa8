"""rtl.lib.output_queue.OutputQueue: a fixed pipeline that issues only with ``room`` loses no word and keeps
their order whatever its consumer refuses, and an always-ready consumer sees each word in the cycle it
leaves the pipeline."""

import random

import pytest
from amaranth.sim import Simulator

from rtl.lib.contract import ContractError
from rtl.lib.output_queue import OutputQueue


def _run(depth, latency, *, want, refuse, spacing=1, n=300, seed=0):
    """A pipeline of ``latency`` stages issuing numbered words (with probability ``want`` per cycle, while
    ``room``) into the queue, a consumer refusing with probability ``refuse``. Returns the words taken,
    the cycle each arrived at ``i`` and the cycle it was taken, and the most words the queue held."""
    rng = random.Random(seed)
    dut = OutputQueue(16, depth, latency, spacing)
    taken, most = [], [0]
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def bench(ctx):
        pipe = [None] * latency            # pipe[k]: the word k + 1 cycles from arriving
        issued, cycle, arrived, last_issue = 0, 0, {}, -spacing
        while len(taken) < n:
            word = pipe[0]
            ctx.set(dut.i_valid, word is not None)
            ctx.set(dut.i_payload, word or 0)
            if word is not None:
                arrived[word] = cycle
            ready = rng.random() >= refuse
            ctx.set(dut.o.ready, ready)
            issue = (issued < n and ctx.get(dut.room) and cycle - last_issue >= spacing
                     and rng.random() < want)
            if issue:
                last_issue = cycle
            if ctx.get(dut.o.valid) and ready:
                taken.append((ctx.get(dut.o.payload), cycle))
            most[0] = max(most[0], ctx.get(dut.level))
            pipe = pipe[1:] + [issued if issue else None]
            issued += bool(issue)
            await ctx.tick()
            cycle += 1
            assert cycle < 20 * n, "the queue stopped"
        return arrived

    result = {}

    async def top(ctx):
        result["arrived"] = await bench(ctx)

    sim.add_testbench(top)
    sim.run()
    return taken, result["arrived"], most[0]


@pytest.mark.parametrize("depth,latency,spacing", [(2, 1, 1), (8, 5, 1), (16, 13, 1), (9, 8, 1), (4, 18, 8),
                                                   (3, 7, 4)])
@pytest.mark.parametrize("refuse", [0.3, 0.8])
def test_no_word_lost_or_reordered(depth, latency, spacing, refuse):
    taken, _, most = _run(depth, latency, want=0.9, refuse=refuse, spacing=spacing, seed=depth * 31 + latency)
    assert [w for w, _ in taken] == list(range(len(taken)))
    assert most <= depth
    assert most > 0                        # the consumer's refusals did fill it


@pytest.mark.parametrize("depth,latency", [(8, 5), (16, 13)])
def test_always_ready_consumer_sees_no_latency(depth, latency):
    taken, arrived, most = _run(depth, latency, want=1.0, refuse=0.0)
    assert all(cycle == arrived[w] for w, cycle in taken)
    assert most == 0
    # one word per cycle: room never fell
    assert [c for _, c in taken] == list(range(latency, latency + len(taken)))


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_depth_below_in_flight_is_a_contract_error():
    with pytest.raises(ContractError, match="latency"):
        OutputQueue(16, 4, 4)
    with pytest.raises(ContractError, match="spacing 4"):
        OutputQueue(16, 3, 9, 4)


def test_passthrough_is_a_wire():
    """``passthrough`` (``Config.ub_write_queues = False``: a consumer that never refuses): ``o`` is ``i`` in
    the same cycle, ``room`` is always high, and no FIFO is built."""
    from amaranth.hdl import Fragment
    dut = OutputQueue(16, 4, 3, passthrough=True)
    assert "fifo" not in [name for _, name, _ in Fragment.get(dut, None).subfragments]
    sim = Simulator(dut)
    seen = []

    async def bench(ctx):
        for k in range(6):
            ctx.set(dut.i_valid, k % 2)
            ctx.set(dut.i_payload, 100 + k)
            seen.append((ctx.get(dut.o.valid), ctx.get(dut.o.payload), ctx.get(dut.room)))

    sim.add_testbench(bench)
    sim.run()
    assert seen == [(k % 2, 100 + k, 1) for k in range(6)]


def test_depth_for_is_the_least_power_of_two_above_in_flight():
    assert [OutputQueue.depth_for(lat) for lat in (0, 1, 3, 7, 8, 14)] == [2, 2, 4, 8, 16, 16]
    assert OutputQueue.depth_for(21, 8) == 4        # the elementwise queue on `default` (K = 8)
    for lat, sp in ((1, 1), (8, 1), (21, 8), (14, 1)):
        OutputQueue(4, OutputQueue.depth_for(lat, sp), lat, sp)._MustUse__silence = True
