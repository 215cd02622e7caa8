"""Number formats: bit views, canonical NaNs, and the rounded float operations every instruction uses.

All float arithmetic goes through numpy / ml_dtypes, round-to-nearest-even with subnormals:

* fp32 results: numpy ``float32`` operations (IEEE single, RNE, no flush-to-zero); a product of two narrow
  operands is formed exactly in float64 and rounded once to float32 by numpy's float64 -> float32 cast.
* fp16 / bf16 results: the operation is done in float32 and the float32 result is rounded to the narrow
  type.  float32 has p = 24 >= 2p' + 2 bits for p' = 11 (fp16) and 8 (bf16) and the same or a wider exponent
  range, so this double rounding of a single + or x is innocuous (the result equals the correctly rounded
  one).  We never cast float64 -> bf16 / fp8: ml_dtypes goes through float32 there and double-rounds.

Every NaN an arithmetic operation produces is replaced by the canonical quiet NaN of the result format
(positive sign, quiet bit set, zero payload): see ``CANONICAL_NAN``.  Copies never touch bits.
"""

import numpy as np

from rtl.isa import DType, DTYPE_BYTES


def _numpy_types():
    import ml_dtypes
    return {
        DType.INT8: np.dtype(np.int8), DType.UINT8: np.dtype(np.uint8),
        DType.INT16: np.dtype(np.int16), DType.UINT16: np.dtype(np.uint16),
        DType.INT32: np.dtype(np.int32), DType.UINT32: np.dtype(np.uint32),
        DType.FP16: np.dtype(np.float16), DType.BF16: np.dtype(ml_dtypes.bfloat16),
        DType.FP32: np.dtype(np.float32),
        DType.FP8E4M3: np.dtype(ml_dtypes.float8_e4m3fn), DType.FP8E5M2: np.dtype(ml_dtypes.float8_e5m2),
    }


class _LazyNumpyMap(dict):
    def __missing__(self, key):
        self.update(_numpy_types())
        return dict.__getitem__(self, key)


#: numpy dtype of every data type (ml_dtypes for bfloat16 and fp8).
DTYPE_NUMPY = _LazyNumpyMap()

__all__ = [
    "DTYPE_NUMPY", "FLOAT_TYPES", "INT_TYPES", "CANONICAL_NAN", "UINT_OF_SIZE", "is_float", "np_dtype", "dtype_of",
    "bits", "from_bits", "canonicalize_nan", "add", "sub", "mul", "maximum", "minimum", "widening_product",
]

FLOAT_TYPES = frozenset({DType.FP16, DType.BF16, DType.FP32, DType.FP8E4M3, DType.FP8E5M2})
INT_TYPES = frozenset(DType) - FLOAT_TYPES

#: Bit pattern of the canonical quiet NaN of each float format (sign +, quiet, payload 0).
CANONICAL_NAN = {
    DType.FP32: 0x7FC00000,
    DType.FP16: 0x7E00,
    DType.BF16: 0x7FC0,
    DType.FP8E4M3: 0x7F,   # e4m3fn has one NaN per sign: S.1111.111
    DType.FP8E5M2: 0x7E,   # S.11111.10: quiet NaN of e5m2
}

UINT_OF_SIZE = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32)}


def is_float(dt):
    return dt in FLOAT_TYPES


def np_dtype(dt):
    return DTYPE_NUMPY[dt]


def dtype_of(array):
    """The ``DType`` of a numpy array's element type."""
    for dt in DType:
        if DTYPE_NUMPY[dt] == array.dtype:
            return dt
    raise TypeError(f"numpy dtype {array.dtype} is not an ISA data type")


def bits(a):
    """The array's elements as unsigned integers of the same size (a view; bits unchanged)."""
    a = np.asarray(a)
    return a.view(UINT_OF_SIZE[a.dtype.itemsize])


def from_bits(b, dt):
    """Reinterpret unsigned integers as ``dt`` (a ``DType``)."""
    b = np.asarray(b)
    want = UINT_OF_SIZE[DTYPE_BYTES[dt]]
    return b.astype(want, copy=False).view(np_dtype(dt))


def canonicalize_nan(a, dt):
    """A copy of ``a`` (of float type ``dt``) with every NaN replaced by the canonical quiet NaN."""
    a = np.array(a, dtype=np_dtype(dt), copy=True)
    nan = np.isnan(a.astype(np.float32))
    if nan.any():
        bits(a)[nan] = CANONICAL_NAN[dt]
    return a


