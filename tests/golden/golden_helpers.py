"""Shared test helpers: random tiles by bit pattern, bit views."""

import numpy as np

from rtl.isa import DType, DTYPE_BYTES
from golden.numerics import DTYPE_NUMPY

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}
ALL_TYPES = list(DType)


def ubits(a):
    a = np.asarray(a)
    return a.view(UINT[a.dtype.itemsize])


def rand_tile(rng, dt, shape):
    """Random bit patterns (so NaN payloads, -0, subnormals and infinities all occur)."""
    size = DTYPE_BYTES[dt]
    raw = rng.integers(0, 1 << (8 * size), size=shape, dtype=np.uint64).astype(UINT[size])
    return raw.view(DTYPE_NUMPY[dt])


def rand_values(rng, dt, shape, lo=-4, hi=4):
    """Random modest numbers of type dt (for arithmetic tests where overflow is not the point)."""
    if dt in (DType.INT8, DType.UINT8, DType.INT16, DType.UINT16, DType.INT32, DType.UINT32):
        info = np.iinfo(DTYPE_NUMPY[dt])
        return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=np.int64).astype(DTYPE_NUMPY[dt])
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(DTYPE_NUMPY[dt])


def same_bits(a, b):
    return np.array_equal(ubits(a), ubits(b))
