"""UbReader and UbWriter (rtl/ub/reader.py, rtl/ub/writer.py) in Amaranth's simulator.

Reader: a real UnifiedBuffer preloaded with random bytes, lines at every (source, destination) lane
pair, lengths around the word size, back to back, random backpressure; every word compared with a byte
model (data in the line's lanes, exact ``be``, ``last``). Writer: its UB port checked every cycle against
a byte model (exact ``be``; nothing outside the lines changes). Throughput: with no stall, words leave
(reader) or are written (writer) in consecutive cycles, N words in N + latency cycles.
"""

import random

import pytest
from amaranth import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from rtl.config import preset
from rtl.ub.buffer import UnifiedBuffer
from rtl.ub.reader import UbReader
from rtl.ub.writer import UbWriter
from rtl_streams import stream_put

CONFIGS = ["small", "default"]


class _ReaderDut(Elaboratable):
    def __init__(self, cfg, **kw):
        self.reader = UbReader(cfg, **kw)
        self.ub = UnifiedBuffer(cfg)

    def elaborate(self, platform):
        m = Module()
        m.submodules.reader, m.submodules.ub = self.reader, self.ub
        wiring.connect(m, self.reader.ub_rd, self.ub.rd[0])
        return m


def _lengths(rng, W):
    return rng.choice([1, 2, W - 1, W, W + 1, 2 * W - 1, 2 * W, 2 * W + 1, rng.randrange(1, 5 * W)])


