"""Reference results for the float units, and operand generators.

The reference for an operation in format F is numpy / ml_dtypes computing in F (``np.float16(a) +
np.float16(b)`` and the like), with every NaN replaced by F's canonical NaN. ``test_reference.py``
checks that this equals exact (Fraction) arithmetic followed by one RNE rounding, so it is the
correctly rounded result the hardware must produce.
"""

from fractions import Fraction

import numpy as np

from golden.numerics import DTYPE_NUMPY
from rtl.fp import FP32, FloatFormat, dtype_of

UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32}


def numpy_dtype(fmt):
    """numpy / ml_dtypes' dtype of a float format."""
    return DTYPE_NUMPY[dtype_of(fmt)]


def as_float(fmt, bits):
    return np.asarray(bits).astype(UINT[fmt.width]).view(numpy_dtype(fmt))


def as_bits(fmt, vals):
    vals = np.asarray(vals, dtype=numpy_dtype(fmt))
    bits = vals.view(UINT[fmt.width]).copy()
    nan = np.isnan(vals)
    bits[nan] = fmt.nan_bits
    return bits


def ref_add(fmt, a, b):
    with np.errstate(all="ignore"):
        return as_bits(fmt, as_float(fmt, a) + as_float(fmt, b))


def ref_mul(fmt, a, b, out_fmt=None):
    out_fmt = fmt if out_fmt is None else out_fmt
    with np.errstate(all="ignore"):
        if out_fmt == fmt:
            return as_bits(fmt, as_float(fmt, a) * as_float(fmt, b))
        odt = numpy_dtype(out_fmt)
        return as_bits(out_fmt, as_float(fmt, a).astype(odt) * as_float(fmt, b).astype(odt))


def ref_convert(fmt, a, out_fmt=FP32):
    with np.errstate(all="ignore"):
        return as_bits(out_fmt, as_float(fmt, a).astype(numpy_dtype(out_fmt)))


# ---- exact arithmetic (independent of numpy), used to validate the numpy reference ----------

def to_fraction(fmt: FloatFormat, bits):
    """Value of a bit pattern as a Fraction, or 'nan' / ('inf', sign)."""
    bits = int(bits)
    f, e = fmt.frac_bits, fmt.exp_bits
    sign = bits >> (f + e) & 1
    exp = bits >> f & fmt.exp_max
    frac = bits & ((1 << f) - 1)
    if fmt.finite_only:
        if exp == fmt.exp_max and frac == (1 << f) - 1:
            return "nan"
    elif exp == fmt.exp_max:
        return "nan" if frac else ("inf", sign)
    sig = frac | (1 << f) if exp else frac
    v = Fraction(sig) * Fraction(2) ** (max(exp, 1) - fmt.bias - f)
    return (-v if sign else v), sign


def round_exact(fmt: FloatFormat, v: Fraction, zero_sign=0):
    """Round an exact value to ``fmt`` (RNE, overflow to inf or to NaN for finite-only)."""
    if v == 0:
        return zero_sign << (fmt.width - 1)
    sign = 1 if v < 0 else 0
    x = -v if sign else v
    f = fmt.frac_bits
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    e = max(e, 1 - fmt.bias)
    n = x / Fraction(2) ** (e - f)
    q = n.numerator // n.denominator
    r = n - q
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and q & 1):
        q += 1
    if q == 1 << (f + 1):
        q >>= 1
        e += 1
    if q < 1 << f:
        mag = q
    else:
        mag = ((e + fmt.bias) << f) | (q - (1 << f))
    if fmt.finite_only:
        if mag > fmt.max_finite_bits:
            return fmt.nan_bits
    elif mag >= fmt.inf_bits:
        mag = fmt.inf_bits
    return (sign << (fmt.width - 1)) | mag


def exact_op(op, fmt, a, b, out_fmt=None):
    """Correctly rounded ``a op b`` ('add' or 'mul') by exact arithmetic, IEEE special rules."""
    out_fmt = fmt if out_fmt is None else out_fmt
    nan = out_fmt.nan_bits
    inf = (lambda s: nan if out_fmt.finite_only else (s << (out_fmt.width - 1)) | out_fmt.inf_bits)
    x, y = to_fraction(fmt, a), to_fraction(fmt, b)
    if x == "nan" or y == "nan":
        return nan
    if op == "add":
        if x[0] == "inf" if isinstance(x[0], str) else False:
            if isinstance(y[0], str) and y[1] != x[1]:
                return nan
            return inf(x[1])
        if isinstance(y[0], str):
            return inf(y[1])
        return round_exact(out_fmt, x[0] + y[0], zero_sign=x[1] & y[1])
    sign = x[1] ^ y[1]
    if isinstance(x[0], str) or isinstance(y[0], str):
        other = y if isinstance(x[0], str) else x
        if not isinstance(other[0], str) and other[0] == 0:
            return nan
        return inf(sign)
    return round_exact(out_fmt, x[0] * y[0], zero_sign=sign)


# ---- operand generators ------------------------------------------------------------------------

