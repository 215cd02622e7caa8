"""An independent per-element reference for the tests.

Exact rational arithmetic (``fractions.Fraction``) and a hand-written round-to-nearest-even onto each
format's grid, written from the IEEE-754 definition and sharing no code with ``golden``. It returns bit
patterns (Python ints) so comparisons are bit-exact.
"""

import math
from fractions import Fraction

import numpy as np

from rtl.isa import DType, DTYPE_BYTES
from golden.numerics import DTYPE_NUMPY

# (precision incl. hidden bit, emin, largest finite) of each float format
FORMATS = {
    DType.FP32: (24, -126, (2 - Fraction(1, 2 ** 23)) * 2 ** 127),
    DType.FP16: (11, -14, Fraction(65504)),
    DType.BF16: (8, -126, (2 - Fraction(1, 2 ** 7)) * 2 ** 127),
}
NAN_BITS = {DType.FP32: 0x7FC00000, DType.FP16: 0x7E00, DType.BF16: 0x7FC0}
INT_BITS = {DType.INT8: (8, True), DType.UINT8: (8, False), DType.INT16: (16, True), DType.UINT16: (16, False),
            DType.INT32: (32, True), DType.UINT32: (32, False)}


def uint(dt):
    return {1: np.uint8, 2: np.uint16, 4: np.uint32}[DTYPE_BYTES[dt]]


def to_bits(x, dt):
    return int(np.asarray([x], dtype=DTYPE_NUMPY[dt]).view(uint(dt))[0])


def from_bits(b, dt):
    return np.asarray([b], dtype=uint(dt)).view(DTYPE_NUMPY[dt])[0]


def value(b, dt):
    """('nan',) | ('inf', sign) | ('num', Fraction, sign) of a float bit pattern."""
    x = float(from_bits(b, dt))
    if math.isnan(x):
        return ("nan",)
    sign = math.copysign(1.0, x) < 0
    if math.isinf(x):
        return ("inf", sign)
    return ("num", Fraction(x), sign)


def _floor_log2(q):
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    while Fraction(2) ** (e + 1) <= q:
        e += 1
    return e


def round_exact(x, dt, sign_if_zero=False):
    """Bits of the exact rational ``x`` rounded to nearest even in format ``dt``."""
    p, emin, big = FORMATS[dt]
    neg = x < 0
    a = -x if neg else x
    if a == 0:
        return to_bits(-0.0 if sign_if_zero else 0.0, dt)
    e = max(_floor_log2(a), emin)
    q = Fraction(2) ** (e - p + 1)
    r = round(a / q) * q            # Fraction.__round__ rounds half to even
    if r > big:
        return to_bits(-np.inf if neg else np.inf, dt)
    if r == 0:
        return to_bits(-0.0 if neg else 0.0, dt)
    f = float(r)                    # exact: r is on the format's grid
    return to_bits(-f if neg else f, dt)


def fmul(a, b, dt, out=None):
    """Bits of a x b; a, b bit patterns of ``dt``; result in ``out`` (default ``dt``)."""
    out = out or dt
    va, vb = value(a, dt[0] if isinstance(dt, tuple) else dt), value(b, dt[1] if isinstance(dt, tuple) else dt)
    if va[0] == "nan" or vb[0] == "nan":
        return NAN_BITS[out]
    sign = va[-1] != vb[-1]
    if va[0] == "inf" or vb[0] == "inf":
        other = vb if va[0] == "inf" else va
        if other[0] == "num" and other[1] == 0:
            return NAN_BITS[out]
        return to_bits(-np.inf if sign else np.inf, out)
    return round_exact(va[1] * vb[1], out, sign_if_zero=sign)


def fadd(a, b, dt):
    va, vb = value(a, dt), value(b, dt)
    if va[0] == "nan" or vb[0] == "nan":
        return NAN_BITS[dt]
    if va[0] == "inf" and vb[0] == "inf":
        return NAN_BITS[dt] if va[1] != vb[1] else a
    if va[0] == "inf":
        return a
    if vb[0] == "inf":
        return b
    s = va[1] + vb[1]
    if s == 0:
        return to_bits(-0.0 if (va[2] and vb[2]) else 0.0, dt)
    return round_exact(s, dt)


SIGN_BIT = {DType.FP32: 1 << 31, DType.FP16: 1 << 15, DType.BF16: 1 << 15}


def fsub(a, b, dt):
    """Bits of a - b: IEEE subtraction is a + (-b) with one rounding (-b: b with its sign bit flipped)."""
    return fadd(a, b ^ SIGN_BIT[dt], dt)


def _order(v):
    """A sortable key of a non-NaN value: (-inf) < numbers < (+inf); zeros compare equal."""
    if v[0] == "inf":
        return (1 if not v[1] else -1, 0)
    return (0, v[1])


def fext(a, b, dt, larger):
    """Bits of max (``larger``) / min of a and b: any NaN -> canonical NaN; +0 is larger than -0; otherwise
    the chosen operand's bits."""
    va, vb = value(a, dt), value(b, dt)
    if va[0] == "nan" or vb[0] == "nan":
        return NAN_BITS[dt]
    ka, kb = _order(va), _order(vb)
    if ka == kb:
        if va[0] == "num" and va[1] == 0:              # +0 / -0 (either order)
            neg_a, neg_b = va[2], vb[2]
            if larger:
                return b if neg_a else a
            return a if neg_a else b
        assert a == b
        return a
    return a if (ka > kb) == larger else b


def fmax(a, b, dt):
    return fext(a, b, dt, True)


def fmin(a, b, dt):
    return fext(a, b, dt, False)


def iop(a, b, dt, op):
    """a op b for integers of type dt: add / sub / mul wrap; max / min compare as signed or unsigned."""
    nbits, signed = INT_BITS[dt]
    a, b = int(a), int(b)
    if op in ("max", "min"):
        return (max if op == "max" else min)(a, b)
    r = {"mul": a * b, "add": a + b, "sub": a - b}[op] % (1 << nbits)
    if signed and r >= 1 << (nbits - 1):
        r -= 1 << nbits
    return r


FLOAT_OPS = {"add": fadd, "sub": fsub, "mul": fmul, "max": fmax, "min": fmin}


def elementwise(x, y, dt, op):
    """Bits of ``x op y`` for two numpy scalars of type ``dt`` (op: add, sub, mul, max, min)."""
    if dt in FORMATS:
        return FLOAT_OPS[op](to_bits(x, dt), to_bits(y, dt), dt)
    return to_bits(iop(x, y, dt, op), dt)


def gemv_float(a_bits, b_bits, init_bits, at, bt, P):
    """fp32 GEMV per docs/semantics.md, one column: a_bits (K,), b_bits (K,), init bits (fp32)."""
    K = len(a_bits)
    prods = [fmul(a_bits[k], b_bits[k], (at, bt), out=DType.FP32) for k in range(K)]
    neg0 = to_bits(-0.0, DType.FP32)
    s = [neg0] * P
    for k in range(K):
        s[k % P] = fadd(s[k % P], prods[k], DType.FP32)
    while len(s) > 1:
        s = [fadd(s[2 * i], s[2 * i + 1], DType.FP32) for i in range(len(s) // 2)]
    return fadd(init_bits, s[0], DType.FP32)
