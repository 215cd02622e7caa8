"""ElementwiseLanes (rtl/engines/elementwise/lanes.py, default depths, one 32-bit slot) on Verilator, bit-exact against
golden.numerics: fp16 / bf16 / fp32 ADD, SUB, MUL, MAX, MIN on every special-class pair and
N_RANDOM weighted random pairs per (type, op); every integer type x op; one stream mixing everything
with keep_a masks and valid gaps. Ops (and in the mixed stream types) change from cycle to cycle.
The exhaustive 2^32 sweeps are in test_ew_lanes_exhaustive.py (``slow``)."""

import numpy as np
import pytest

from rtl.engines.elementwise.lanes import LaneOp
from rtl.fp import BF16, FP16, FP32
from rtl.isa import DType

from .checks import assert_bits_equal
from .ew_vharness import ctrl_word, reference, run_stream
from .ref import random_pairs, special_pairs

#: random element pairs per (float type, op)
N_RANDOM = 1_000_000
FMT = {DType.FP16: FP16, DType.BF16: BF16, DType.FP32: FP32}
INT_TYPES = [DType.INT8, DType.UINT8, DType.INT16, DType.UINT16, DType.INT32, DType.UINT32]


def pack16(x):
    """Pairs of 16-bit elements -> 32-bit words (element 0 in the low half); odd length padded."""
    x = np.asarray(x, np.uint64).astype(np.uint32)
    if len(x) % 2:
        x = np.append(x, x[:1])
    return x[0::2] | x[1::2] << 16


def float_words(dtype, rng, n_random):
    """Operand words: special pairs (for 16-bit types in both element positions) + weighted random."""
    fmt = FMT[dtype]
    sa, sb = special_pairs(fmt)
    ra, rb = random_pairs(fmt, n_random, rng)
    if fmt.width == 32:
        return (np.concatenate([sa, ra]).astype(np.uint32), np.concatenate([sb, rb]).astype(np.uint32))
    sa2, sb2 = np.roll(sa, 1), np.roll(sb, 1)
    a = np.concatenate([pack16(sa), pack16(sa2[1:]), pack16(ra)])
    b = np.concatenate([pack16(sb), pack16(sb2[1:]), pack16(rb)])
    return a, b


def check_records(a, b, dtype, op, keep, what):
    got = run_stream(a, b, ctrl_word(dtype, op, keep))
    want = reference(a, b, dtype, op, keep)
    assert_bits_equal(got, want, a, b, what)


@pytest.mark.parametrize("dtype", list(FMT), ids=lambda d: d.name)
def test_float(dtype):
    """Special-class pairs + N_RANDOM weighted random pairs per op, ops interleaved at random."""
    rng = np.random.default_rng(10 + dtype.value)
    aa, bb, oo = [], [], []
    for op in LaneOp:
        a, b = float_words(dtype, rng, N_RANDOM)
        aa.append(a)
        bb.append(b)
        oo.append(np.full(len(a), op.value))
    a, b, op = np.concatenate(aa), np.concatenate(bb), np.concatenate(oo)
    p = rng.permutation(len(a))
    check_records(a[p], b[p], dtype.value, op[p], 0, dtype.name)


def test_int():
    """Every integer type x op: random words and words of extreme values, interleaved."""
    rng = np.random.default_rng(5)
    n = 20_000
    ext = np.array([0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                    0x80808080, 0x7F7F7F7F, 0x00FF00FF, 0xFF00FF00, 0x80007FFF, 0x12345678], np.uint32)
    ea, eb = (x.ravel() for x in np.meshgrid(ext, ext, indexing="ij"))
    aa, bb, dd, oo = [], [], [], []
    for dt in INT_TYPES:
        for op in LaneOp:
            a = np.concatenate([ea, rng.integers(0, 1 << 32, n, dtype=np.uint32)])
            b = np.concatenate([eb, rng.integers(0, 1 << 32, n, dtype=np.uint32)])
            aa.append(a)
            bb.append(b)
            dd.append(np.full(len(a), dt.value))
            oo.append(np.full(len(a), op.value))
    a, b, d, o = (np.concatenate(x) for x in (aa, bb, dd, oo))
    p = rng.permutation(len(a))
    check_records(a[p], b[p], d[p], o[p], 0, "int")


def test_mixed_keep_valid():
    """All types (fp8 included, results don't care) and ops mixed per cycle, random keep_a masks,
    valid with gaps (out_valid checked by the harness on every cycle)."""
    rng = np.random.default_rng(6)
    n = 500_000
    dts = np.array([d.value for d in INT_TYPES + list(FMT) + [DType.FP8E4M3, DType.FP8E5M2]])
    d = rng.choice(dts, n)
    o = rng.integers(0, 5, n)
    a = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    b = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    for dt in FMT:     # weighted float operands where the type is float
        sel = np.nonzero(d == dt.value)[0]
        fa, fb = float_words(dt, rng, 2 * len(sel))
        a[sel], b[sel] = fa[-len(sel):], fb[-len(sel):]
    keep = np.where(rng.random(n) < 0.5, 0, rng.integers(0, 16, n))
    valid = (rng.random(n) < 0.8).astype(np.uint32)
    got = run_stream(a, b, ctrl_word(d, o, keep, valid))
    want = reference(a, b, d, o, keep)
    ok = (valid == 1) & (d != DType.FP8E4M3.value) & (d != DType.FP8E5M2.value)
    assert_bits_equal(got[ok], want[ok], a[ok], b[ok], "mixed")
