"""Realigner against a byte-level model: random offsets, lengths, data and stalls on every stream."""

import random

import pytest
from amaranth.sim import Simulator

from rtl.realign import Realigner
from rtl_streams import stream_get, stream_put


def _words(buf, width):
    return [int.from_bytes(bytes(buf[k:k + width]), "little") for k in range(0, len(buf), width)]


@pytest.mark.parametrize("width", [16, 32])
@pytest.mark.parametrize("stall", [0.0, 0.4])
def test_realigner_random_lines(width, stall):
    rng = random.Random(width * 7 + int(stall * 10))
    lines = []
    for _ in range(40):
        length = rng.choice([1, 2, width - 1, width, width + 1, rng.randrange(1, 5 * width)])
        lines.append((rng.randrange(width), rng.randrange(width), length,
                      bytes(rng.randrange(256) for _ in range(length))))
    dut = Realigner(width)
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def feed_lines(ctx):
        for src_off, dst_off, length, _ in lines:
            await stream_put(ctx, dut.line, {"src_off": src_off, "dst_off": dst_off, "length": length},
                             rng=rng, stall=stall)

    async def feed_data(ctx):
        for src_off, _, length, payload in lines:
            n_in = -(-(src_off + length) // width)
            buf = bytearray(rng.randrange(256) for _ in range(n_in * width))  # junk around the line
            buf[src_off:src_off + length] = payload
            for word in _words(buf, width):
                await stream_put(ctx, dut.i, word, rng=rng, stall=stall)

    async def check(ctx):
        for src_off, dst_off, length, payload in lines:
            n_out = -(-(dst_off + length) // width)
            for index in range(n_out):
                out = await stream_get(ctx, dut.o, rng=rng, stall=stall)
                lo, hi = index * width, (index + 1) * width
                got = out.data.to_bytes(width, "little") if isinstance(out.data, int) else \
                    int(out.data).to_bytes(width, "little")
                be = int(out.be)
                for lane in range(width):
                    pos = lo + lane - dst_off
                    inside = 0 <= pos < length
                    assert bool(be >> lane & 1) == inside, (src_off, dst_off, length, index, lane)
                    if inside:
                        assert got[lane] == payload[pos], (src_off, dst_off, length, index, lane)
                assert int(out.index) == index
                assert bool(out.line_last) == (index == n_out - 1)

    sim.add_testbench(feed_lines, background=True)
    sim.add_testbench(feed_data, background=True)
    sim.add_testbench(check)
    sim.run()