def special_values(fmt: FloatFormat):
    """One or a few representatives of every class, both signs: zero, smallest/largest subnormal,
    smallest/one/largest normal, infinity, NaNs (quiet, signalling-looking)."""
    f = fmt.frac_bits
    mags = {0, 1, (1 << f) - 1, 1 << f, (1 << f) | 1, fmt.bias << f, (fmt.bias << f) | 1,
            fmt.max_finite_bits, fmt.max_finite_bits - 1}
    if fmt.finite_only:
        mags.add(fmt.nan_bits)
    else:
        mags |= {fmt.inf_bits, fmt.inf_bits | 1, fmt.nan_bits, fmt.inf_bits | ((1 << f) - 1)}
    vals = sorted(mags | {m | 1 << (fmt.width - 1) for m in mags})
    return np.array(vals, dtype=np.uint64)


def special_pairs(fmt):
    s = special_values(fmt)
    a, b = np.meshgrid(s, s, indexing="ij")
    return a.ravel(), b.ravel()


def random_pairs(fmt, n, rng):
    """Uniform random bit patterns mixed with operands biased to cancellation, near-overflow,
    near-underflow and rounding ties (the bias matters for the wide formats, where uniform
    patterns almost never produce those cases)."""
    w, f, e = fmt.width, fmt.frac_bits, fmt.exp_bits
    top = (1 << w) - 1
    a = rng.integers(0, top + 1, n, dtype=np.uint64)
    b = rng.integers(0, top + 1, n, dtype=np.uint64)
    k = n // 8
    sel = lambda i: slice(i * k, (i + 1) * k)
    sgn = np.uint64(1 << (w - 1))
    # 1: cancellation: b = -(a with a few low bits changed), exponent equal or off by one
    s = sel(1)
    b[s] = (a[s] ^ sgn) ^ rng.integers(0, 1 << min(f, 6), k, dtype=np.uint64)
    flip = rng.random(k) < 0.3
    b[s][flip] = (b[s][flip] - (np.uint64(1) << np.uint64(f))) & np.uint64(top)
    # 2: near overflow: exponents near the top (sum / product overflow)
    s = sel(2)
    emax = fmt.max_finite_exp
    ea = rng.integers(max(emax - 3, 1), emax + 1, k, dtype=np.uint64)
    a[s] = (a[s] & np.uint64((1 << f) - 1 | (1 << (w - 1)))) | (ea << np.uint64(f))
    eb = rng.integers(max(emax - 3, 1), emax + 1, k, dtype=np.uint64)
    b[s] = (b[s] & np.uint64((1 << f) - 1 | (1 << (w - 1)))) | (eb << np.uint64(f))
    # 3: products near overflow / underflow: exponents summing near the limits
    s = sel(3)
    bias = fmt.bias
    ea = rng.integers(1, emax + 1, k).astype(np.int64)
    target = rng.integers(-bias - f - 2, -bias + 4, k) if True else None
    hi = rng.random(k) < 0.5
    target = np.where(hi, rng.integers(bias - 2, bias + 3, k), target)   # product exponent
    eb = np.clip(target - (ea - bias) + bias, 0, emax).astype(np.uint64)
    a[s] = (a[s] & np.uint64((1 << f) - 1 | (1 << (w - 1)))) | (ea.astype(np.uint64) << np.uint64(f))
    b[s] = (b[s] & np.uint64((1 << f) - 1 | (1 << (w - 1)))) | (eb << np.uint64(f))
    # 4: near underflow: tiny exponents and subnormals
    s = sel(4)
    ea = rng.integers(0, 4, k, dtype=np.uint64)
    eb = rng.integers(0, 4, k, dtype=np.uint64)
    a[s] = (a[s] & np.uint64((1 << f) - 1 | (1 << (w - 1)))) | (ea << np.uint64(f))
    b[s] = (b[s] & np.uint64((1 << f) - 1 | (1 << (w - 1)))) | (eb << np.uint64(f))
    # 5: rounding ties for add: exponent difference exactly f + 1 / f + 2 with b's significand
    #    a power of two or with few set bits; equal-exponent pairs
    s = sel(5)
    d = rng.integers(0, f + 4, k, dtype=np.uint64)
    ea = rng.integers(f + 5, emax + 1, k, dtype=np.uint64) if emax > f + 5 else \
        rng.integers(1, emax + 1, k, dtype=np.uint64)
    eb = np.where(ea > d, ea - d, np.uint64(0))
    fb = np.where(rng.random(k) < 0.5, np.uint64(0), b[s] & np.uint64(7))
    a[s] = (a[s] & np.uint64((1 << f) - 1 | (1 << (w - 1)))) | (ea << np.uint64(f))
    b[s] = (b[s] & np.uint64(1 << (w - 1))) | (eb << np.uint64(f)) | fb
    # 6: rounding ties for mul: significands with few low bits (products land on halfway points)
    s = sel(6)
    lowmask = np.uint64(~((1 << max(f - f // 2 - 1, 0)) - 1) & top)
    a[s] = a[s] & lowmask
    b[s] = b[s] & lowmask
    # 7: values near one (ordinary arithmetic), equal exponents
    s = sel(7)
    eb = (a[s] >> np.uint64(f)) & np.uint64(fmt.exp_max)
    b[s] = (b[s] & np.uint64((1 << f) - 1 | (1 << (w - 1)))) | (eb << np.uint64(f))
    return a, b
