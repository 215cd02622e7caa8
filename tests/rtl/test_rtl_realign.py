"""Realigner against a byte-level model: random offsets, lengths, data, zero lines and stalls on the input
streams (the output has no backpressure), and ``enable`` dropped at random (no word formed while it is
low); and its rate: one word per cycle, a cycle more only for a line that needs one more output word than
input words."""

import random

import pytest
from amaranth.sim import Simulator

from rtl.engines.transfer.realign import Realigner
from rtl_streams import stream_put


def _words(buf, width):
    return [int.from_bytes(bytes(buf[k:k + width]), "little") for k in range(0, len(buf), width)]


def _lines(rng, width, n, zeros):
    lines = []
    for k in range(n):
        length = rng.choice([1, 2, width - 1, width, width + 1, rng.randrange(1, 5 * width)])
        zero = zeros and rng.random() < 0.2
        payload = bytes(length) if zero else bytes(rng.randrange(256) for _ in range(length))
        lines.append((rng.randrange(width), rng.randrange(width), length, zero, rng.randrange(1 << 20),
                      rng.random() < 0.1, payload))
    return lines


#: One compiled simulator per width, reused (reset) by every test of this process: compiling a 32-byte
#: Realigner (its byte shifters) takes longer than a test simulates. Its testbenches are trampolines to
#: the current test's (``_SLOTS``).
_SIMS = {}
_SLOTS = {}
_TESTBENCHES = (("feed_lines", True), ("feed_data", True), ("drive_enable", True), ("collect", False))
# (name, background)


def _sim(width):
    if width not in _SIMS:
        dut = Realigner(width)
        sim = Simulator(dut)
        sim.add_clock(1e-8)
        for name, background in _TESTBENCHES:
            async def trampoline(ctx, name=name):
                await _SLOTS[name](ctx)
            sim.add_testbench(trampoline, background=background)
        _SIMS[width] = [dut, sim, False]
    return _SIMS[width]


