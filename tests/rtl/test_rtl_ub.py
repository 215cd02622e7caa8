"""UnifiedBuffer against a byte model: byte-enable writes, 1-cycle reads on every port, not transparent."""

import random

from amaranth.sim import Simulator

from rtl.config import preset
from rtl.ub import UnifiedBuffer


def test_ub_byte_enables_and_ports():
    cfg = preset("small")
    W = cfg.ub_word_bytes
    dut = UnifiedBuffer(cfg)
    model = {}
    rng = random.Random(1)

    async def bench(ctx):
        for _ in range(400):
            addr = rng.randrange(cfg.ub_words)
            data = rng.getrandbits(8 * W)
            be = rng.getrandbits(W) if rng.random() < 0.7 else 0
            ctx.set(dut.wr.addr, addr)
            ctx.set(dut.wr.data, data)
            ctx.set(dut.wr.be, be)
            raddrs = [rng.choice([addr, rng.randrange(cfg.ub_words)]) for _ in dut.rd]
            for port, a in zip(dut.rd, raddrs):
                ctx.set(port.addr, a)
                ctx.set(port.en, 1)
            before = {a: model.get(a, 0) for a in raddrs}
            await ctx.tick()
            for port, a in zip(dut.rd, raddrs):     # value before this cycle's write: not transparent
                assert ctx.get(port.data) == before[a], f"read of word {a}"
            old = model.get(addr, 0)
            mask = sum(0xFF << (8 * k) for k in range(W) if be >> k & 1)
            model[addr] = (old & ~mask) | (data & mask)
        ctx.set(dut.wr.be, 0)
        for a in list(model)[:50]:                  # read back, and hold while en is low
            ctx.set(dut.rd[0].addr, a)
            ctx.set(dut.rd[0].en, 1)
            await ctx.tick()
            ctx.set(dut.rd[0].en, 0)
            await ctx.tick()
            assert ctx.get(dut.rd[0].data) == model[a]

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
