"""Verilator build and drivers for the GEMV MAC array (rtl/engines/gemv/mac.py ``MacArray``), exported as top
``gemvtop`` and compiled with ``gemv_harness.cpp`` through :func:`tests.fp.vharness.build_harness` (cached
under ``build/fp/verilator/gemv<lanes>p<P>-<hash>/``, one locked build shared by pytest-xdist workers).

Every step the tests drive is a whole block of one product (tag ``real = first = final = last = 1``), so a
lane's ``fin_data`` is ``product + (-0.0)`` (the int32 product for int8), i.e. the product bit for bit,
exactly ``LATENCY = rtl.engines.gemv.mac.mac_latency(config)`` (``MacArray.PRODUCT_LATENCY + MacArray.ADD_DEPTH``) cycles
after the step; the ring steps every cycle (it flushes after every ``last``), valid gaps included. The reference is ``golden.numerics.widening_product`` (the
exact product rounded once to fp32, NaN canonical) and the exact int8 x int8 product.
"""

import functools
import os
import subprocess
import tempfile

import numpy as np
from amaranth.back import verilog

from golden import numerics
from rtl.config import preset
from rtl.engines.gemv.mac import MacArray, OperandKind, mac_latency
from rtl.isa import DType

from .vharness import ROOT, build_harness

#: The operand kinds' element types and sizes in bytes.
KIND_DTYPE = {OperandKind.FP32: DType.FP32, OperandKind.BF16: DType.BF16, OperandKind.FP16: DType.FP16,
              OperandKind.E4M3: DType.FP8E4M3, OperandKind.E5M2: DType.FP8E5M2, OperandKind.INT8: DType.INT8}
KIND_SIZE = {OperandKind.FP32: 4, OperandKind.BF16: 2, OperandKind.FP16: 2, OperandKind.E4M3: 1,
             OperandKind.E5M2: 1, OperandKind.INT8: 1}
#: tag of a step that is a block of its own: real | first << 1 | final << 2 | last << 3 (q, bank above).
TAG_ALONE = 0xF