def _run(width, lines, rng, stall, hold=0.0):
    """Simulate, ``enable`` low in a ``hold`` share of the cycles; returns (outputs as dicts, cycle of each
    output, cycle of each input word taken). Asserts that every word leaves ``LATENCY`` cycles after a
    cycle with ``enable`` high."""
    state = _sim(width)
    dut, sim, used = state
    n_out_total = sum(-(-(d + n) // width) for _, d, n, *_ in lines)
    outs, out_cycles, in_cycles = [], [], []
    enables = []
    hold_rng = random.Random(int(hold * 1000) + len(lines))     # (not from ``rng``: the stimulus stays as it was)

    async def drive_enable(ctx):
        while True:
            ctx.set(dut.enable, hold_rng.random() >= hold)
            await ctx.tick()

    async def feed_lines(ctx):
        for src_off, dst_off, length, zero, addr, last, _ in lines:
            await stream_put(ctx, dut.line, {"src_off": src_off, "dst_off": dst_off, "length": length,
                                             "zero": zero, "addr": addr, "last": last}, rng=rng, stall=stall)

    async def feed_data(ctx):
        for src_off, _, length, zero, *_, payload in lines:
            if zero:
                continue
            n_in = -(-(src_off + length) // width)
            buf = bytearray(rng.randrange(256) for _ in range(n_in * width))  # junk around the line
            buf[src_off:src_off + length] = payload
            for word in _words(buf, width):
                await stream_put(ctx, dut.i, word, rng=rng, stall=stall)

    async def collect(ctx):
        cycle = 0
        while len(outs) < n_out_total:
            _, _, valid, payload, iv, ir, en = await ctx.tick().sample(dut.o.valid, dut.o.payload, dut.i.valid,
                                                                       dut.i.ready, dut.enable)
            enables.append(en)
            if iv and ir:
                in_cycles.append(cycle)
                assert en, f"an input word taken while enable is low (cycle {cycle})"
            if valid:
                assert cycle >= Realigner.LATENCY and enables[cycle - Realigner.LATENCY], \
                    f"a word left {Realigner.LATENCY} cycles after a cycle with enable low (cycle {cycle})"
                outs.append({"data": int(payload.data), "be": int(payload.be), "addr": int(payload.addr),
                             "index": int(payload.index), "line_last": int(payload.line_last),
                             "last": int(payload.last)})
                out_cycles.append(cycle)
            cycle += 1
            assert cycle < 100_000, "realigner hangs"

    _SLOTS.update(feed_lines=feed_lines, feed_data=feed_data, drive_enable=drive_enable, collect=collect)
    if used:
        sim.reset()
    state[2] = True
    sim.run()
    return outs, out_cycles, in_cycles


def _check(width, lines, outs):
    outs = iter(outs)
    for src_off, dst_off, length, zero, addr, last, payload in lines:
        n_out = -(-(dst_off + length) // width)
        for index in range(n_out):
            out = next(outs)
            got = out["data"].to_bytes(width, "little")
            where = (src_off, dst_off, length, zero, index)
            for lane in range(width):
                pos = index * width + lane - dst_off
                inside = 0 <= pos < length
                assert bool(out["be"] >> lane & 1) == inside, (where, lane)
                if inside:
                    assert got[lane] == payload[pos], (where, lane)
            assert out["index"] == index, where
            assert out["addr"] == (addr + index) % (1 << 24), where
            assert bool(out["line_last"]) == (index == n_out - 1), where
            assert bool(out["last"]) == (last and index == n_out - 1), where


@pytest.mark.parametrize("width", [16, 32])
@pytest.mark.parametrize("stall", [0.0, 0.4])
def test_realigner_random_lines(width, stall):
    rng = random.Random(width * 7 + int(stall * 10))
    lines = _lines(rng, width, 60, zeros=True)
    outs, _, _ = _run(width, lines, rng, stall)
    _check(width, lines, outs)


@pytest.mark.parametrize("width", [16, 32])
@pytest.mark.parametrize("stall", [0.0, 0.4])
def test_realigner_enable(width, stall):
    """``enable`` low in a third of the cycles (the caller's write queue has no room): no input word is
    taken and no word formed (zero lines' and flush words included) while it is low, and the words are
    still exact."""
    rng = random.Random(width * 11 + int(stall * 10))
    lines = _lines(rng, width, 60, zeros=True)
    outs, _, _ = _run(width, lines, rng, stall, hold=0.35)
    _check(width, lines, outs)


@pytest.mark.parametrize("width", [16, 32])
def test_realigner_rate(width):
    """No stalls: the first line takes its first word LINE_CYCLES after it is offered; after it, the input
    is taken every cycle except the one flush cycle of each line with more output than input words, and
    every output word leaves LATENCY cycles after its last input word (so back-to-back lines have no
    bubble)."""
    rng = random.Random(width)
    lines = _lines(rng, width, 80, zeros=False)
    outs, out_cycles, in_cycles = _run(width, lines, rng, 0.0)
    _check(width, lines, outs)
    flushes = []
    for src_off, dst_off, length, *_ in lines:
        n_in, n_out = -(-(src_off + length) // width), -(-(dst_off + length) // width)
        lead = dst_off < src_off
        flushes.append(n_out + lead > n_in and not (lead and n_in == 1))
    flushes = sum(flushes[:-1])         # the last line's flush comes after its last input word
    assert in_cycles[0] == Realigner.LINE_CYCLES        # the first line, offered in cycle 0, takes its first word
    span = in_cycles[-1] - in_cycles[0] + 1
    assert span == len(in_cycles) + flushes, f"{span} cycles for {len(in_cycles)} input words, {flushes} flushes"
    assert out_cycles[-1] - in_cycles[-1] in (Realigner.LATENCY, Realigner.LATENCY + 1)   # + a flush word
