"""golden.numerics against the independent oracle: specials, random pairs, exhaustive fp8 products."""

import itertools

import numpy as np
import pytest

from rtl.isa import DType
from golden.numerics import DTYPE_NUMPY
from golden.numerics import (CANONICAL_NAN, add, sub, mul, maximum, minimum, widening_product, bits, from_bits,
                             canonicalize_nan)

import golden_oracle as oracle

FLOAT16ish = [DType.FP16, DType.BF16, DType.FP32]


def specials(dt):
    """Bit patterns of every special class, both signs, plus rounding-sensitive values."""
    if dt == DType.FP32:
        pos = [0, 1, 0x007FFFFF, 0x00800000, 0x3F800000, 0x3F800001, 0x3FFFFFFF, 0x7F7FFFFF, 0x7F000000,
               0x7F800000, 0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x33800000, 0x34000000, 0x4B800000]
        sign = 0x80000000
    elif dt == DType.FP16:
        pos = [0, 1, 0x03FF, 0x0400, 0x3C00, 0x3C01, 0x3BFF, 0x7BFF, 0x7800, 0x7C00, 0x7E00, 0x7C01, 0x7FFF,
               0x1400, 0x1000, 0x6400]
        sign = 0x8000
    else:
        pos = [0, 1, 0x007F, 0x0080, 0x3F80, 0x3F81, 0x3FFF, 0x7F7F, 0x7F00, 0x7F80, 0x7FC0, 0x7F81, 0x7FFF,
               0x3B80, 0x3C00, 0x4380]
        sign = 0x8000
    return pos + [p | sign for p in pos]


def _arr(bitlist, dt):
    return from_bits(np.array(bitlist, dtype=np.uint64), dt)


@pytest.mark.parametrize("dt", FLOAT16ish)
def test_canonical_nan_is_a_quiet_positive_nan(dt):
    x = _arr([CANONICAL_NAN[dt]], dt)
    assert np.isnan(x.astype(np.float32))[0]
    assert not np.signbit(x.astype(np.float32))[0]


def test_canonical_nan_fp8():
    for dt in (DType.FP8E4M3, DType.FP8E5M2):
        x = from_bits(np.array([CANONICAL_NAN[dt]], np.uint8), dt)
        assert np.isnan(x.astype(np.float32))[0]
    # every NaN an operation produces is canonical; copies keep payloads
    a = _arr([0x7F800001, 0xFFC00001], DType.FP32)
    assert list(bits(canonicalize_nan(a, DType.FP32))) == [0x7FC00000, 0x7FC00000]
    assert list(bits(a)) == [0x7F800001, 0xFFC00001]


FUNCS = {"add": add, "sub": sub, "mul": mul, "max": maximum, "min": minimum}


@pytest.mark.parametrize("dt", FLOAT16ish)
@pytest.mark.parametrize("opname", list(FUNCS))
def test_specials_cross_product(dt, opname):
    sp = specials(dt)
    pairs = list(itertools.product(sp, sp))
    a = _arr([p[0] for p in pairs], dt)
    b = _arr([p[1] for p in pairs], dt)
    got = bits(FUNCS[opname](a, b, dt))
    ref = oracle.FLOAT_OPS[opname]
    for (x, y), g in zip(pairs, got):
        assert int(g) == ref(x, y, dt), f"{dt.name} {opname} {x:#x} {y:#x}: got {int(g):#x}"


