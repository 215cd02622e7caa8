"""UnifiedBuffer against a word model: byte-enable writes into the two parity banks, pipelined reads
(``READ_LATENCY`` cycles) on every port returning ``data`` (word ``addr``) and ``next`` (word
``addr + 1``, wrapping to word 0), a read in the cycle of a write not transparent, a read in the cycle
after it returning the new word, both held until the next read's words arrive."""

import random

import pytest
from amaranth.sim import Simulator

from rtl.config import preset
from rtl.ub.buffer import UnifiedBuffer


def _merge(old, data, be, W):
    mask = sum(0xFF << (8 * k) for k in range(W) if be >> k & 1)
    return (old & ~mask) | (data & mask)


@pytest.mark.parametrize("preset_name,ports", [("small", 2), ("small", 1), ("small", 3), ("default", 2)])
def test_ub_banked_window(preset_name, ports):
    cfg = preset(preset_name, ub_read_ports=ports)
    W, N = cfg.ub_word_bytes, cfg.ub_words
    dut = UnifiedBuffer(cfg)
    model = [0] * N            # the simulator's memories start at zero (init=[])
    rng = random.Random(f"{preset_name}-{ports}")
    seen = set()               # (port, kind) read cases covered

    def pick(waddr):
        return rng.choice([waddr, waddr, (waddr - 1) % N, (waddr + 1) % N, 0, 1, N - 1, N - 2,
                           rng.randrange(N), rng.randrange(N)])

    def expect(a):
        return model[a], model[(a + 1) % N]

    def note(i, a):
        seen.add((i, "even" if a % 2 == 0 else "odd"))
        if a == N - 1:
            seen.add((i, "last"))
        if a == 0:
            seen.add((i, "first"))

    async def write(ctx, addr, data, be):
        ctx.set(dut.wr.addr, addr)
        ctx.set(dut.wr.data, data)
        ctx.set(dut.wr.be, be)

    L = UnifiedBuffer.READ_LATENCY
    issued = [[] for _ in dut.rd]      # per port: (tick at which its data is due, (data, next))

    def check(ctx, ticks, what):
        for i, port in enumerate(dut.rd):
            due = [w for t, w in issued[i] if t <= ticks]
            if due:         # the latest read whose data has arrived; held until the next one arrives
                got = (ctx.get(port.data), ctx.get(port.next))
                assert got == due[-1], f"{what}: port {i}: got {got}, want {due[-1]}"

    async def bench(ctx):
        # fill everything (random, full byte enables) so that every read compares non-trivial words
        for a in range(N):
            data = rng.getrandbits(8 * W)
            await write(ctx, a, data, (1 << W) - 1)
            await ctx.tick()
            model[a] = data
        ticks = 0
        for step in range(1500):
            waddr = rng.choice([rng.randrange(N), 0, N - 1])
            data = rng.getrandbits(8 * W)
            be = rng.getrandbits(W) if rng.random() < 0.8 else rng.choice([0, (1 << W) - 1])
            await write(ctx, waddr, data, be)
            # mostly a read every cycle on every port; sometimes en low for a while (other addresses,
            # writes into the very words just read): data and next keep the last read's words
            for i, port in enumerate(dut.rd):
                a = pick(waddr) if rng.random() < 0.85 else rng.choice([(waddr + 1) % N, rng.randrange(N)])
                en = rng.random() < 0.8
                ctx.set(port.addr, a)
                ctx.set(port.en, en)
                if en:      # before this cycle's write: a write and a read in one cycle is not transparent
                    issued[i].append((ticks + L, expect(a)))
                    note(i, a)
            await ctx.tick()
            ticks += 1
            model[waddr] = _merge(model[waddr], data, be, W)
            check(ctx, ticks, f"step {step}")
        # a read in the cycle after a write returns the written word
        for port in dut.rd:
            ctx.set(port.en, 0)
        for step in range(50):
            a = rng.randrange(N)
            data, be = rng.getrandbits(8 * W), rng.getrandbits(W)
            await write(ctx, a, data, be)
            await ctx.tick()
            ticks += 1
            model[a] = _merge(model[a], data, be, W)
            await write(ctx, 0, 0, 0)
            for i, port in enumerate(dut.rd):
                ctx.set(port.addr, a)
                ctx.set(port.en, 1)
                issued[i].append((ticks + L, expect(a)))
            await ctx.tick()
            ticks += 1
            for port in dut.rd:
                ctx.set(port.en, 0)
            for _ in range(L):
                await ctx.tick()
                ticks += 1
                check(ctx, ticks, f"write then read {step}")
        # read back every word through every port: the writes landed in the right bank
        ctx.set(dut.wr.be, 0)
        for a in range(N):
            for i, port in enumerate(dut.rd):
                ctx.set(port.addr, (a + i) % N)
                ctx.set(port.en, 1)
                issued[i].append((ticks + L, expect((a + i) % N)))
            await ctx.tick()
            ticks += 1
            check(ctx, ticks, f"readback {a}")

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    want = {(i, k) for i in range(ports) for k in ("even", "odd", "first", "last")}
    assert want <= seen, f"read cases not covered: {want - seen}"


def test_relax_ub_collisions_marks_only_the_ub_banks():
    """The synthesis flow's RTLIL: every read port of the UB banks is undefined on a same-cycle write,
    every other memory (the FIFOs) keeps Amaranth's read-old-data semantics."""
    import re
    from amaranth.back import rtlil
    from rtl.top import VectorUnit
    from rtl.ub.buffer import relax_ub_collisions
    cfg = preset("small", ew_lane_bytes=4, gemv_lanes=1)   # every engine, narrowest lanes: converts 2x faster
    text = relax_ub_collisions(rtlil.convert(VectorUnit(cfg), name="top", emit_src=False))
    cells = re.findall(r"cell \$memrd_v2 .*?\n  end\n", text, flags=re.S)
    ub = [c for c in cells if re.search(r'MEMID "\\\\mem_(even|odd)"', c)]
    assert len(ub) == 2 * cfg.ub_read_ports
    assert all("COLLISION_X_MASK 1'1" in c for c in ub)
    assert all("COLLISION_X_MASK 1'0" in c for c in cells if c not in ub)
