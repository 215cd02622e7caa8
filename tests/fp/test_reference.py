"""The numpy / ml_dtypes reference equals exact arithmetic rounded once (RNE): ml_dtypes computes
bf16 / fp8 arithmetic in float32 and rounds back, numpy fp16 likewise; double rounding through a
format with >= 2p+2 bits is innocuous for + and *, and this checks it on the operand sets we use."""

import numpy as np
import pytest

from rtl.fp import BF16, FP8E4M3, FP8E5M2, FP16, FP32

from .ref import exact_op, random_pairs, ref_add, ref_mul, special_pairs
from .util import all_pairs


@pytest.mark.parametrize("fmt", [FP8E4M3, FP8E5M2], ids=str)
@pytest.mark.parametrize("op", ["add", "mul", "widen"])
def test_fp8_exhaustive(fmt, op):
    a, b = all_pairs(fmt)
    if op == "add":
        got = ref_add(fmt, a, b)
    else:
        got = ref_mul(fmt, a, b, FP32 if op == "widen" else None)
    out = FP32 if op == "widen" else None
    want = np.array([exact_op("mul" if op == "widen" else op, fmt, x, y, out) for x, y in zip(a, b)])
    assert (got == want).all()


@pytest.mark.parametrize("fmt", [FP16, BF16, FP32], ids=str)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_wide_sample(fmt, op):
    ra, rb = random_pairs(fmt, 16_000, np.random.default_rng(9))
    sa, sb = special_pairs(fmt)
    a, b = np.concatenate([ra, sa]), np.concatenate([rb, sb])
    got = (ref_add if op == "add" else ref_mul)(fmt, a, b)
    want = np.array([exact_op(op, fmt, x, y) for x, y in zip(a, b)])
    bad = np.nonzero(got != want)[0]
    assert len(bad) == 0, [(hex(a[i]), hex(b[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]