@pytest.mark.parametrize("dt", FLOAT16ish)
@pytest.mark.parametrize("opname", list(FUNCS))
def test_random_pairs(dt, opname):
    rng = np.random.default_rng(1 + dt.value)
    n = 3000
    width = 32 if dt == DType.FP32 else 16
    x = rng.integers(0, 1 << width, n, dtype=np.uint64)
    # half of the pairs close in exponent, to exercise cancellation and ties
    y = rng.integers(0, 1 << width, n, dtype=np.uint64)
    y[: n // 2] = (x[: n // 2] ^ rng.integers(0, 1 << 8, n // 2, dtype=np.uint64)) ^ (1 << (width - 1))
    got = bits(FUNCS[opname](_arr(x, dt), _arr(y, dt), dt))
    ref = oracle.FLOAT_OPS[opname]
    for a, b, g in zip(x, y, got):
        assert int(g) == ref(int(a), int(b), dt), f"{dt.name} {opname} {int(a):#x} {int(b):#x}"


def test_fp8_widening_products_exhaustive():
    """Every e4m3 x e5m2 (and e4m3 x e4m3, e5m2 x e5m2) product is exact in fp32."""
    allb = np.arange(256, dtype=np.uint8)
    for at, bt in [(DType.FP8E4M3, DType.FP8E5M2), (DType.FP8E4M3, DType.FP8E4M3), (DType.FP8E5M2, DType.FP8E5M2)]:
        a = from_bits(np.repeat(allb, 256), at)
        b = from_bits(np.tile(allb, 256), bt)
        got = bits(widening_product(a, b))
        av, bv = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(all="ignore"):
            exact = av * bv
        fin = np.isfinite(exact)
        assert np.array_equal(from_bits(got, DType.FP32).astype(np.float64)[fin], exact[fin])
        assert np.all(got[np.isnan(exact)] == 0x7FC00000)
        # spot-check against the oracle
        for i in range(0, 65536, 97):
            assert int(got[i]) == oracle.fmul(int(np.repeat(allb, 256)[i]), int(np.tile(allb, 256)[i]),
                                              (at, bt), out=DType.FP32)


def test_bf16_product_rounds_to_fp32_at_the_edges():
    # 2^-133 * 2^-133 underflows fp32 to +0; -min * min -> -0; max * max -> inf; subnormal * 2^-10 rounds.
    cases = [(0x0001, 0x0001), (0x8001, 0x0001), (0x7F7F, 0x7F7F), (0x0080, 0x3A80), (0x00FF, 0x3F81),
             (0x0081, 0x3401)]
    for a, b in cases:
        got = int(bits(widening_product(_arr([a], DType.BF16), _arr([b], DType.BF16)))[0])
        assert got == oracle.fmul(a, b, (DType.BF16, DType.BF16), out=DType.FP32), hex(got)


@pytest.mark.parametrize("dt", [DType.INT8, DType.UINT8, DType.INT16, DType.UINT16, DType.INT32, DType.UINT32])
def test_integer_wrap(dt):
    info = np.iinfo(DTYPE_NUMPY[dt])
    vals = np.array([info.min, info.min + 1, -1 if info.min else 1, 0, 1, 7, info.max - 1, info.max],
                    dtype=DTYPE_NUMPY[dt])
    a, b = np.repeat(vals, len(vals)), np.tile(vals, len(vals))
    for opname, fn in FUNCS.items():
        got = fn(a, b, dt)
        assert got.dtype == DTYPE_NUMPY[dt]
        for x, y, g in zip(a, b, got):
            assert int(g) == oracle.iop(x, y, dt, opname)


def test_x_plus_minus_x_is_plus_zero_and_minus_zero_sums():
    for dt in FLOAT16ish:
        x = _arr([specials(dt)[4]], dt)
        z = add(x, -x, dt)
        assert not np.signbit(z.astype(np.float32))[0]
        nz = _arr([oracle.to_bits(-0.0, dt)], dt)
        assert np.signbit(add(nz, nz, dt).astype(np.float32))[0]


# ------------------------------------------------------------------------------------------------ sub / max / min
# hand-written expectations (bit patterns), both operand orders where the operation is not symmetric

FP32_MAXMIN = [
    # (a, b, max, min)
    (0x00000000, 0x80000000, 0x00000000, 0x80000000),       # +0, -0
    (0x80000000, 0x00000000, 0x00000000, 0x80000000),       # -0, +0
    (0x80000000, 0x80000000, 0x80000000, 0x80000000),
    (0x7F800001, 0x3F800000, 0x7FC00000, 0x7FC00000),       # signalling NaN with payload, 1.0
    (0x3F800000, 0xFFC12345, 0x7FC00000, 0x7FC00000),       # 1.0, negative quiet NaN with payload
    (0xFF800000, 0x7FFFFFFF, 0x7FC00000, 0x7FC00000),       # -inf, NaN
    (0x7FC00000, 0x7FC00000, 0x7FC00000, 0x7FC00000),
    (0x00000001, 0x00000000, 0x00000001, 0x00000000),       # smallest subnormal vs +0
    (0x80000001, 0x80000000, 0x80000000, 0x80000001),       # -smallest subnormal vs -0
    (0x80000001, 0x00000001, 0x00000001, 0x80000001),
    (0x007FFFFF, 0x00800000, 0x00800000, 0x007FFFFF),       # largest subnormal vs smallest normal
    (0x7F800000, 0x7F7FFFFF, 0x7F800000, 0x7F7FFFFF),       # +inf vs largest finite
    (0xFF800000, 0xFF7FFFFF, 0xFF7FFFFF, 0xFF800000),       # -inf vs most negative finite
    (0x7F800000, 0xFF800000, 0x7F800000, 0xFF800000),
    (0xBF800000, 0xC0000000, 0xBF800000, 0xC0000000),       # -1, -2
    (0x3F800001, 0x3F800000, 0x3F800001, 0x3F800000),       # one ulp apart
]


@pytest.mark.parametrize("a,b,mx,mn", FP32_MAXMIN, ids=[f"{a:#x},{b:#x}" for a, b, *_ in FP32_MAXMIN])
def test_fp32_max_min_hand_written(a, b, mx, mn):
    for x, y in ((a, b), (b, a)):                             # commutative, bits included
        assert int(bits(maximum(_arr([x], DType.FP32), _arr([y], DType.FP32), DType.FP32))[0]) == mx
        assert int(bits(minimum(_arr([x], DType.FP32), _arr([y], DType.FP32), DType.FP32))[0]) == mn


@pytest.mark.parametrize("dt,pz,nz,nan_in,sub1,one,inf", [
    (DType.FP16, 0x0000, 0x8000, 0x7C01, 0x0001, 0x3C00, 0x7C00),
    (DType.BF16, 0x0000, 0x8000, 0xFF81, 0x0001, 0x3F80, 0x7F80),
])
def test_narrow_max_min_hand_written(dt, pz, nz, nan_in, sub1, one, inf):
    mx = lambda x, y: int(bits(maximum(_arr([x], dt), _arr([y], dt), dt))[0])
    mn = lambda x, y: int(bits(minimum(_arr([x], dt), _arr([y], dt), dt))[0])
    assert mx(pz, nz) == mx(nz, pz) == pz
    assert mn(pz, nz) == mn(nz, pz) == nz
    assert mx(nan_in, one) == mx(one, nan_in) == mn(nan_in, one) == CANONICAL_NAN[dt]
    assert mx(sub1, pz) == sub1 and mn(sub1 | 0x8000, nz) == sub1 | 0x8000       # subnormals kept
    assert mx(inf, one) == inf and mn(inf | 0x8000, one) == inf | 0x8000


FP32_SUB = [
    # (a, b, a - b)
    (0x00000000, 0x00000000, 0x00000000),       # (+0) - (+0) = +0
    (0x80000000, 0x00000000, 0x80000000),       # (-0) - (+0) = -0
    (0x00000000, 0x80000000, 0x00000000),       # (+0) - (-0) = +0
    (0x80000000, 0x80000000, 0x00000000),       # (-0) - (-0) = +0
    (0x3F800000, 0x3F800000, 0x00000000),       # x - x = +0
    (0x7F800000, 0x7F800000, 0x7FC00000),       # inf - inf = NaN (canonical)
    (0x7F800000, 0xFF800000, 0x7F800000),       # inf - (-inf) = inf
    (0x3F800000, 0x7F800000, 0xFF800000),       # 1 - inf = -inf
    (0x7F800001, 0x3F800000, 0x7FC00000),       # NaN payload -> canonical
    (0x00000001, 0x00000002, 0x80000001),       # subnormal difference, exact
    (0x00800000, 0x00000001, 0x007FFFFF),       # normal - subnormal -> largest subnormal
    (0x4B800000, 0xBF800000, 0x4B800000),       # 2^24 - (-1) = 2^24 + 1 -> ties to even 2^24
    (0x4B800000, 0xC0000000, 0x4B800001),       # 2^24 + 2
    (0xFF7FFFFF, 0x7F7FFFFF, 0xFF800000),       # -max - max overflows to -inf
    (0x3F800000, 0x33800000, 0x3F7FFFFF),       # 1 - 2^-24 is exact (the ulp below 1 is 2^-24)
    (0x3F800000, 0x33000000, 0x3F800000),       # 1 - 2^-25: tie between 0x3F7FFFFF and 1.0 -> even (1.0)
    (0x3F800000, 0x33000001, 0x3F7FFFFF),       # just beyond the tie
]


@pytest.mark.parametrize("a,b,want", FP32_SUB, ids=[f"{a:#x}-{b:#x}" for a, b, _ in FP32_SUB])
def test_fp32_sub_hand_written(a, b, want):
    assert int(bits(sub(_arr([a], DType.FP32), _arr([b], DType.FP32), DType.FP32))[0]) == want


def test_fp16_sub_hand_written():
    f = lambda x, y: int(bits(sub(_arr([x], DType.FP16), _arr([y], DType.FP16), DType.FP16))[0])
    assert f(0x8000, 0x0000) == 0x8000 and f(0x0000, 0x0000) == 0x0000
    assert f(0x3C00, 0x4000) == 0xBC00                        # 1 - 2 = -1
    assert f(0x7BFF, 0xFBFF) == 0x7C00                        # max - (-max) = inf
    assert f(0x0001, 0x0002) == 0x8001
    assert f(0x7C00, 0x7C00) == 0x7E00


@pytest.mark.parametrize("dt,cases", [
    # (a, b, a - b, max, min) as Python ints of the type
    (DType.INT8, [(-128, 1, 127, 1, -128), (127, -1, -128, 127, -1), (-1, 0, -1, 0, -1), (5, 7, -2, 7, 5)]),
    (DType.UINT8, [(0, 1, 255, 1, 0), (255, 1, 254, 255, 1), (128, 127, 1, 128, 127), (3, 200, 59, 200, 3)]),
    (DType.INT16, [(-32768, 1, 32767, 1, -32768), (-1, 1, -2, 1, -1)]),
    (DType.UINT16, [(0, 65535, 1, 65535, 0), (32768, 32767, 1, 32768, 32767)]),
    (DType.INT32, [(-2 ** 31, 1, 2 ** 31 - 1, 1, -2 ** 31), (2 ** 31 - 1, -1, -2 ** 31, 2 ** 31 - 1, -1)]),
    (DType.UINT32, [(0, 1, 2 ** 32 - 1, 1, 0), (2 ** 31, 2 ** 31 - 1, 1, 2 ** 31, 2 ** 31 - 1)]),
])
def test_integer_sub_max_min_hand_written(dt, cases):
    npt = DTYPE_NUMPY[dt]
    for a, b, d, mx, mn in cases:
        x, y = np.array([a], npt), np.array([b], npt)
        assert int(sub(x, y, dt)[0]) == d
        assert int(maximum(x, y, dt)[0]) == int(maximum(y, x, dt)[0]) == mx
        assert int(minimum(x, y, dt)[0]) == int(minimum(y, x, dt)[0]) == mn
        assert sub(x, y, dt).dtype == maximum(x, y, dt).dtype == npt
