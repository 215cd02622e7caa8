"""FPMulWiden: fp16 / bf16 / fp8 operands -> fp32 product, against ``np.float32(a) * np.float32(b)``."""

import numpy as np
import pytest

from rtl.fp import BF16, FP8E4M3, FP8E5M2, FP16, FP32, FPMul, FPMulWiden

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


def _unpack32(x, rng):
    """fp32 bits -> rtl.fp.unpacked_layout(FP32) as an int: a finite non-zero value with its significand
    shifted right by a random number of its trailing zero bits (exponent raised as much: the same value,
    not normalised, as the MAC array feeds fp16 / bf16 / fp8 operands), subnormals as exponent 1."""
    sign, e, f = x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF
    nan, inf = int(e == 0xFF and f != 0), int(e == 0xFF and f == 0)
    sig, exp = (f | (1 << 23) if e else f), max(e, 1)
    if 0 < e < 0xFF and sig:
        tz = (sig & -sig).bit_length() - 1
        k = int(rng.integers(0, min(tz, 0xFE - exp) + 1)) if min(tz, 0xFE - exp) > 0 else 0
        sig, exp = sig >> k, exp + k
    return sig | exp << 24 | sign << 32 | nan << 33 | inf << 34 | int(sig == 0 and e != 0xFF) << 35


def test_unpacked_operands():
    """FPMul(FP32, unpacked=True) (the GEMV MAC array's multiplier) on fp32 specials and weighted random
    pairs given as unpacked fields, some not normalised: the packed unit's results (Amaranth sim; the
    MAC array's Verilator and exhaustive tests run it on every operand kind)."""
    sa, sb = special_pairs(FP32)
    ra, rb = random_pairs(FP32, 2000, np.random.default_rng(77))
    a, b = np.concatenate([sa, ra]), np.concatenate([sb, rb])
    rng = np.random.default_rng(78)
    ua = [_unpack32(int(x), rng) for x in a]
    ub = [_unpack32(int(x), rng) for x in b]
    got = run_unit(FPMul(FP32, 7, unpacked=True), ua, ub)
    assert_bits_equal(np.array(got, dtype=np.uint32), ref_mul(FP32, a, b), a, b, "fp32 mul, unpacked operands")
