"""Verilator build and drivers for ElementwiseLanes (rtl/engines/elementwise/lanes.py): one 32-bit slot (word_bytes=4)
exported as top ``ewtop``, compiled with ``ew_harness.cpp``; the reference is golden.numerics.

Builds are cached under ``build/fp/verilator/ew-<hash>/`` like tests/fp/vharness.py (same lock scheme,
so pytest-xdist workers share one build).
"""

import functools
import os
import subprocess
import tempfile

import numpy as np
from amaranth.back import verilog

from golden import numerics
from rtl.engines.elementwise.lanes import ElementwiseLanes, LaneOp
from rtl.isa import DTYPE_BYTES, DType

from .vharness import ROOT, build_harness

W = 4
GOLDEN = {LaneOp.ADD: numerics.add, LaneOp.SUB: numerics.sub, LaneOp.MUL: numerics.mul,
          LaneOp.MAX: numerics.maximum, LaneOp.MIN: numerics.minimum}


def build(cflags="-O1", **depths):
    """Build (or reuse) the harness for ``ElementwiseLanes(4, **depths)``; returns (exe, LATENCY)."""
    dut = ElementwiseLanes(W, **depths)
    text = verilog.convert(dut, name="ewtop")
    return build_harness("ew", "ewtop", text, "ew_harness.cpp", cflags), dut.LATENCY


@functools.lru_cache(maxsize=None)
def default_exe():
    return build()


def ctrl_word(dtype, op, keep, valid=1):
    """The harness's per-record control word (arrays or scalars of dtype / op codes)."""
    return (np.asarray(dtype, np.uint32) | np.asarray(op, np.uint32) << 4
            | np.asarray(keep, np.uint32) << 8 | np.asarray(valid, np.uint32) << 12)


def run_stream(a, b, ctrl, exe=None):
    """Results (uint32 per record) of the one-slot lanes for 32-bit operand words ``a``, ``b`` and
    control words ``ctrl``; asserts out_valid on every cycle."""
    exe, lat = exe or default_exe()
    a = np.asarray(a, np.uint32)
    rec = np.stack([a, np.asarray(b, np.uint32), np.broadcast_to(np.asarray(ctrl, np.uint32), a.shape)], axis=1)
    os.makedirs(os.path.join(ROOT, "build", "fp"), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.join(ROOT, "build", "fp")) as t:
        fin, fout = os.path.join(t, "in.bin"), os.path.join(t, "out.bin")
        rec.astype("<u4").tofile(fin)
        r = subprocess.run([exe, "stream", str(lat), fin, fout], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "valid_errors=0", r.stdout
        return np.fromfile(fout, dtype="<u4")


def reference(a, b, dtype, op, keep):
    """golden.numerics result words (uint32) for records of one or many (dtype, op) combinations;
    fp8 records give 0 (don't care)."""
    a = np.asarray(a, np.uint32)
    b = np.asarray(b, np.uint32)
    dtype = np.broadcast_to(np.asarray(dtype), a.shape)
    op = np.broadcast_to(np.asarray(op), a.shape)
    out = np.zeros_like(a)
    for dt in DType:
        if dt in (DType.FP8E4M3, DType.FP8E5M2):
            continue
        for o in LaneOp:
            sel = np.nonzero((dtype == dt.value) & (op == o.value))[0]
            if not len(sel):
                continue
            npdt = numerics.np_dtype(dt)
            r = GOLDEN[o](a[sel].astype("<u4").view(npdt), b[sel].astype("<u4").view(npdt), dt)
            out[sel] = np.ascontiguousarray(np.asarray(r, npdt)).view("<u4")
    keep = np.broadcast_to(np.asarray(keep, np.uint32), a.shape)
    mask = np.zeros_like(a)
    for j in range(W):
        mask |= np.where(keep >> j & 1, np.uint32(0xFF << (8 * j)), np.uint32(0))
    return (out & ~mask) | (a & mask)


def element_size(dtype):
    return DTYPE_BYTES[dtype]