def _sweep_lines(rng, cfg, count=None):
    """Lines at every (source lane, destination lane) pair (``count`` random ones instead, if given), random
    lengths; some start in the UB's first or last words so that reads wrap."""
    W, N = cfg.ub_word_bytes, cfg.ub_bytes
    pairs = [(s, d) for s in range(W) for d in range(W)]
    if count is not None:
        pairs = [(rng.randrange(W), rng.randrange(W)) for _ in range(count)]
    rng.shuffle(pairs)
    lines = []
    for src, dst in pairs:
        word = rng.choice([0, N // W - 1, rng.randrange(N // W)])
        lines.append((word * W + src, _lengths(rng, W), dst))
    return lines


async def _preload(ctx, dut, cfg, image):
    W = cfg.ub_word_bytes
    for a in range(cfg.ub_words):
        ctx.set(dut.ub.wr.addr, a)
        ctx.set(dut.ub.wr.data, int.from_bytes(image[a * W:(a + 1) * W], "little"))
        ctx.set(dut.ub.wr.be, (1 << W) - 1)
        await ctx.tick()
    ctx.set(dut.ub.wr.be, 0)


def _expect_reader(cfg, image, lines, elements=False):
    """(lanes -> byte dict, be, last) per output word of every line, from the byte model."""
    W, N = cfg.ub_word_bytes, cfg.ub_bytes
    out = []
    for line in lines:
        if elements:
            ub_addr, length, dst, esz, stride = line
            n = length >> esz
            for i in range(n):
                a = ub_addr + i * stride
                lanes = {dst + b: image[(a + b) % N] for b in range(1 << esz)}
                out.append((lanes, sum(1 << l for l in lanes), i == n - 1))
        else:
            ub_addr, length, dst = line
            n = -(-(dst + length) // W)
            for k in range(n):
                lanes = {}
                for lane in range(W):
                    j = k * W + lane - dst
                    if 0 <= j < length:
                        lanes[lane] = image[(ub_addr + j) % N]
                out.append((lanes, sum(1 << l for l in lanes), k == n - 1))
    return out


def _run_reader(cfg, lines, *, stall, seed, elements=False, depth=8):
    """Runs the reader over ``lines``; returns (received words with their cycle, cycle the first line
    was taken)."""
    W = cfg.ub_word_bytes
    rng = random.Random(seed)
    image = bytes(rng.randrange(256) for _ in range(cfg.ub_bytes))
    dut = _ReaderDut(cfg, elements=elements, depth=depth)
    r = dut.reader
    expect = _expect_reader(cfg, image, lines, elements)
    loaded = []
    got = []
    first_taken = []
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def feed(ctx):
        await _preload(ctx, dut, cfg, image)
        loaded.append(True)
        for line in lines:
            if elements:
                ub_addr, length, dst, esz, stride = line
                p = {"ub_addr": ub_addr, "length": length, "dst_off": dst, "esz": esz, "stride": stride}
            else:
                ub_addr, length, dst = line
                p = {"ub_addr": ub_addr, "length": length, "dst_off": dst}
            await stream_put(ctx, r.lines, p, rng=rng, stall=stall)

    async def watch(ctx):
        # the cycle the first line is taken (counted from the end of the preload)
        cycle = 0
        async for _, _, valid, ready in ctx.tick().sample(r.lines.valid, r.lines.ready):
            if loaded:
                if valid and ready:
                    first_taken.append(cycle)
                    return
                cycle += 1

    async def collect(ctx):
        cycle = None
        while len(got) < len(expect):
            ready = rng.random() >= stall
            ctx.set(r.words.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(r.words.valid, r.words.payload)
            if loaded:
                cycle = 0 if cycle is None else cycle + 1
                assert cycle < 50 * len(expect) + 100, f"only {len(got)} of {len(expect)} words came out"
            if valid and ready:
                got.append((cycle, payload))
        ctx.set(r.words.ready, 0)
        for _ in range(6):           # nothing more comes out
            _, _, valid = await ctx.tick().sample(r.words.valid)
            assert not valid

    sim.add_testbench(feed, background=True)
    sim.add_testbench(watch, background=True)
    sim.add_testbench(collect)
    sim.run()

    assert len(got) == len(expect)
    for n, ((_, w), (lanes, be, last)) in enumerate(zip(got, expect)):
        data = int(w.data).to_bytes(W, "little")
        assert int(w.be) == be, (n, hex(int(w.be)), hex(be))
        assert bool(w.last) == last, n
        for lane, byte in lanes.items():
            assert data[lane] == byte, (n, lane)
    return [c for c, _ in got], first_taken[0]


@pytest.mark.parametrize("config,depth", [("small", 8), ("default", 8), ("small", UbReader.MIN_DEPTH)])
def test_reader_every_alignment_back_to_back(config, depth):
    """Every (source lane, destination lane) pair, no stall: one word per cycle, no bubble anywhere
    (also with the smallest buffer)."""
    cfg = preset(config)
    rng = random.Random(f"sweep-{config}")
    lines = _sweep_lines(rng, cfg)
    cycles, taken = _run_reader(cfg, lines, stall=0.0, seed=f"rd-{config}", depth=depth)
    # first word UbReader.LATENCY cycles after its line is taken, then one word in every cycle
    assert cycles[0] == taken + UbReader.LATENCY
    assert cycles == list(range(cycles[0], cycles[0] + len(cycles)))


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("stall", [0.3, 0.7])
def test_reader_backpressure(config, stall):
    """Random stalls on the line and word streams: no word lost, duplicated or out of order."""
    cfg = preset(config)
    rng = random.Random(f"bp-{config}-{stall}")
    _run_reader(cfg, _sweep_lines(rng, cfg, count=150), stall=stall, seed=f"bp-{config}-{stall}")


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("stall", [0.0, 0.4])
def test_reader_elements(config, stall):
    """Element view: one element per word at lane ``dst_off``, contiguous (a column of a column-major
    tile) and strided (a column of a row-major tile), every element size."""
    cfg = preset(config)
    W, N = cfg.ub_word_bytes, cfg.ub_bytes
    rng = random.Random(f"el-{config}-{stall}")
    lines = []
    for _ in range(60):
        esz = rng.randrange(3)
        size = 1 << esz
        count = rng.choice([1, 2, rng.randrange(1, 20)])
        stride = rng.choice([size, size * rng.randrange(1, 300), rng.randrange(1, N)])
        dst = rng.randrange(W - size + 1)
        lines.append((rng.randrange(N), count << esz, dst, esz, stride))
    cycles, taken = _run_reader(cfg, lines, stall=stall, seed=f"el-{config}-{stall}", elements=True)
    if stall == 0.0:
        assert cycles == list(range(taken + UbReader.LATENCY, taken + UbReader.LATENCY + len(cycles)))


class _WriterBench:
    """Drives a UbWriter with lines and UB-aligned words (junk in the lanes outside each line) and keeps
    a byte model of the UB from the port, checking every write's ``be`` against the line."""

    def __init__(self, cfg, lines, *, stall, seed):
        self.cfg, self.lines, self.stall = cfg, lines, stall
        self.rng = random.Random(seed)
        self.dut = UbWriter(cfg)
        W = cfg.ub_word_bytes
        self.words = []              # (data, be expected, UB word, last)
        for ub_addr, length in lines:
            lo = ub_addr % W
            n = -(-(lo + length) // W)
            for k in range(n):
                be = sum(1 << l for l in range(W) if 0 <= k * W + l - lo < length)
                self.words.append((self.rng.getrandbits(8 * W), be, (ub_addr // W + k) % cfg.ub_words,
                                   k == n - 1))

    def run(self):
        cfg, dut, rng = self.cfg, self.dut, self.rng
        W = cfg.ub_word_bytes
        ub = bytearray(self.rng.randrange(256) for _ in range(cfg.ub_bytes))
        self.expect = bytearray(ub)
        for data, be, word, _ in self.words:
            for l in range(W):
                if be >> l & 1:
                    self.expect[word * W + l] = data >> (8 * l) & 0xFF
        self.ub = ub
        self.write_cycles, self.done_cycles = [], []
        sim = Simulator(dut)
        sim.add_clock(1e-8)
        finished = []

        async def feed_lines(ctx):
            for ub_addr, length in self.lines:
                await stream_put(ctx, dut.lines, {"ub_addr": ub_addr, "length": length},
                                 rng=rng, stall=self.stall)

        async def feed_words(ctx):
            for data, *_ in self.words:
                await stream_put(ctx, dut.words, data, rng=rng, stall=self.stall)
            finished.append(True)

        async def port(ctx):
            # the write port refuses words as often as the streams stall (the handshake of a shared port)
            ctx.set(dut.ub_wr.ready, 1)
            n, cycle = 0, 0
            async for _, _, addr, data, be, done, valid, ready in ctx.tick().sample(
                    dut.ub_wr.addr, dut.ub_wr.data, dut.ub_wr.be, dut.done, dut.ub_wr.valid, dut.ub_wr.ready):
                ctx.set(dut.ub_wr.ready, rng.random() >= self.stall)
                assert not be or valid, "byte enables without a word offered"
                if not (valid and ready):
                    assert not done, "done without the last word taken"
                    be = 0          # offered, not written
                if be:
                    assert n < len(self.words), "write beyond the last word"
                    w_data, w_be, w_word, w_last = self.words[n]
                    assert (addr, data, be) == (w_word, w_data, w_be), n
                    assert bool(done) == w_last, n
                    for l in range(W):
                        if be >> l & 1:
                            ub[addr * W + l] = data >> (8 * l) & 0xFF
                    self.write_cycles.append(cycle)
                    n += 1
                else:
                    assert not done
                if done:
                    self.done_cycles.append(cycle)
                if finished and n == len(self.words):
                    break
                cycle += 1
                assert cycle < 50 * len(self.words) + 100, f"only {n} of {len(self.words)} words written"
            for _ in range(4):       # nothing else is written
                _, _, be = await ctx.tick().sample(dut.ub_wr.be)
                assert be == 0

        sim.add_testbench(feed_lines, background=True)
        sim.add_testbench(feed_words, background=True)
        sim.add_testbench(port)
        sim.run()
        assert self.ub == self.expect
        assert len(self.done_cycles) == len(self.lines)


def _writer_lines(rng, cfg, count=None):
    W, N = cfg.ub_word_bytes, cfg.ub_bytes
    offs = list(range(W)) * 4 if count is None else [rng.randrange(W) for _ in range(count)]
    rng.shuffle(offs)
    lines = []
    for off in offs:
        word = rng.choice([0, N // W - 1, rng.randrange(N // W)])
        length = min(_lengths(rng, W), N - word * W - off)      # a line ends inside the UB
        lines.append((word * W + off, max(1, length)))
    return lines


@pytest.mark.parametrize("config", CONFIGS)
def test_writer_back_to_back(config):
    """Every lane offset, lines back to back, no stall: one word written per cycle, the first
    ``UbWriter.LINE_LATENCY`` cycles after the first line is taken, exact byte enables, ``done`` with
    each line's last word."""
    cfg = preset(config)
    rng = random.Random(f"wr-{config}")
    b = _WriterBench(cfg, _writer_lines(rng, cfg), stall=0.0, seed=f"wr-{config}")
    b.run()
    first = UbWriter.LINE_LATENCY
    assert b.write_cycles == list(range(first, first + len(b.words)))


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("stall", [0.3, 0.7])
def test_writer_stalls(config, stall):
    """Random gaps on both input streams: every word still lands once, in order, nothing else written."""
    cfg = preset(config)
    rng = random.Random(f"ws-{config}-{stall}")
    _WriterBench(cfg, _writer_lines(rng, cfg, count=120), stall=stall, seed=f"ws-{config}-{stall}").run()
