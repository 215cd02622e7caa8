"""FloatFormat presets against numpy / ml_dtypes."""

import ml_dtypes
import numpy as np
import pytest

from rtl.fp import FORMATS, format_of
from golden.numerics import DTYPE_NUMPY
from rtl.isa import DType

from .ref import as_float, numpy_dtype


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_preset_matches_numpy(name):
    fmt = FORMATS[name]
    dt = numpy_dtype(fmt)
    fi = ml_dtypes.finfo(dt)
    assert fmt.width == dt.itemsize * 8
    assert fmt.frac_bits == fi.nmant
    assert float(as_float(fmt, [fmt.max_finite_bits])[0]) == float(fi.max)
    assert float(as_float(fmt, [1])[0]) == float(fi.smallest_subnormal)
    assert float(as_float(fmt, [1 << fmt.frac_bits])[0]) == float(fi.smallest_normal)
    assert np.isnan(as_float(fmt, [fmt.nan_bits])[0])
    if fmt.finite_only:
        assert fmt.inf_bits is None
        # every other all-ones-exponent pattern is a finite number
        v = as_float(fmt, [fmt.exp_max << fmt.frac_bits | k for k in range((1 << fmt.frac_bits) - 1)])
        assert np.isfinite(v.astype(np.float32)).all()
    else:
        assert np.isposinf(as_float(fmt, [fmt.inf_bits])[0].astype(np.float32))


def test_canonical_nans():
    assert {n: f.nan_bits for n, f in FORMATS.items()} == {
        "fp32": 0x7FC00000, "fp16": 0x7E00, "bf16": 0x7FC0, "fp8e5m2": 0x7E, "fp8e4m3": 0x7F}


@pytest.mark.parametrize("dtype", [DType.FP32, DType.FP16, DType.BF16, DType.FP8E4M3, DType.FP8E5M2])
def test_format_of_dtype(dtype):
    assert numpy_dtype(format_of(dtype)) == DTYPE_NUMPY[dtype]


def test_format_of_rejects_integers():
    with pytest.raises(ValueError):
        format_of(DType.INT8)
