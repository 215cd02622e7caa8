"""Verilator ``--lint-only -Wall`` on the exported Verilog, with the waivers documented below.

Waived warnings (all stem from how Yosys writes Amaranth's netlist, not from design errors):

- ``UNUSEDSIGNAL``: Amaranth keeps every field of a data layout as a named wire (reserved fields,
  descriptor fields an engine does not need), and AXI inputs such as ``rid``/``bid`` are unused because
  the unit issues one ID and relies on in-order responses.
- ``UNUSEDPARAM``: none expected; listed so that a Yosys version emitting localparams stays clean.
- ``DECLFILENAME``: the file is named after the configuration, the module after the unit.
- ``WIDTHEXPAND`` / ``WIDTHTRUNC``: Yosys writes explicit-width constants into wider/narrower contexts
  (e.g. ``4'h0`` into a wider compare) whose meaning is exact under Verilog's extension rules.
- ``PROCASSINIT``: registers are declared with their reset value as initializer (``reg x = 1'h0;``)
  and assigned in ``always_ff``; that is how Amaranth states power-on values. Intended.
- ``CASEOVERLAP``: Amaranth's ``If``/``Elif`` chains become priority ``casez`` statements whose
  patterns overlap on purpose (the first match wins, as in the Python source).
- ``CMPCONST``: a compare that the byte-enable generator makes for every lane is constant for the
  last lane (``lane <= 15`` on a 4-bit operand); Yosys narrows the operand, the result is exact.
- ``UNDRIVEN``: outputs of ports that Yosys optimized away because nothing reads them (the FIFOs'
  ``level`` where unused, the second UB read port until an engine uses it). Nothing reads them.
- ``VARHIDDEN``: Yosys writes each parallel case as a Verilog ``function`` whose inputs are always named
  ``a``, ``b``, ``s``; in a module that has its own signals ``a`` / ``b`` (the elementwise lanes' operand
  ports) those function inputs shadow them. Scoping makes that exact.
- ``UNOPTFLAT``: Verilator's scheduling note on bit-level paths through wide packed signals that are
  not combinational loops at the bit level (Amaranth's own netlist check rejects real loops).

CLI: ``python -m flow.lint --config small``; exits non-zero on any other warning.
"""

import argparse
import subprocess
import sys

from rtl.config import PRESETS, preset

from flow.export import TOPLEVEL, cached_export
from flow.tools import verilator_env

WAIVED = ("UNUSEDSIGNAL", "UNUSEDPARAM", "DECLFILENAME", "WIDTHEXPAND", "WIDTHTRUNC", "PROCASSINIT",
          "CASEOVERLAP", "CMPCONST", "UNDRIVEN", "UNOPTFLAT", "VARHIDDEN")

__all__ = ["lint", "main", "WAIVED"]


def lint(config_name):
    """Lint ``VectorUnit(preset(config_name))``; returns ``(returncode, output)``. The Verilog is the
    simulators' export (``build/verilog/``, redone only when its sources changed, see ``sim.runner``)."""
    path = cached_export(preset(config_name), config_name)
    cmd = ["verilator", "--lint-only", "-Wall", *(f"-Wno-{w}" for w in WAIVED), "--top-module", TOPLEVEL,
           str(path)]
    proc = subprocess.run(cmd, env=verilator_env(), capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def main(argv=None):
    p = argparse.ArgumentParser(description="Verilator lint of the exported Verilog.")
    p.add_argument("--config", default="default", choices=sorted(PRESETS))
    args = p.parse_args(argv)
    code, out = lint(args.config)
    print(out.strip() or f"lint clean ({args.config}; waived: {', '.join(WAIVED)})")
    return code


if __name__ == "__main__":
    sys.exit(main())