def _to32(a):
    return np.asarray(a).astype(np.float32)


def add(a, b, dt):
    """Elementwise a + b in type ``dt``: integers wrap, floats round to nearest even, NaN canonical."""
    with np.errstate(all="ignore"):
        if not is_float(dt):
            return (np.asarray(a, np_dtype(dt)) + np.asarray(b, np_dtype(dt))).astype(np_dtype(dt))
        if dt == DType.FP32:
            r = np.add(np.asarray(a, np.float32), np.asarray(b, np.float32))
        else:
            r = (_to32(a) + _to32(b)).astype(np_dtype(dt))
        return canonicalize_nan(r, dt)


def sub(a, b, dt):
    """Elementwise a - b in type ``dt``: integers wrap, floats round to nearest even, NaN canonical.

    For floats this is exactly ``add(a, -b)`` (IEEE: ``a - b`` is ``a + (-b)`` with one rounding; the sign
    of an exact zero follows from that, e.g. ``(+0) - (+0) = +0`` and ``(-0) - (+0) = -0``)."""
    with np.errstate(all="ignore"):
        if not is_float(dt):
            return (np.asarray(a, np_dtype(dt)) - np.asarray(b, np_dtype(dt))).astype(np_dtype(dt))
        if dt == DType.FP32:
            r = np.subtract(np.asarray(a, np.float32), np.asarray(b, np.float32))
        else:
            r = (_to32(a) - _to32(b)).astype(np_dtype(dt))
        return canonicalize_nan(r, dt)


def _extremum(a, b, dt, larger):
    a = np.asarray(a, np_dtype(dt))
    b = np.asarray(b, np_dtype(dt))
    a, b = np.broadcast_arrays(a, b)
    if not is_float(dt):
        return np.where(a >= b, a, b) if larger else np.where(a <= b, a, b)
    fa, fb = _to32(a), _to32(b)
    ba, bb = bits(a), bits(b)
    sign = 1 << (8 * a.dtype.itemsize - 1)
    pick_a = fa > fb if larger else fa < fb
    # equal values: only +0 / -0 differ in bits; max prefers +0, min prefers -0 (IEEE 754-2019 maximum /
    # minimum); otherwise the two operands have identical bits
    a_neg = (ba & sign) != 0
    pick_a |= (fa == fb) & (~a_neg if larger else a_neg)
    out = np.where(pick_a, ba, bb).astype(ba.dtype)
    nan = np.isnan(fa) | np.isnan(fb)
    out[nan] = CANONICAL_NAN[dt]
    return out.view(np_dtype(dt))


def maximum(a, b, dt):
    """Elementwise maximum in type ``dt``. Integers: signed or unsigned by type. Floats: a NaN in either
    operand gives the canonical NaN; ``max(-0, +0) = max(+0, -0) = +0``; otherwise the larger operand's bits
    unchanged (subnormals kept). Commutative."""
    return _extremum(a, b, dt, True)


def minimum(a, b, dt):
    """Elementwise minimum in type ``dt``: as :func:`maximum`, with ``min(-0, +0) = -0``. Commutative."""
    return _extremum(a, b, dt, False)


def mul(a, b, dt):
    """Elementwise a x b in type ``dt``: integers wrap, floats round to nearest even, NaN canonical."""
    with np.errstate(all="ignore"):
        if not is_float(dt):
            return (np.asarray(a, np_dtype(dt)) * np.asarray(b, np_dtype(dt))).astype(np_dtype(dt))
        if dt == DType.FP32:
            r = np.multiply(np.asarray(a, np.float32), np.asarray(b, np.float32))
        else:
            r = (_to32(a) * _to32(b)).astype(np_dtype(dt))
        return canonicalize_nan(r, dt)


def widening_product(a, b):
    """fp32 products of two float arrays of any float types (broadcasting): the exact product rounded once.

    Both operands are exact in float64 and their product is exact in float64 (at most 2 x 24 significant
    bits, exponents within float64's range), so float64 -> float32 is the single rounding.  For fp16 and
    fp8 operands the product is always representable in fp32 (no rounding at all); for bf16 it can fall
    below fp32's subnormal range or above its largest value, and then rounds like any fp32 result.
    NaN products are canonical.
    """
    with np.errstate(all="ignore"):
        p = (np.asarray(a).astype(np.float64) * np.asarray(b).astype(np.float64)).astype(np.float32)
    return canonicalize_nan(p, DType.FP32)
