"""FPMulWiden: fp16 / bf16 / fp8 operands -> fp32 product, against ``np.float32(a) * np.float32(b)``."""

import numpy as np
import pytest

from rtl.fp import BF16, FP8E4M3, FP8E5M2, FP16, FP32, FPMulWiden

from .amsim import run_unit
from .checks import assert_bits_equal
from .ref import random_pairs, ref_mul, special_pairs, to_fraction
from .util import all_pairs
from .vharness import run


@pytest.mark.parametrize("fmt", [FP8E4M3, FP8E5M2], ids=str)
def test_fp8_exhaustive(fmt):
    a, b = all_pairs(fmt)
    want = ref_mul(fmt, a, b, FP32)
    assert_bits_equal(run("small", "widen", fmt, 0, FP32, a=a, b=b), want, a, b, f"{fmt} widening mul")


@pytest.mark.parametrize("fmt", [FP16, BF16], ids=str)
def test_specials_and_random(fmt):
    sa, sb = special_pairs(fmt)
    ra, rb = random_pairs(fmt, 300_000, np.random.default_rng(300 + fmt.exp_bits))
    a, b = np.concatenate([sa, ra]), np.concatenate([sb, rb])
    want = ref_mul(fmt, a, b, FP32)
    assert_bits_equal(run("small", "widen", fmt, 0, FP32, a=a, b=b), want, a, b, f"{fmt} widening mul")


@pytest.mark.parametrize("fmt", [FP16, FP8E4M3, FP8E5M2], ids=str)
def test_exact(fmt):
    """For fp16 and fp8 the fp32 product is always exact: check the reference is (so the unit is)."""
    a, b = random_pairs(fmt, 3000, np.random.default_rng(5))
    got = ref_mul(fmt, a, b, FP32)
    for x, y, r in zip(a, b, got):
        fx, fy, fr = to_fraction(fmt, x), to_fraction(fmt, y), to_fraction(FP32, r)
        if isinstance(fx, str) or isinstance(fy, str) or isinstance(fx[0], str) or isinstance(fy[0], str):
            continue
        assert fr[0] == fx[0] * fy[0]


def test_bf16_out_of_fp32_range():
    # bf16 max squared overflows fp32; bf16 min subnormal squared underflows to +0
    assert run_unit(FPMulWiden(BF16), [0x7F7F, 0x0001, 0x8001], [0x7F7F, 0x0001, 0x0001]) == \
        [0x7F800000, 0x00000000, 0x80000000]


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_rejects_inexact_format():
    with pytest.raises(ValueError):
        FPMulWiden(FP32)
