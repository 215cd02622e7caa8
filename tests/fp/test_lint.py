"""Every unit exports to Verilog (amaranth.back.verilog) and passes ``verilator --lint-only -Wall``.

Waived warning classes (all are properties of the Verilog Yosys writes for Amaranth designs, not
of the design; see docs/fp.md):

- ``UNUSEDSIGNAL``: Yosys keeps intermediate wires of which only some bits are read (e.g. the
  exponent field after decoding, the low bits below the sticky window), and ``en`` / ``in_valid``
  are not read by some units at depth 0 where no register exists.
- ``WIDTHEXPAND`` / ``WIDTHTRUNC``: Yosys' writer compares against constants narrower than the
  other operand and applies ``!`` to multi-bit wires; Verilog's sizing rules make these exact.
- ``PROCASSINIT``: Amaranth gives every register its reset value as an initialiser *and* assigns
  it in a process; intended.
"""

import os
import subprocess

import pytest
from amaranth.back import verilog

from rtl.fp import BF16, FP8E4M3, FP8E5M2, FP16, FP32

from .vharness import ROOT, make_unit, verilator_env

WAIVED = ("UNUSEDSIGNAL", "WIDTHEXPAND", "WIDTHTRUNC", "PROCASSINIT")

SPECS = ([("add", f, d, None) for f in (FP32, FP16, BF16, FP8E4M3, FP8E5M2) for d in (0, 3)]
         + [("mul", f, d, None) for f in (FP32, FP16, BF16, FP8E4M3, FP8E5M2) for d in (0, 3)]
         + [("widen", f, d, FP32) for f in (FP16, BF16, FP8E4M3, FP8E5M2) for d in (0, 2)]
         + [("conv", f, d, FP32) for f in (FP16, BF16, FP8E4M3, FP8E5M2) for d in (0, 2)]
         + [("conv", FP32, d, f) for f in (FP16, BF16, FP8E4M3, FP8E5M2) for d in (0, 2)])


def _id(s):
    return f"{s[0]}-{s[1]}-d{s[2]}" + (f"-{s[3]}" if s[3] else "")


@pytest.mark.parametrize("spec", SPECS, ids=_id)
def test_verilator_lint(spec, tmp_path):
    name = "fp_" + _id(spec).replace("-", "_")
    path = tmp_path / f"{name}.v"
    path.write_text(verilog.convert(make_unit(*spec), name=name))
    env, exe = verilator_env()
    r = subprocess.run([exe, "--lint-only", "-Wall", *(f"-Wno-{w}" for w in WAIVED), str(path)],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "%Warning" not in r.stderr + r.stdout, r.stderr[-3000:]
