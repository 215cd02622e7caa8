"""The hardware footprint (rtl/frontend/footprint.py) against golden.access, command by command.

Commands: ``rtl_footprints.legal_commands`` (dense random programs' instructions and variants: column-major
tiles, empty valid regions), in ``small`` and ``default``. The footprint is fed a new command
every cycle (it is a pipeline) and must give, ``Footprint.LATENCY`` cycles later, exactly the ranges of
``golden.access`` (UB reads, the UB write, the GM read or write; the UB's in units of ``UB_GRAIN``).
"""

import pytest
from amaranth.sim import Simulator
from rtl_footprints import legal_commands

from golden.access import access
from rtl.config import preset
from rtl.frontend.footprint import Footprint, ub_units
from rtl.isa import INSTRUCTIONS, Command, Layout, Opcode, TILE_SLOTS, encode


def expected(cmd):
    """golden.access's ranges as the footprint's fields give them: (sorted UB reads, UB writes, GM reads,
    GM writes), the UB's in units of ``UB_GRAIN`` (``ub_units``: the end rounded up)."""
    a = access(cmd)
    return (sorted(ub_units(*r) for r in a.ub_reads), [ub_units(*r) for r in a.ub_writes], list(a.gm_reads),
            list(a.gm_writes))


def observed(ctx, fp):
    ub = [(ctx.get(fp.ub[k].lo), ctx.get(fp.ub[k].hi)) for k in range(len(TILE_SLOTS)) if ctx.get(fp.ub[k].valid)]
    ub_w = [(ctx.get(fp.ub[0].lo), ctx.get(fp.ub[0].hi))] if ctx.get(fp.ub_write) and ctx.get(fp.ub[0].valid) else []
    gm = [(ctx.get(fp.gm.lo), ctx.get(fp.gm.hi))] if ctx.get(fp.gm.valid) else []
    gm_w = bool(ctx.get(fp.gm_write))
    return sorted(ub), ub_w, [] if gm_w else gm, gm if gm_w else []


@pytest.mark.parametrize("config_name", ["small", "default"])
def test_footprint_matches_golden_access(config_name):
    cmds = legal_commands(config_name, programs=30)
    ops = {c["opcode"] for c in cmds}
    assert ops == set(Opcode) - {Opcode.TSYNC}, set(Opcode) - ops     # every instruction with operands
    assert any(c[s.name]["layout"] == Layout.COL_MAJOR for c in cmds for s in INSTRUCTIONS[c["opcode"]].slots)
    assert any(len(expected(c)[0]) < len(INSTRUCTIONS[c["opcode"]].slots) for c in cmds)    # an empty region
    dut = Footprint(preset(config_name))
    mismatches = []

    async def bench(ctx):
        for i in range(len(cmds) + Footprint.LATENCY):
            if i < len(cmds):
                ctx.set(dut.cmd.as_value(), encode(Command, cmds[i]))
            await ctx.tick()
            k = i + 1 - Footprint.LATENCY
            if 0 <= k < len(cmds):
                got, want = observed(ctx, dut.footprint), expected(cmds[k])
                if got != want:
                    mismatches.append((cmds[k], got, want))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, f"{len(mismatches)} of {len(cmds)}; first: {mismatches[0]}"