class Harness:
    """One build: ``exe``, ``config``, ``lanes``, ``bw`` (32-bit words of B), ``latency``."""

    def __init__(self, exe, config):
        self.exe, self.config = exe, config
        self.lanes = config.gemv_lanes
        self.bw = config.ub_word_bytes // 4
        self.latency = mac_latency(config)
        info = subprocess.run([exe, "info"], capture_output=True, text=True, check=True).stdout.split()
        assert info == [f"bw={self.bw}", f"lanes={self.lanes}"], info

    def used_lanes(self, kind):
        """Lanes that get a B element of ``kind``: ``min(lanes, W / size)``."""
        return min(self.lanes, self.config.ub_word_bytes // KIND_SIZE[kind])


def build(lanes=32, partial_sums=8, cflags="-O1"):
    """Build (or reuse) the harness for ``MacArray(preset("default", gemv_lanes=lanes,
    gemv_partial_sums=partial_sums))``; returns a :class:`Harness`."""
    cfg = preset("default", gemv_lanes=lanes, gemv_partial_sums=partial_sums)
    text = verilog.convert(MacArray(cfg), name="gemvtop")
    return Harness(build_harness(f"gemv{lanes}p{partial_sums}", "gemvtop", text, "gemv_harness.cpp", cflags), cfg)


@functools.lru_cache(maxsize=None)
def default_harness():
    return build()


def ctrl_word(valid, acc_int, a_kind, b_kind, tag):
    """The harness's per-cycle control word (arrays or scalars)."""
    u = lambda x: np.asarray(x, np.uint32)
    return u(valid) | u(acc_int) << 1 | u(a_kind) << 2 | u(b_kind) << 5 | u(tag) << 8


def pack_b(elems, size, bw):
    """(steps, lanes) element bit patterns of ``size`` bytes -> (steps, bw) uint32 B words (lane j in bytes
    ``j * size ..``); lanes beyond the word are dropped, missing ones are 0."""
    elems = np.asarray(elems, np.uint64)
    n, u = elems.shape
    out = np.zeros((n, 4 * bw), np.uint8)
    by = elems.astype(f"<u{size}" if size > 1 else np.uint8).view(np.uint8).reshape(n, u * size)
    k = min(u * size, 4 * bw)
    out[:, :k] = by[:, :k]
    return out.view("<u4").reshape(n, bw)


def run_stream(h, a, b_words, ctrl, extra=None):
    """Drive records (``a``: (n,), ``b_words``: (n, bw), ``ctrl``: (n,)) one per cycle, then ``extra``
    idle cycles (default: the latency). Returns (fin words (m,), fin_data (m, lanes)) for every cycle."""
    extra = h.latency if extra is None else extra
    n = len(a)
    rec = np.concatenate([np.asarray(a, np.uint32)[:, None], np.asarray(b_words, np.uint32).reshape(n, h.bw),
                          np.broadcast_to(np.asarray(ctrl, np.uint32), (n,))[:, None]], axis=1)
    os.makedirs(os.path.join(ROOT, "build", "fp"), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.join(ROOT, "build", "fp")) as t:
        fin, fout = os.path.join(t, "in.bin"), os.path.join(t, "out.bin")
        rec.astype("<u4").tofile(fin)
        r = subprocess.run([h.exe, "stream", fin, fout, str(extra)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        out = np.fromfile(fout, dtype="<u4").reshape(n + extra, 1 + h.lanes)
    return out[:, 0], out[:, 1:]


def reference(a_kind, b_kind, a, b):
    """The golden products (uint32 bits) of element bit patterns ``a`` (of ``a_kind``) and ``b`` (of
    ``b_kind``), broadcasting: fp32 exact product rounded once, NaN canonical; int8 the int32 product."""
    if OperandKind(a_kind) == OperandKind.INT8:
        assert OperandKind(b_kind) == OperandKind.INT8
        p = np.asarray(a, np.uint64).astype(np.uint8).view(np.int8).astype(np.int32) \
            * np.asarray(b, np.uint64).astype(np.uint8).view(np.int8).astype(np.int32)
        return p.view(np.uint32)
    va = _floats(a_kind, a)
    vb = _floats(b_kind, b)
    return np.asarray(numerics.widening_product(va, vb), np.float32).view(np.uint32)


def _floats(kind, bits):
    dt = KIND_DTYPE[OperandKind(kind)]
    size = KIND_SIZE[OperandKind(kind)]
    return np.asarray(bits, np.uint64).astype(f"<u{size}" if size > 1 else np.uint8).view(numerics.np_dtype(dt))


def products(h, a_kind, b_kind, a, b, tags=None, valid=None, rng=None):
    """Products of steps through the MAC array: ``a`` (n,) element bit patterns, ``b`` (n, u) with
    u <= ``h.used_lanes(b_kind)``; every step a block of its own (``TAG_ALONE``, with ``tags``' q / bank
    bits if given). ``valid`` (n,) 0/1 inserts idle cycles where 0 (those records are not steps).
    Checks that fin_valid (and fin_q, fin_bank, fin_last) come exactly ``latency`` cycles after each step
    and never otherwise. Returns the (steps, u) uint32 fin_data of the valid steps."""
    a = np.asarray(a, np.uint64)
    b = np.asarray(b, np.uint64)
    n, u = b.shape
    assert u <= h.used_lanes(b_kind)
    acc = int(OperandKind(a_kind) == OperandKind.INT8)
    tags = np.full(n, TAG_ALONE, np.uint32) if tags is None else np.asarray(tags, np.uint32) | TAG_ALONE
    valid = np.ones(n, np.uint32) if valid is None else np.asarray(valid, np.uint32)
    words = pack_b(b, KIND_SIZE[OperandKind(b_kind)], h.bw)
    ctrl = ctrl_word(valid, acc, OperandKind(a_kind).value, OperandKind(b_kind).value, tags)
    finw, data = run_stream(h, a.astype(np.uint32), words, ctrl)
    L = h.latency
    assert not (finw[:L] & 1).any(), "fin_valid before the first step's latency"
    want = np.where(valid == 1, 1 | (tags >> 4 & 0x3F) << 1 | (tags >> 10 & 1) << 7 | 1 << 8, 0)
    got = finw[L:L + n] & np.where(valid == 1, 0x1FF, 1)
    bad = np.nonzero(got != want)[0]
    assert not len(bad), f"fin word at step {bad[0]}: got {got[bad[0]]:#x} want {want[bad[0]]:#x}"
    return data[L:L + n][valid == 1, :u]
